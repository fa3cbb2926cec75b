"""TCP sockets of a network namespace as the kernel reports them over sock_diag (pyroute2's
`DiagSocket`: the kernel's own records and tcp_info, no text to parse), read into
structured rows in this one place."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

from shortflow.host.commands import HostError

#: TCP states (include/net/tcp_states.h) by the names callers use.
STATES = {"established": 1, "listening": 10}
#: The sock_diag extension that carries tcp_info (INET_DIAG_INFO = 2, requested as bit 1).
_WITH_TCP_INFO = 1 << (2 - 1)


@dataclass(frozen=True)
class Socket:
    state: str
    local: str
    peer: str
    #: Smoothed RTT in seconds (tcp_info's rtt), None for sockets that have none (listeners).
    rtt_s: float | None = None


def _endpoint(addr: str, port: int, family: int) -> str:
    return f"[{addr}]:{port}" if family == socket.AF_INET6 else f"{addr}:{port}"


def _address(text: str) -> str:
    """`10.0.0.1:80` or `[2001:db8::1]:80` → the address alone."""
    return text.rsplit(":", 1)[0].strip("[]")


def _diag(ns: str | None) -> Any:
    """A sock_diag socket of namespace `ns` (None: this one): a netlink socket answers for
    the namespace it was opened in."""
    from pyroute2 import DiagSocket, netns  # type: ignore[import-untyped]

    if ns is None:
        ds = DiagSocket()
    else:
        try:
            netns.pushns(ns)
        except OSError as e:
            raise HostError(f"entering network namespace {ns}: {e}") from None
        try:
            ds = DiagSocket()
        finally:
            netns.popns()
    ds.bind()
    return ds


def tcp(state: str, ns: str | None = None, sport: int | None = None) -> list[Socket]:
    """TCP sockets in `state` (`established`, `listening`) in `ns`, IPv4 then IPv6; only
    those on local port `sport` when given."""
    ds = _diag(ns)
    found = []
    try:
        for family in (socket.AF_INET, socket.AF_INET6):
            for m in ds.get_sock_stats(family=family, states=1 << STATES[state], extensions=_WITH_TCP_INFO):
                if sport is not None and m["idiag_sport"] != sport:
                    continue
                info = m.get_attr("INET_DIAG_INFO")
                rtt = info["tcpi_rtt"] / 1e6 if info is not None and state != "listening" else None
                found.append(Socket(state, _endpoint(m["idiag_src"], m["idiag_sport"], family),
                                    _endpoint(m["idiag_dst"], m["idiag_dport"], family), rtt))
    finally:
        ds.close()
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
    return bool(tcp("listening", ns, sport=port))
