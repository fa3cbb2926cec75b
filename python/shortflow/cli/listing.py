"""`shortflow analyze -l`: one line per connection, as `tcptrace -l`/`-n` lists them — on a
terminal as lines a person reads, in a pipe as a tab-separated table (or CSV / JSON Lines
with ``--format``) a program reads."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from shortflow.analyze import CAUSE_WORDS
from shortflow.cli.common import emit_table, stdout_is_terminal
from shortflow.units import format_seconds

if TYPE_CHECKING:
    import pyarrow as pa

#: The listing's columns, in order: (name, unit, meaning). A name that is also the
#: connection table's column has that column's meaning.
COLUMNS = (
    ("trace", "", "the capture file"),
    ("conn_id", "", "the connection's id (what `shortflow graph --conn` takes)"),
    ("client", "", "the client's address and port"),
    ("server", "", "the server's address and port"),
    ("duration_s", "s", "first to last packet"),
    ("packets_c2s", "", "packets client to server"),
    ("packets_s2c", "", "packets server to client"),
    ("bytes_c2s", "bytes", "TCP payload bytes client to server"),
    ("bytes_s2c", "bytes", "TCP payload bytes server to client"),
    ("retx_c2s", "", "client data resent: after a timeout, fast, tail loss probes"),
    ("retx_s2c", "", "server data resent likewise"),
    ("handshake_rtt_s", "s", "SYN to SYN/ACK to ACK at the capture point"),
    ("rtt_mean_s", "s", "mean data RTT"),
    ("outcome", "", "how the connection ended: fin, rst, idle, reused or open"),
    ("lost_s", "s", "time lost to something other than the path"),
    ("main_cause", "", "the cause that took most of it"),
    ("main_cause_s", "s", "its seconds"),
)


def listing_table(table: pa.Table) -> pa.Table:
    """The listing's columns (`COLUMNS`) for every connection of the analysis' table."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from shortflow.arrow_table import floats
    from shortflow.worst import endpoint, lost_by_cause, main_causes

    def col(name: str) -> Any:
        return table.column(name)

    def endpoints(side: str) -> pa.Array:
        return pa.array([endpoint(ip, port) for ip, port in zip(col(f"{side}_ip").to_pylist(), col(f"{side}_port").to_pylist())],
                        pa.string())

    def retx(direction: str) -> pa.Array:
        parts = [floats(col(f"retx_{k}_{direction}")).astype(np.uint64) for k in ("timeout", "fast", "tlp")]
        return pa.array(sum(parts, np.zeros(table.num_rows, np.uint64)), pa.uint64())

    lost_by = lost_by_cause(table)
    names, seconds = main_causes(lost_by)
    values = {
        "trace": col("trace").cast(pa.string()),
        "conn_id": col("conn_id"),
        "client": endpoints("client"),
        "server": endpoints("server"),
        "duration_s": col("duration_s"),
        "packets_c2s": col("packets_c2s"),
        "packets_s2c": col("packets_s2c"),
        "bytes_c2s": col("bytes_c2s"),
        "bytes_s2c": col("bytes_s2c"),
        "retx_c2s": retx("c2s"),
        "retx_s2c": retx("s2c"),
        "handshake_rtt_s": col("handshake_rtt_s"),
        "rtt_mean_s": col("rtt_mean_s"),
        "outcome": col("outcome").cast(pa.string()),
        "lost_s": pa.array(sum(lost_by.values(), np.zeros(table.num_rows)), pa.float64()),
        "main_cause": pa.array(names, pa.string()),
        "main_cause_s": pa.array(seconds, pa.float64()),
    }
    out = pa.table({name: values[name] for name, _, _ in COLUMNS})
    # NaN (no RTT measured) is no number a reader should see: null, written empty.
    for name in ("duration_s", "handshake_rtt_s", "rtt_mean_s"):
        i = out.schema.get_field_index(name)
        c = out.column(i)
        out = out.set_column(i, name, pc.if_else(pc.is_nan(c), pa.scalar(None, pa.float64()), c))
    return out


def _bytes(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def _line(r: dict[str, Any], width: int, several: bool) -> str:
    """One connection as a line: `tcptrace -n`'s `a:p - b:p (a2b) 5> 4<`, with shortflow's
    time account at the end."""
    rtt = r["rtt_mean_s"] if r["rtt_mean_s"] is not None else r["handshake_rtt_s"]
    parts = [
        f"{r['conn_id']:>{width}}:",
        *([r["trace"] + ":"] if several else []),
        f"{r['client']} → {r['server']}",
        format_seconds(r["duration_s"]) if r["duration_s"] is not None else "–",
        f"{r['packets_c2s']}> {r['packets_s2c']}<",
        f"{_bytes(r['bytes_c2s'])}> {_bytes(r['bytes_s2c'])}<",
        f"resent {r['retx_c2s']}> {r['retx_s2c']}<",
        f"rtt {format_seconds(rtt)}" if rtt is not None else "rtt –",
        r["outcome"],
    ]
    if r["main_cause"] is not None:
        parts.append(f"lost {format_seconds(r['lost_s'])}, most to {CAUSE_WORDS[r['main_cause']]} "
                     f"{format_seconds(r['main_cause_s'])}")
    return "  ".join(parts)


def print_listing(table: pa.Table, fmt: str | None) -> None:
    """The listing on standard output: as CSV or JSON Lines when `fmt` says so; else as
    lines on a terminal and a tab-separated table in a pipe."""
    listing = listing_table(table)
    if fmt in ("csv", "jsonl"):
        from shortflow.output import write_table_stdout

        write_table_stdout(listing, fmt)
        return
    rows = listing.to_pylist()
    if not stdout_is_terminal():
        emit_table("connections (shortflow analyze -l)", listing.column_names, [list(r.values()) for r in rows])
        return
    several = len(set(listing.column("trace").to_pylist())) > 1
    width = max((len(str(r["conn_id"])) for r in rows), default=1)
    out = sys.stdout
    for r in rows:
        out.write(_line(r, width, several) + "\n")
    out.flush()
