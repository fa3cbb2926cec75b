"""A scenario's stack settings on the real kernel, per namespace: route metrics (initcwnd,
rto_min, quickack) on the default route through the router, and per-namespace sysctls.
What Linux cannot do is refused before anything is built (`check`)."""

from __future__ import annotations

import shutil

from shortflow.exceptions import ScenarioError
from shortflow.testbed.scenario_real import Host, RealScenario
from shortflow.testbed.synrto import SynRto
from shortflow.testbed.topology import Topology

#: Linux's own SYN RTO (TCP_TIMEOUT_INIT, RFC 6298 (5.7)) and RTO floor (TCP_RTO_MIN).
LINUX_SYN_RTO_S = 1.0
LINUX_RTO_MIN_S = 0.2


def check(s: RealScenario) -> None:
    """Refuses settings the testbed cannot make on this kernel."""
    for side, host in (("client", s.client), ("server", s.server)):
        if needs_bpf_syn_rto(host) and not (shutil.which("bpftool") and shutil.which("clang")):
            key = f"{side}.syn_rto" if host.syn_rto_s is not None else f"{side}.stack ({host.stack!r})"
            raise ScenarioError(
                f"{s.path}: {key}: a SYN RTO of {host.effective_syn_rto_s:g} s needs BPF sock_ops "
                f"(bpftool and clang, installed by `make deps`); Linux's own is {LINUX_SYN_RTO_S:g} s")


def needs_bpf_syn_rto(host: Host) -> bool:
    return abs(host.effective_syn_rto_s - LINUX_SYN_RTO_S) > 1e-9


def route_options(host: Host) -> list[str]:
    opts: list[str] = []
    if host.initial_window is not None:
        opts += ["initcwnd", str(host.initial_window)]
    rto_min = host.effective_rto_min_s
    if abs(rto_min - LINUX_RTO_MIN_S) > 1e-9:
        opts += ["rto_min", f"{round(rto_min * 1000)}ms"]
    if host.quickack:
        opts += ["quickack", "1"]
    if host.mss_bytes is not None:
        opts += ["advmss", str(host.mss_bytes)]
    if host.receive_window_bytes is not None:
        # The first window Linux offers is initrwnd segments (default 10), whatever the buffer.
        mss = host.mss_bytes or 1460
        opts += ["initrwnd", str(max(1, -(-host.receive_window_bytes // mss)))]
    # On the route, not the sysctl: a namespace may set only the root's "allowed" algorithms
    # as its default (EPERM for cubic here), while a route's congctl applies to every
    # connection through it, active and passive.
    opts += ["congctl", host.congestion_control]
    return opts


def apply(topo: Topology, role: str, host: Host) -> None:
    """Route metrics and sysctls of `role`; a SYN RTO other than 1 s via BPF (the role's
    processes must then be started after this, inside its cgroup)."""
    if host.stack in ("rfc2988", "rfc6298"):
        # RFC 6298 (5.5): the SYN timer doubles on every expiry. Linux 6.x keeps the first
        # `tcp_syn_linear_timeouts` (4 here) retries linear; the RFC profiles turn that off.
        topo.sysctl(role, "net.ipv4.tcp_syn_linear_timeouts", 0)
    if needs_bpf_syn_rto(host):
        SynRto(topo, role, host.effective_syn_rto_s).start()
    # Cached path metrics would start a connection from an earlier one's RTT (kernel-facts).
    topo.sysctl(role, "net.ipv4.tcp_no_metrics_save", 1)
    # Kernel defaults stay (timestamps, SACK, window scaling, RACK, TLP: the simulator's
    # `linux` profile has them too); a scenario that turns one off says so to both worlds.
    for key, sysctl, on, off in (("timestamps", "tcp_timestamps", 1, 0), ("sack", "tcp_sack", 1, 0),
                                 ("window_scaling", "tcp_window_scaling", 1, 0), ("rack", "tcp_recovery", 1, 0),
                                 ("tlp", "tcp_early_retrans", 3, 0), ("frto", "tcp_frto", 2, 0)):
        value = getattr(host, key)
        if value is not None:
            topo.sysctl(role, f"net.ipv4.{sysctl}", on if value else off)
    if host.receive_window_bytes is not None:
        # With tcp_adv_win_scale 1 Linux offers half its receive buffer as window.
        buf = 2 * host.receive_window_bytes
        topo.sysctl(role, "net.ipv4.tcp_rmem", f"4096 {buf} {max(buf, 6291456)}")
    if host.slow_start_after_idle is not None:
        topo.sysctl(role, "net.ipv4.tcp_slow_start_after_idle", int(host.slow_start_after_idle))
    topo.set_route(role, route_options(host))
