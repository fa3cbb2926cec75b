"""TCP sockets of a network namespace as the kernel reports them (`ss`, sock_diag), read
into structured rows in this one place."""

from __future__ import annotations

import re
from dataclasses import dataclass

from shortflow.host.commands import in_ns, run


@dataclass(frozen=True)
class Socket:
    state: str
    local: str
    peer: str
    #: Smoothed RTT in seconds (tcp_info's rtt), None for sockets that have none (listeners).
    rtt_s: float | None = None


def _address(text: str) -> str:
    """`10.0.0.1:80` or `[2001:db8::1]:80` → the address alone."""
    return text.rsplit(":", 1)[0].strip("[]")


def tcp(state: str, ns: str | None = None, filter_: list[str] | None = None) -> list[Socket]:
    """TCP sockets in `state` (`established`, `listening`) in `ns`, with `ss`'s filter
    words. ss prints one line per socket and, with -i, its tcp_info on the next, indented."""
    args = ["ss", "-H", "-tin", "state", state, *(filter_ or [])]
    out = (in_ns(ns, *args, check=False) if ns else run(args, check=False)).stdout
    found: list[Socket] = []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 4 and not line.startswith((" ", "\t")):
            found.append(Socket(state, fields[-2], fields[-1]))
            continue
        m = re.search(r"\brtt:([0-9.]+)/", line)
        if m and found:
            s = found[-1]
            found[-1] = Socket(s.state, s.local, s.peer, float(m.group(1)) / 1000)
    return found


def rtts_by_peer(ns: str | None = None) -> dict[str, float]:
    """The largest smoothed RTT (seconds) of the established connections to each peer address."""
    rtts: dict[str, float] = {}
    for s in tcp("established", ns):
        if s.rtt_s is not None:
            peer = _address(s.peer)
            rtts[peer] = max(rtts.get(peer, 0.0), s.rtt_s)
    return rtts


def listening(port: int, ns: str | None = None) -> bool:
    """Whether a TCP socket listens on `port` in `ns`."""
    return bool(tcp("listening", ns, [f"sport = :{port}"]))
