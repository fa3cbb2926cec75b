"""The SYN RTO of a namespace's connections, set with BPF sock_ops (`bpf/syn_rto.bpf.c`):
Linux has no sysctl or route metric for it (kernel-facts: route rtt/rttvar do not move it).

The program is compiled with clang into the run's work directory, pinned in a bpffs mounted
there for this run only, and attached to a cgroup `sf-<id>-<role>` under the cgroup-v2
mount; the testbed starts the role's processes (client, nginx) inside that cgroup. All of it
is undone when the topology closes.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from shortflow.host.kernel import cgroup2_root, kernel_hz
from shortflow.testbed.system import TestbedError, run
from shortflow.testbed.topology import Topology

SOURCE = Path(__file__).resolve().parents[3] / "bpf" / "syn_rto.bpf.c"


def _compile(out: Path) -> Path:
    clang = shutil.which("clang")
    if clang is None or not SOURCE.is_file():
        raise TestbedError(f"setting a SYN RTO needs clang and {SOURCE} (`make deps` installs clang)")
    triple = run(["gcc", "-dumpmachine"], check=False).stdout.strip() or "x86_64-linux-gnu"
    obj = out / "syn_rto.bpf.o"
    run([clang, "-O2", "-g", "-target", "bpf", f"-I/usr/include/{triple}", "-c", str(SOURCE), "-o", str(obj)], timeout=60)
    return obj


class SynRto:
    """`seconds` as the initial SYN/SYN-ACK RTO of the processes the topology starts in `role`."""

    def __init__(self, topo: Topology, role: str, seconds: float) -> None:
        self.topo, self.role, self.seconds = topo, role, seconds
        self.dir = topo.workdir / f"bpf-{role}"
        self.fs = self.dir / "bpffs"
        self.cgroup = cgroup2_root() / f"{topo.names.prefix}{role}"
        self.jiffies = round(seconds * kernel_hz())

    def start(self) -> None:
        if shutil.which("bpftool") is None:
            raise TestbedError("setting a SYN RTO needs bpftool (`make deps` installs it)")
        self.dir.mkdir(parents=True, exist_ok=True)
        obj = _compile(self.dir)
        self.fs.mkdir()
        self.topo.add_cleanup(self.stop)
        # A bpffs of our own: the pins vanish with the unmount, nothing lands in /sys/fs/bpf.
        run(["mount", "-t", "bpf", "bpf", str(self.fs)])
        prog, maps = self.fs / "prog", self.fs / "maps"
        run(["bpftool", "prog", "load", str(obj), str(prog), "type", "sockops", "pinmaps", str(maps)])
        value = [str(b) for b in self.jiffies.to_bytes(4, "little")]
        run(["bpftool", "map", "update", "pinned", str(maps / "syn_rto_jiffies"), "key", "0", "0", "0", "0", "value", *value])
        self.cgroup.mkdir()
        run(["bpftool", "cgroup", "attach", str(self.cgroup), "sock_ops", "pinned", str(prog)])
        self.topo.cgroups[self.role] = self.cgroup

    def stop(self) -> None:
        """Detach, unmount (unpins), remove the cgroup; each step tolerates a missing object."""
        if self.cgroup.exists():
            run(["bpftool", "cgroup", "detach", str(self.cgroup), "sock_ops", "pinned", str(self.fs / "prog")], check=False)
        if os.path.ismount(self.fs):
            run(["umount", str(self.fs)], check=False)
        if self.cgroup.exists():
            try:
                self.cgroup.rmdir()
            except OSError:
                pass  # processes still inside: `shortflow testbed clean` retries
