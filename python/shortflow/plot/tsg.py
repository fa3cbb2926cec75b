"""A connection's Stevens time-sequence graph: sequence numbers of data sent against
time, the ACK line and the receive window above it, SACK blocks and duplicate ACKs,
SYN/FIN/RST, retransmissions marked by class, and long gaps labelled with the cause the
analyzer gave them.

Every mark carries an SVG id naming its class (``retx_timeout-<µs>-<k>``, ``dupack-…``,
``syn-…``: the time in µs since the connection's first packet, the packet's index) and every legend entry
its class (``legend-retx_timeout``), so that what an SVG shows can be read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shortflow import _core, tcp
from shortflow.exceptions import TraceReadError
from shortflow.units import format_seconds

#: Colour and label of each retransmission class (the analyzer's event names).
RETX_STYLE = {
    "retx_timeout": ("#d62828", "retransmission after timeout"),
    "retx_fast": ("#f77f00", "fast retransmission"),
    "tlp": ("#7b2cbf", "tail loss probe"),
    "retx_path_mtu": ("#1d6fa5", "resent smaller for the path's MTU"),
    "retx_unprompted": ("#6c757d", "resent before anything could ask"),
}

#: Colour and label of every other class of mark.
MARK_STYLE = {
    "data": ("#1d3557", "data"),
    "ack": ("#2a9d8f", "ACK"),
    "rwin": ("#8d99ae", "receive window (ACK + advertised window)"),
    "sack": ("#90be6d", "SACK block"),
    "dupack": ("#e63946", "duplicate ACK"),
    "syn": ("#006d77", "SYN"),
    "fin": ("#3a86ff", "FIN"),
    "rst": ("#000000", "RST"),
}

#: Each cause's label on a gap it took (the path's own time has none), as the core names them.
CAUSE_LABEL: dict[str, str] = dict(_core.CAUSE_LABELS)


def packets(trace: str | Path, conn_ids: list[int], *, errors: list[str] | None = None,
            filter_expr: str | None = None, idle_timeout_s: float | None = None,
            close_linger_s: float | None = None,
            time_range_s: tuple[float | None, float | None] = (None, None)) -> dict[int, dict[str, Any]]:
    """The packets a graph draws of each connection in `conn_ids`, as lists per field (and
    ``endpoints``: [(client ip, port), (server ip, port)]; ``packets_seen``: its packets in
    `time_range_s`; ``thinned``: whether there were too many to draw each, and those of each
    kind first, last, lowest and highest in each time column were kept); with the filter and
    the timeouts the analysis had (they decide the ids). A trace cut short or damaged
    part-way gives the packets before the bad byte: its error (file and byte offset) is
    appended to `errors`, or raised as `TraceReadError` when no list is given."""
    lo_s, hi_s = time_range_s
    raw, ends, seen, error = _core.connection_packets(Path(trace), list(conn_ids), filter=filter_expr,
                                                      idle_timeout_s=idle_timeout_s, close_linger_s=close_linger_s,
                                                      from_s=lo_s, to_s=hi_s)
    if error is not None:
        if errors is None:
            raise TraceReadError(error)
        errors.append(error)
    out: dict[int, dict[str, Any]] = {i: {k: [] for k in raw} for i in conn_ids}
    for row in range(len(raw["ts_ns"])):
        d = out[raw["conn_id"][row]]
        for k, v in raw.items():
            d[k].append(v[row])
    for i, (client, server) in ends.items():
        out[i]["endpoints"] = [client, server]
    for i, d in out.items():
        d["packets_seen"], d["thinned"] = seen.get(i, (0, False))
    return out


def four_tuple(pk: dict[str, Any]) -> str:
    """``client:port → server:port`` of a connection from `packets` ('' if unknown)."""
    from shortflow.worst import endpoint

    if "endpoints" not in pk:
        return ""
    (cip, cport), (sip, sport) = pk["endpoints"]
    return f"{endpoint(cip, cport)} → {endpoint(sip, sport)}"


def window_shifts(pk: dict[str, Any]) -> tuple[int, int]:
    """The window scale shifts (client, server) in force after the handshake: each side's
    SYN option, when both SYNs carried one (RFC 7323), else none."""
    client = next((w for w, c, f in zip(pk["wscale"], pk["from_client"], pk["flags"]) if c and f & tcp.SYN), None)
    server = next((w for w, c, f in zip(pk["wscale"], pk["from_client"], pk["flags"]) if not c and f & tcp.SYN), None)
    if client is None or server is None:
        return 0, 0
    return min(client, 14), min(server, 14)


def draw(pk: dict[str, Any], path: Path, *, title: str = "", server_data: bool = True,
         time_range_s: tuple[float | None, float | None] = (None, None)) -> Path:
    """Draws one connection's time-sequence graph (server → client data by default) to
    `path` (PNG or SVG by its suffix); `time_range_s` zooms to (from, to) seconds since
    the connection's first packet."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not pk["ts_ns"]:
        raise ValueError("the connection has no packets")
    n = len(pk["ts_ns"])
    t0 = pk["ts_ns"][0]
    sender_is_client = not server_data
    data = [i for i in range(n) if pk["from_client"][i] == sender_is_client]
    acks = [i for i in range(n) if pk["from_client"][i] != sender_is_client and pk["flags"][i] & tcp.ACK]
    # Sequence numbers relative to the sender's first one (SYN or first segment).
    base = pk["seq"][data[0]] if data else 0
    syn = next((i for i in data if pk["flags"][i] & tcp.SYN), None)
    if syn is not None:
        base = pk["seq"][syn] + 1

    def rel(x: int) -> int:
        d = (x - base) % (1 << 32)
        return d if d < (1 << 31) else d - (1 << 32)

    def ms(i: int) -> float:
        return float(pk["ts_ns"][i] - t0) / 1e6

    def mark_id(cls: str, i: int) -> str:
        # Class, µs since the first packet, and the packet's index (ids are unique).
        return f"{cls}-{(pk['ts_ns'][i] - t0) // 1000}-{i}"

    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "shortflow"}):
        # Constrained layout keeps the legend beside the axes inside the figure.
        fig, ax = plt.subplots(figsize=(10, 5), dpi=110, layout="constrained")
        legend: dict[str, Any] = {}

        def line(cls: str, i: int, xs: list[float], ys: list[float], style: tuple[str, str], **kw: Any) -> None:
            (artist,) = ax.plot(xs, ys, color=style[0], **kw)
            artist.set_gid(mark_id(cls, i))
            legend.setdefault(cls, (artist, style[1]))

        for i in data:
            if pk["len"][i] == 0:
                continue
            lo, hi = rel(pk["seq"][i]), rel(pk["seq"][i]) + pk["len"][i]
            ev = pk["event"][i]
            cls = ev if ev in RETX_STYLE else "data"
            style = RETX_STYLE.get(ev, MARK_STYLE["data"])
            line(cls, i, [ms(i), ms(i)], [lo, hi], style, lw=2 if cls != "data" else 1.2)
        shift_client, shift_server = window_shifts(pk)
        receiver_shift = shift_client if server_data else shift_server
        # The ACK line and the window's right edge it allows, from the receiver's ACKs.
        if acks:
            ts = [ms(i) for i in acks]
            ys = [rel(pk["ack"][i]) for i in acks]
            (ack_line,) = ax.step(ts, ys, where="post", color=MARK_STYLE["ack"][0], lw=1)
            ack_line.set_gid("ack-line")
            legend["ack"] = (ack_line, MARK_STYLE["ack"][1])
            # A SYN's window is never scaled (RFC 7323 2.2).
            edge = [rel(pk["ack"][i]) + (pk["window"][i] << (0 if pk["flags"][i] & tcp.SYN else receiver_shift))
                    for i in acks]
            (rwin,) = ax.step(ts, edge, where="post", color=MARK_STYLE["rwin"][0], lw=1, ls="--")
            rwin.set_gid("rwin-line")
            legend["rwin"] = (rwin, MARK_STYLE["rwin"][1])
            for i in acks:
                for left, right in pk["sack"][i]:
                    line("sack", i, [ms(i), ms(i)], [rel(left), rel(right)], MARK_STYLE["sack"], lw=3, alpha=0.7)
            for i in (i for i in acks if pk["dupack"][i]):
                line("dupack", i, [ms(i)], [rel(pk["ack"][i])], MARK_STYLE["dupack"], marker="_", ms=9, mew=1.5, ls="none")
        # SYN, FIN and RST of both sides, at the sequence number they take (the receiver's
        # at the ACK line, where its ACK number places them).
        for i in range(n):
            if pk["from_client"][i] == sender_is_client:
                y = rel(pk["seq"][i] + pk["len"][i])
            else:
                # The receiver's first SYN acknowledges nothing yet: at the start.
                y = rel(pk["ack"][i]) if pk["flags"][i] & tcp.ACK else 0
            for bit, cls, marker in ((tcp.SYN, "syn", "^"), (tcp.FIN, "fin", "s"), (tcp.RST, "rst", "x")):
                if pk["flags"][i] & bit:
                    line(cls, i, [ms(i)], [y], MARK_STYLE[cls], marker=marker, ms=7, ls="none",
                         markerfacecolor="none" if cls != "rst" else MARK_STYLE[cls][0])
        # Label the longest gaps with the cause the analyzer gave them.
        times = pk["ts_ns"]
        duration = max(times[-1] - t0, 1)
        for i in range(1, n):
            gap = times[i] - times[i - 1]
            cause = pk["cause"][i]
            if gap > 0.08 * duration and cause in CAUSE_LABEL:
                span = ax.axvspan(ms(i - 1), ms(i), color="#ffd166", alpha=0.25)
                span.set_gid(mark_id(f"gap_{cause}", i))
                label = ax.annotate(f"{CAUSE_LABEL[cause]}\n{format_seconds(gap / 1e9)}", ((ms(i - 1) + ms(i)) / 2, 0.98),
                                    xycoords=("data", "axes fraction"), ha="center", va="top", fontsize=8,
                                    annotation_clip=True)
                label.set_in_layout(False)  # zoomed out of sight, it must not squeeze the axes
        lo_s, hi_s = time_range_s
        if lo_s is not None or hi_s is not None:
            _zoom(ax, pk, data, acks, ms, rel, lo_s, hi_s)
        ax.set_xlabel("time since the connection's first packet (ms)")
        ax.set_ylabel(f"{'server' if server_data else 'client'} sequence offset (bytes)")
        ax.set_title(title or "time-sequence graph", fontsize=10, loc="left")
        if pk.get("thinned"):
            note = ax.annotate(thinned_note(pk), (0, -0.13), xycoords="axes fraction", fontsize=7, color="#555555")
            note.set_gid("thinned-note")
        order = [c for c in ("data", *RETX_STYLE, "ack", "rwin", "sack", "dupack", "syn", "fin", "rst") if c in legend]
        leg = ax.legend([legend[c][0] for c in order], [legend[c][1] for c in order], loc="upper left",
                        bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0)
        for c, handle, text in zip(order, leg.legend_handles, leg.get_texts()):
            if handle is not None:
                handle.set_gid(f"legend-{c}")
            text.set_gid(f"legend-{c}-label")
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path)
        plt.close(fig)
    return path


