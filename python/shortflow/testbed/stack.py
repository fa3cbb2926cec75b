"""A scenario's stack settings on the real kernel, per namespace: route metrics (initcwnd,
rto_min, quickack) on the default route through the router, and per-namespace sysctls.
What Linux cannot do is refused before anything is built (`check`)."""

from __future__ import annotations

from shortflow.exceptions import ScenarioError
from shortflow.testbed.scenario_real import Host, RealScenario
from shortflow.testbed.topology import Topology

#: Linux's own SYN RTO (TCP_TIMEOUT_INIT, RFC 6298 (5.7)) and RTO floor (TCP_RTO_MIN).
LINUX_SYN_RTO_S = 1.0
LINUX_RTO_MIN_S = 0.2


def check(s: RealScenario) -> None:
    """Refuses settings the testbed cannot make on this kernel (yet)."""
    for side, host in (("client", s.client), ("server", s.server)):
        syn_rto = host.effective_syn_rto_s
        if abs(syn_rto - LINUX_SYN_RTO_S) > 1e-9:
            key = f"{side}.syn_rto" if host.syn_rto_s is not None else f"{side}.stack ({host.stack!r})"
            raise ScenarioError(
                f"{s.path}: {key}: a SYN RTO of {syn_rto:g} s needs BPF sock_ops TIMEOUT_INIT, which the "
                f"testbed does not load yet; Linux's own SYN RTO is {LINUX_SYN_RTO_S:g} s")


def route_options(host: Host) -> list[str]:
    opts: list[str] = []
    if host.initial_window is not None:
        opts += ["initcwnd", str(host.initial_window)]
    rto_min = host.effective_rto_min_s
    if abs(rto_min - LINUX_RTO_MIN_S) > 1e-9:
        opts += ["rto_min", f"{round(rto_min * 1000)}ms"]
    if host.quickack:
        opts += ["quickack", "1"]
    # On the route, not the sysctl: a namespace may set only the root's "allowed" algorithms
    # as its default (EPERM for cubic here), while a route's congctl applies to every
    # connection through it, active and passive.
    opts += ["congctl", host.congestion_control]
    return opts


def apply(topo: Topology, role: str, host: Host) -> None:
    # Cached path metrics would start a connection from an earlier one's RTT (kernel-facts).
    topo.sysctl(role, "net.ipv4.tcp_no_metrics_save", 1)
    if host.slow_start_after_idle is not None:
        topo.sysctl(role, "net.ipv4.tcp_slow_start_after_idle", int(host.slow_start_after_idle))
    topo.set_route(role, route_options(host))
