"""TCP segments of a capture, as the core's wire layer reads them (`_core.segments`: every
format and link type the analyzer reads, no second parser), and the TCP header's flag
bits, as the wire crate defines them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from shortflow import _core

_BITS = dict(_core.TCP_FLAGS)
FIN: int = _BITS["FIN"]
SYN: int = _BITS["SYN"]
RST: int = _BITS["RST"]
PSH: int = _BITS["PSH"]
ACK: int = _BITS["ACK"]


@dataclass(frozen=True)
class Segment:
    ts: float
    src_port: int
    dst_port: int
    flags: int
    seq: int
    payload: int
    ack: int = 0


def read_pcap(path: Path) -> Iterator[Segment]:
    """TCP segments of a capture (pcap or pcapng, any link type the analyzer reads), in file
    order. A damaged file raises TraceReadError naming the file and byte offset."""
    c = _core.segments(path)
    columns = (c["ts_ns"].tolist(), c["src_port"].tolist(), c["dst_port"].tolist(),
               c["flags"].tolist(), c["seq"].tolist(), c["payload_len"].tolist(), c["ack"].tolist())
    for ts_ns, sport, dport, flags, seq, payload, ack in zip(*columns):
        yield Segment(ts_ns / 1e9, sport, dport, flags, seq, payload, ack)
