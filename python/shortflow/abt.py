"""A capture's connections as tmix connection vectors (the a-b-t model): the analyzer's
exchanges table turned into tmix's text (`_core.abt_format`, ns-2's format), so ns-2's or
ns-3's tmix, the simulator (workload ``kind = "abt"``) and the testbed can replay them.

Quiet times are the senders' own: what the capture point saw, less the path's share. The
acceptor's wait before a response is the time to its first byte less the capture point's
round trip to the server (the handshake's SYN → SYN/ACK); the initiator's wait before its
next request, the time from the last response byte less the round trip to the client
(SYN/ACK → ACK). Near the client the first round trip is the path's RTT and the second
nothing, near the server the other way round.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shortflow import _core

if TYPE_CHECKING:
    from shortflow.analyze import Analysis

_CONN_COLUMNS = ("trace", "conn_id", "first_seen", "handshake_rtt_s", "rtt_min_s", "synack_delay_s", "ack_delay_s",
                 "packets_c2s", "packets_s2c", "retx_timeout_c2s", "retx_fast_c2s", "retx_tlp_c2s",
                 "retx_timeout_s2c", "retx_fast_s2c", "retx_tlp_s2c")
_EXCHANGE_COLUMNS = ("trace", "conn_id", "exchange", "request_bytes", "response_bytes", "request_start_s",
                     "request_end_s", "response_start_s", "response_end_s", "ttfb_s", "concurrent",
                     "request_last_new_s", "response_last_new_s", "request_continues", "response_continues")


def _s(x: float | None) -> float:
    return 0.0 if x is None or math.isnan(x) else float(x)


def _us(seconds: float) -> int:
    return max(0, round(seconds * 1e6))


def _loss(c: dict[str, Any], side: str) -> float:
    packets = c[f"packets_{side}"] or 0
    resent = sum(c[f"retx_{k}_{side}"] or 0 for k in ("timeout", "fast", "tlp"))
    return min(1.0, resent / packets) if packets else 0.0


def _sequential(rows: list[dict[str, Any]], server_leg: float, client_leg: float) -> list[tuple[int, int, int, int]]:
    epochs = []
    for k, x in enumerate(rows):
        answered = x["request_bytes"] and x["response_bytes"]
        delay = _us(_s(x["ttfb_s"]) - server_leg) if answered else 0
        interval = 0
        if k + 1 < len(rows):
            nxt = rows[k + 1]
            ends = [t for t in (x["request_end_s"], x["response_end_s"]) if t is not None and not math.isnan(t)]
            starts = [t for t in (nxt["request_start_s"], nxt["response_start_s"]) if t is not None and not math.isnan(t)]
            if ends and starts:
                # The initiator's wait follows a response; after a request alone, the acceptor's.
                leg = client_leg if x["response_bytes"] else server_leg
                interval = _us(min(starts) - max(ends) - leg)
        epochs.append((int(x["request_bytes"]), delay, int(x["response_bytes"]), interval))
    return epochs


def _concurrent(rows: list[dict[str, Any]]) -> tuple[list[tuple[int, int]], ...]:
    """Each side's ADUs and its wait after each: the gap from an ADU's last new byte (a
    resend of it repairs the path's loss, not the application's pace) to its next one's
    first, the same wherever it is seen (both crossed the same path). An ADU the other
    side's turns cut over several exchanges is put back together (``request_continues``,
    ``response_continues``)."""
    sides: list[list[tuple[int, int]]] = [[], []]
    for side, name in enumerate(("request", "response")):
        adus: list[list[float]] = []  # [bytes, first byte, last byte]
        for x in rows:
            if not x[f"{name}_bytes"]:
                continue
            if x[f"{name}_continues"] and adus:
                adus[-1][0] += x[f"{name}_bytes"]
                adus[-1][2] = x[f"{name}_last_new_s"]
            else:
                adus.append([x[f"{name}_bytes"], x[f"{name}_start_s"], x[f"{name}_last_new_s"]])
        for k, (size, _, end) in enumerate(adus):
            wait = _us(adus[k + 1][1] - end) if k + 1 < len(adus) else 0
            sides[side].append((int(size), wait))
    return tuple(sides)


def vectors(a: Analysis) -> list[dict[str, Any]]:
    """One connection vector per connection that carried data, in the order of the
    connections table; start times from the first such connection."""
    return [v for _, v in connection_vectors(a)]


def connection_vectors(a: Analysis, columns: tuple[str, ...] = ()) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """`vectors`, each beside its connection's row (the vector's own columns and
    `columns`) and its exchanges (``exchanges``, the rows it was made from)."""
    import pyarrow as pa

    wanted = list(dict.fromkeys(_CONN_COLUMNS + columns))
    t = a.table.select(wanted)
    i = t.schema.get_field_index("first_seen")
    conns = t.set_column(i, "first_seen", t.column(i).cast(pa.int64())).to_pylist()
    by_conn: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for x in a.exchanges.select(list(_EXCHANGE_COLUMNS)).to_pylist():
        by_conn.setdefault((x["trace"], x["conn_id"]), []).append(x)
    out: list[tuple[dict[str, Any], dict[str, Any]]] = []
    origin = None
    for c in conns:
        rows = by_conn.get((c["trace"], c["conn_id"]))
        if not rows:
            continue
        first = int(c["first_seen"])
        origin = first if origin is None else origin
        server_leg, client_leg = _s(c["synack_delay_s"]), _s(c["ack_delay_s"])
        rtt = c["handshake_rtt_s"] if c["handshake_rtt_s"] is not None and not math.isnan(c["handshake_rtt_s"]) else c["rtt_min_s"]
        v: dict[str, Any] = {
            "start_us": max(0, (first - origin) // 1000),
            "id": len(out),
            "window": (0, 0),  # the capture does not say what the endpoints could receive
            "min_rtt_us": _us(_s(rtt)),
            "loss": (_loss(c, "c2s"), _loss(c, "s2c")),
        }
        if any(x["concurrent"] for x in rows):
            v["concurrent"] = _concurrent(rows)
        else:
            v["epochs"] = _sequential(rows, server_leg, client_leg)
        out.append(({**c, "exchanges": rows}, v))
    return out


def write_abt(a: Analysis, path: Path) -> int:
    """Writes `a`'s connection vectors to `path` in tmix's text; returns how many."""
    vs = vectors(a)
    text = f"# tmix connection vectors (ns-2 format), written by shortflow analyze: {len(vs)} connections\n"
    text += _core.abt_format(vs)
    if str(path) == "-":
        import sys

        sys.stdout.write(text)
    else:
        path.write_text(text)
    return len(vs)