def thinned_note(pk: dict[str, Any]) -> str:
    """What a thinned graph drew (see `packets`)."""
    return (f"{len(pk['ts_ns']):,} of {pk['packets_seen']:,} packets drawn: of each kind, the first, last, "
            "lowest and highest in each time column")


def _zoom(ax: Any, pk: dict[str, Any], data: list[int], acks: list[int], ms: Any, rel: Any,
          lo_s: float | None, hi_s: float | None) -> None:
    """Shows `lo_s`..`hi_s` seconds, the y axis fitted to the sequence numbers seen there."""
    last = ms(len(pk["ts_ns"]) - 1)
    lo = 0.0 if lo_s is None else lo_s * 1e3
    hi = last if hi_s is None else hi_s * 1e3
    pad = max(hi - lo, 1e-3) * 0.02
    ax.set_xlim(lo - pad, hi + pad)
    ys = [rel(pk["seq"][i]) + pk["len"][i] for i in data if lo <= ms(i) <= hi]
    ys += [rel(pk["seq"][i]) for i in data if lo <= ms(i) <= hi]
    ys += [rel(pk["ack"][i]) for i in acks if lo <= ms(i) <= hi]
    if ys:
        span = max(max(ys) - min(ys), 1)
        ax.set_ylim(min(ys) - 0.05 * span, max(ys) + 0.1 * span)
