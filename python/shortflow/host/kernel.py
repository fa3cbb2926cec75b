"""Facts of the running kernel that the testbed and `tune` both need: its timer frequency,
where cgroup v2 is mounted, a namespace's TCP counters."""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

from shortflow.host.commands import HostError, in_ns


def kernel_hz() -> int:
    """CONFIG_HZ of the running kernel: BPF TIMEOUT_INIT's reply is in jiffies."""
    try:
        text = gzip.decompress(Path("/proc/config.gz").read_bytes()).decode()
    except OSError:
        raise HostError("cannot read /proc/config.gz to learn CONFIG_HZ (needed to set a SYN RTO in jiffies)") from None
    m = re.search(r"^CONFIG_HZ=(\d+)$", text, re.M)
    if not m:
        raise HostError("CONFIG_HZ is not in /proc/config.gz")
    return int(m.group(1))


@dataclass(frozen=True)
class Mount:
    point: Path
    kind: str


def mounts() -> list[Mount]:
    """This mount namespace's mounts (/proc/mounts: device, mount point, type, …)."""
    found = []
    for line in Path("/proc/mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) > 2:
            found.append(Mount(Path(parts[1]), parts[2]))
    return found


def cgroup2_mounts() -> list[Path]:
    """Every place a cgroup v2 hierarchy is mounted."""
    return [m.point for m in mounts() if m.kind == "cgroup2"]


def cgroup2_root() -> Path:
    """Where the cgroup v2 hierarchy is mounted (BPF sock_ops programs attach to one)."""
    roots = cgroup2_mounts()
    if not roots:
        raise HostError("no cgroup v2 hierarchy is mounted: BPF sock_ops programs attach to a cgroup v2")
    return roots[0]


def ns_counters(ns: str) -> dict[str, int]:
    """The namespace's TCP MIB counters (TcpExt and Tcp of /proc/net/{netstat,snmp})."""
    counters: dict[str, int] = {}
    for f in ("/proc/net/netstat", "/proc/net/snmp"):
        lines = in_ns(ns, "cat", f).stdout.splitlines()
        for head, values in zip(lines[::2], lines[1::2]):
            group, *names = head.split()
            _, *nums = values.split()
            if group in ("TcpExt:", "Tcp:"):
                for n, v in zip(names, nums):
                    counters[f"{group[:-1]}{n}"] = int(v)
    return counters
