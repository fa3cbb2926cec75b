"""Document 000, Figure 1: the histogram of the time between a SYN and its duplicate."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: The x axis reaches at least this far (the paper's figure: 25 s) and at most the longest
#: gap Linux's default SYN retries make (1+2+…+64 s), rounded up.
AXIS_MIN_S, AXIS_MAX_S = 25.0, 130.0


@dataclass(frozen=True)
class Drawn:
    """A histogram written: where, how far its axis reaches, how many gaps lie beyond it
    (not drawn: the caller says so in words)."""

    path: Path
    max_s: float
    gaps: int
    beyond: int


def duplicate_gap_histogram(table: pa.Table, path: Path, *, kind: str = "syn") -> Drawn:
    """Draws the gaps of duplicate SYNs (or SYN/ACKs with ``kind="synack"``), with the
    RFC 6298 (1, 2, 4 … s) and RFC 2988 (3, 6, 12 … s) ladders marked. The axis reaches
    past the longest gap (up to `AXIS_MAX_S`); the title counts any beyond it. With no
    gap at all the figure says so in words, not with an empty axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gaps = pc.list_flatten(table.column(f"{kind}_gaps_s")).to_numpy(zero_copy_only=False).astype(float)
    label = "SYN" if kind == "syn" else "SYN/ACK"
    longest = float(gaps.max()) if gaps.size else 0.0
    max_s = min(max(AXIS_MIN_S, math.ceil(longest) + 1.0), AXIS_MAX_S)
    beyond = int((gaps > max_s).sum())
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110, layout="constrained")
    title = f"Duplicate {label}s: {len(gaps):,} gaps (document 000, Figure 1)"
    if not gaps.size:
        ax.text(0.5, 0.5, f"No {label} was sent again: no gap to draw.", ha="center", va="center",
                transform=ax.transAxes, fontsize=12)
        ax.set_xticks([])
        ax.set_yticks([])
    else:
        bins = np.arange(0.0, max_s + 0.1, 0.1)
        ax.hist(gaps[gaps <= max_s], bins=bins.tolist(), color="#3b6ea8")
        for step in (1, 2, 4, 8, 16, 32, 64):
            if step <= max_s:
                ax.axvline(step, color="#2a9d8f", lw=0.8, ls="--")
        for step in (3, 6, 12, 24, 48, 96):
            if step <= max_s:
                ax.axvline(step, color="#e76f51", lw=0.8, ls=":")
        ax.plot([], [], color="#2a9d8f", ls="--", label="RFC 6298 ladder (1, 2, 4 … s)")
        ax.plot([], [], color="#e76f51", ls=":", label="RFC 2988 ladder (3, 6, 12 … s)")
        ax.set_xlim(0, max_s)
        ax.set_xlabel(f"time between a {label} and its duplicate (s)")
        ax.set_ylabel("duplicates")
        ax.legend(loc="upper right")
        if beyond:
            title += f"; {beyond:,} longer than {max_s:g} s not drawn (longest {longest:.1f} s)"
    ax.set_title(title, fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return Drawn(path=path, max_s=max_s, gaps=int(gaps.size), beyond=beyond)
