"""The host layer: everything shortflow does to the machine it runs on, in one place, used
by the testbed and by `tune` (neither imports the other): running commands (`commands`),
the processes it keeps beside itself (`daemon`), network namespaces and links (`netns`),
routes, sysctls and the kernel knob table at this kernel's HZ (`routes`, `sysctl`,
`knobs`), the packet filter (`nft`), sockets (`sockets`), the BPF program (`bpf`) and
kernel facts (`kernel`). No other module of the package runs a command or writes a kernel
setting (tests/test_layering.py holds that). Nothing here knows about scenarios or fixes."""

from shortflow.host.commands import HostError, in_ns, require_root, run
from shortflow.host.kernel import cgroup2_root, kernel_hz, ns_counters

__all__ = ["HostError", "cgroup2_root", "in_ns", "kernel_hz", "ns_counters", "require_root", "run"]
