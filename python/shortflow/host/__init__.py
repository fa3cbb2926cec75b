"""The host layer: everything shortflow does to the machine it runs on — running commands,
network namespaces, cgroups, kernel facts — in one place, used by the testbed and by
`tune` (neither imports the other). Nothing here knows about scenarios or fixes."""

from shortflow.host.commands import HostError, in_ns, require_root, run
from shortflow.host.kernel import cgroup2_root, kernel_hz, ns_counters

__all__ = ["HostError", "cgroup2_root", "in_ns", "kernel_hz", "ns_counters", "require_root", "run"]
