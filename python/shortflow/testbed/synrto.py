"""The SYN RTO of a namespace's connections, set with the tuner's BPF sock_ops program
(`bpf/tune.bpf.c`, loaded through `shortflow.host.bpf`) configured with the SYN RTO alone:
Linux has no sysctl or route metric for it (a route's rtt/rttvar do not move it on 6.18).
The program answers BPF_SOCK_OPS_TIMEOUT_INIT for the SYNs a client sends and for the
SYN/ACKs a listener sends; every other field of its configuration stays 0 (the kernel's own).

The object is written into the run's work directory, pinned in a bpffs mounted there for
this run only, and attached to a cgroup `sf-<id>-<role>` under the cgroup-v2 mount; the
testbed starts the role's processes (client, nginx) inside that cgroup. All of it is undone
when the topology closes.
"""

from __future__ import annotations

import os

from shortflow.host import HostError, bpf, knobs
from shortflow.host.kernel import cgroup2_root, kernel_hz
from shortflow.testbed.system import TestbedError
from shortflow.testbed.topology import Topology


class SynRto:
    """`seconds` as the initial SYN/SYN-ACK RTO of the processes the topology starts in `role`."""

    def __init__(self, topo: Topology, role: str, seconds: float) -> None:
        self.topo, self.role, self.seconds = topo, role, seconds
        self.dir = topo.workdir / f"bpf-{role}"
        self.fs = self.dir / "bpffs"
        self.pins = self.fs / "tune"
        self.cgroup = cgroup2_root() / f"{topo.names.prefix}{role}"
        self.jiffies = int(knobs.knob("syn_rto", "bpf_field").encode(seconds, kernel_hz()))
        self.prog: int | None = None

    def start(self) -> None:
        if not bpf.available():
            raise TestbedError("setting a SYN RTO needs the tuner's BPF program: the extension was built without "
                               "it and clang is missing (`make deps` installs it)")
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            obj = bpf.program_object(self.dir)
        except HostError as e:
            raise TestbedError(f"setting a SYN RTO of {self.seconds:g} s: {e}") from None
        self.fs.mkdir()
        self.topo.add_cleanup(self.stop)
        # A bpffs of our own: the pins vanish with the unmount, nothing lands in /sys/fs/bpf.
        bpf.mount_bpffs(self.fs)
        self.prog = bpf.load(obj, self.pins)
        bpf.write_config(self.pins, bpf.Config(syn_rto_jiffies=self.jiffies))
        self.cgroup.mkdir()
        bpf.attach(self.cgroup, self.pins)
        self.topo.cgroups[self.role] = self.cgroup

    def stop(self) -> None:
        """Detach, unmount (unpins), remove the cgroup; each step tolerates a missing object."""
        if self.prog is not None and self.cgroup.exists():
            try:
                bpf.detach(self.cgroup, self.prog)
            except HostError:
                pass  # the cgroup's removal below detaches it too
        if os.path.ismount(self.fs):
            bpf.unmount(self.fs)
        if self.cgroup.exists():
            try:
                self.cgroup.rmdir()
            except OSError:
                pass  # processes still inside: `shortflow testbed clean` retries
