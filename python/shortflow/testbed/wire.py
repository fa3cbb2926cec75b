"""What the analyzer's table does not carry yet, read from the router's captures: when the
request went out, when the response was complete, data retransmissions and the response's
round trips (flights). The segments come from the project's own readers and wire layer
(`shortflow.tcp`): every format and link type the analyzer reads, no second parser."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from shortflow.tcp import ACK, SYN, Segment, read_pcap

__all__ = ["ACK", "SYN", "Flow", "Segment", "flights", "flows", "read_pcap"]

@dataclass
class Flow:
    """One connection as seen at one router link, keyed by the client's port."""

    client_port: int
    first_syn: float | None = None
    syns: int = 0
    synacks: int = 0
    request_sent: float | None = None
    complete: float | None = None
    retransmissions: list[int] = field(default_factory=lambda: [0, 0])  # client→server, server→client
    data_times: list[list[float]] = field(default_factory=lambda: [[], []])
    _high: list[int | None] = field(default_factory=lambda: [None, None])
    #: The response's bytes seen so far, as merged [start, end) offsets from its first byte.
    _covered: list[list[int]] = field(default_factory=list)
    _base: int | None = None

    def add(self, s: Segment, from_client: bool) -> None:
        d = 0 if from_client else 1
        if s.flags & SYN:
            if from_client and not s.flags & ACK:
                self.syns += 1
                self.first_syn = s.ts if self.first_syn is None else self.first_syn
            elif not from_client and s.flags & ACK:
                self.synacks += 1
            return
        if s.payload == 0:
            return
        end = s.seq + s.payload
        high = self._high[d]
        if high is not None and not _after(end, high):
            self.retransmissions[d] += 1
        else:
            self._high[d] = end
        if not from_client and self._cover(s.seq, s.payload):
            # The last time response bytes not seen before passed this point: the response
            # was whole here then (a hole's repair counts, though below the highest byte).
            self.complete = s.ts
        self.data_times[d].append(s.ts)
        if from_client and self.request_sent is None:
            self.request_sent = s.ts

    def _cover(self, seq: int, length: int) -> bool:
        """Adds [seq, seq + length) of the response; True when some of it was new."""
        if self._base is None:
            self._base = seq
        start = (seq - self._base) & 0xFFFFFFFF
        if start >= 0x80000000:  # before the first byte seen (its original was lost): rebase
            shift = (self._base - seq) & 0xFFFFFFFF
            self._base, start = seq, 0
            self._covered = [[a + shift, b + shift] for a, b in self._covered]
        end = start + length
        merged: list[list[int]] = []
        new = True
        for a, b in self._covered:
            if a <= start and end <= b:
                new = False
            if b < start or a > end:
                merged.append([a, b])
            else:
                start, end = min(a, start), max(b, end)
        merged.append([start, end])
        merged.sort()
        self._covered = merged
        return new


def _after(a: int, b: int) -> bool:
    """Sequence number `a` is after `b`, modulo 2^32 (RFC 9293 3.4)."""
    d = (a - b) & 0xFFFFFFFF
    return 0 < d < 0x80000000


def flows(path: Path, server_port: int) -> dict[int, Flow]:
    """Per-connection facts of one capture, keyed by the client's port."""
    out: dict[int, Flow] = {}
    for s in read_pcap(path):
        if s.dst_port == server_port:
            out.setdefault(s.src_port, Flow(s.src_port)).add(s, True)
        elif s.src_port == server_port:
            out.setdefault(s.dst_port, Flow(s.dst_port)).add(s, False)
    return out


def flights(times: list[float], gap_s: float) -> int:
    """Bursts in `times`: a new one starts after a silence longer than `gap_s` (use about half
    the RTT; the response's round trips are its flights)."""
    if not times:
        return 0
    return 1 + sum(1 for a, b in zip(times, times[1:]) if b - a > gap_s)
