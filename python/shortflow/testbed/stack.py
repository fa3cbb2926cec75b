"""Applies one role's part of a `LinuxPlan` (`realize`) in its namespace: sysctls, the
default route's metrics and, for a SYN RTO other than Linux's, the BPF program. What each
field means and whether Linux can set it was decided by `realize`; nothing is decided here."""

from __future__ import annotations

from shortflow.testbed.realize import RolePlan
from shortflow.testbed.synrto import SynRto
from shortflow.testbed.topology import Topology


def apply(topo: Topology, role: str, plan: RolePlan) -> None:
    """Sysctls and route metrics of `role`; a SYN RTO via BPF (the role's processes must
    then be started after this, inside its cgroup)."""
    if plan.syn_rto_s is not None:
        SynRto(topo, role, plan.syn_rto_s).start()
    for key, value in plan.sysctls.items():
        topo.sysctl(role, key, value)
    topo.set_route(role, plan.route)
