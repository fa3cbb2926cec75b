"""Document 000, Figure 1: the histogram of the time between a SYN and its duplicate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def duplicate_gap_histogram(table: pa.Table, path: Path, *, kind: str = "syn", max_s: float = 25.0) -> Path:
    """Draws the gaps of duplicate SYNs (or SYN/ACKs with ``kind="synack"``), with the
    RFC 6298 (1, 2, 4 … s) and RFC 2988 (3, 6, 12 … s) ladders marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gaps = pc.list_flatten(table.column(f"{kind}_gaps_s")).to_numpy(zero_copy_only=False)
    label = "SYN" if kind == "syn" else "SYN/ACK"
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    bins = np.arange(0.0, max_s + 0.1, 0.1)
    ax.hist(np.clip(gaps, 0, max_s), bins=bins.tolist(), color="#3b6ea8")
    for step in (1, 2, 4, 8, 16):
        ax.axvline(step, color="#2a9d8f", lw=0.8, ls="--")
    for step in (3, 6, 12, 24):
        ax.axvline(step, color="#e76f51", lw=0.8, ls=":")
    ax.plot([], [], color="#2a9d8f", ls="--", label="RFC 6298 ladder (1, 2, 4 … s)")
    ax.plot([], [], color="#e76f51", ls=":", label="RFC 2988 ladder (3, 6, 12 … s)")
    ax.set_xlabel(f"time between a {label} and its duplicate (s)")
    ax.set_ylabel("duplicates")
    ax.set_title(f"Duplicate {label}s: {len(gaps)} gaps (document 000, Figure 1)")
    ax.legend(loc="upper right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
