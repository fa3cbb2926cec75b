"""A connection's Stevens time-sequence graph: sequence numbers of data sent against
time, the ACK line, SACK blocks, retransmissions marked by class, and long gaps labelled
with the cause the analyzer gave them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shortflow import _core
from shortflow.exceptions import TraceReadError

#: Colour and label of each retransmission class (the analyzer's event names).
RETX_STYLE = {
    "retx_timeout": ("#d62828", "retransmission after timeout"),
    "retx_fast": ("#f77f00", "fast retransmission"),
    "tlp": ("#7b2cbf", "tail loss probe"),
    "retx_path_mtu": ("#1d6fa5", "resent smaller for the path's MTU"),
    "retx_unprompted": ("#6c757d", "resent before anything could ask"),
}

CAUSE_LABEL = {
    "handshake": "handshake loss",
    "slow_start": "slow-start round",
    "receive_window": "receive window",
    "timeout": "timeout",
    "fast_retransmit": "fast retransmit",
    "tlp": "tail loss probe",
    "delayed_ack": "delayed ACK",
    "zero_window": "zero window",
    "application": "think time",
    "idle": "idle",
    "teardown": "teardown",
}


def packets(trace: str | Path, conn_ids: list[int], *, errors: list[str] | None = None) -> dict[int, dict[str, list[Any]]]:
    """The packets of each connection in `conn_ids`, as lists per field. A trace cut short
    or damaged part-way gives the packets before the bad byte: its error (file and byte
    offset) is appended to `errors`, or raised as `TraceReadError` when no list is given."""
    raw, error = _core.connection_packets(Path(trace), list(conn_ids))
    if error is not None:
        if errors is None:
            raise TraceReadError(error)
        errors.append(error)
    out: dict[int, dict[str, list[Any]]] = {i: {k: [] for k in raw} for i in conn_ids}
    for row in range(len(raw["ts_ns"])):
        d = out[raw["conn_id"][row]]
        for k, v in raw.items():
            d[k].append(v[row])
    return out


def draw(pk: dict[str, list[Any]], path: Path, *, title: str = "", server_data: bool = True) -> Path:
    """Draws one connection's time-sequence graph (server → client data by default) to
    `path` (PNG or SVG by its suffix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not pk["ts_ns"]:
        raise ValueError("the connection has no packets")
    t0 = pk["ts_ns"][0]
    sender_is_client = not server_data
    data = [i for i in range(len(pk["ts_ns"])) if pk["from_client"][i] == sender_is_client]
    acks = [i for i in range(len(pk["ts_ns"])) if pk["from_client"][i] != sender_is_client and pk["flags"][i] & 0x10]
    # Sequence numbers relative to the sender's first one (SYN or first segment).
    base = pk["seq"][data[0]] if data else 0
    syn = next((i for i in data if pk["flags"][i] & 0x02), None)
    if syn is not None:
        base = pk["seq"][syn] + 1

    def rel(x: int) -> int:
        return (x - base) % (1 << 32) if ((x - base) % (1 << 32)) < (1 << 31) else (x - base) % (1 << 32) - (1 << 32)

    fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
    seen = set()
    for i in data:
        t = (pk["ts_ns"][i] - t0) / 1e6
        lo, hi = rel(pk["seq"][i]), rel(pk["seq"][i]) + pk["len"][i]
        ev = pk["event"][i]
        colour, label = RETX_STYLE.get(ev, ("#1d3557", "data"))
        if pk["len"][i] == 0:
            continue
        ax.plot([t, t], [lo, hi], color=colour, lw=2 if ev in RETX_STYLE else 1.2, label=None if label in seen else label)
        seen.add(label)
    if acks:
        ts = [(pk["ts_ns"][i] - t0) / 1e6 for i in acks]
        ys = [rel(pk["ack"][i]) for i in acks]
        ax.step(ts, ys, where="post", color="#2a9d8f", lw=1, label="ACK")
        for i in acks:
            for left, right in pk["sack"][i]:
                t = (pk["ts_ns"][i] - t0) / 1e6
                ax.plot([t, t], [rel(left), rel(right)], color="#90be6d", lw=3, alpha=0.7,
                        label=None if "SACK" in seen else "SACK block")
                seen.add("SACK")
    # Label the longest gaps with the cause the analyzer gave them.
    times = pk["ts_ns"]
    duration = max(times[-1] - t0, 1)
    for i in range(1, len(times)):
        gap = times[i] - times[i - 1]
        cause = pk["cause"][i]
        if gap > 0.08 * duration and cause in CAUSE_LABEL:
            mid = ((times[i - 1] + times[i]) / 2 - t0) / 1e6
            ax.axvspan((times[i - 1] - t0) / 1e6, (times[i] - t0) / 1e6, color="#ffd166", alpha=0.25)
            ax.annotate(f"{CAUSE_LABEL[cause]}\n{gap / 1e6:.0f} ms", (mid, ax.get_ylim()[1]), ha="center", va="top", fontsize=8)
    ax.set_xlabel("time since the connection's first packet (ms)")
    ax.set_ylabel(f"{'server' if server_data else 'client'} sequence offset (bytes)")
    ax.set_title(title or "time-sequence graph")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
