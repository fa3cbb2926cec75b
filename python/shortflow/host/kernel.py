"""Facts of the running kernel that the testbed and `tune` both need: its timer frequency,
where cgroup v2 is mounted, a namespace's TCP counters."""

from __future__ import annotations

import functools
import gzip
import platform
import re
import time
from dataclasses import dataclass
from pathlib import Path

from shortflow.host.commands import HostError, in_ns

#: The timer frequencies Linux offers (kernel/Kconfig.hz).
HZ_CHOICES = (100, 250, 300, 1000)


@functools.cache
def kernel_hz() -> int:
    """CONFIG_HZ of the running kernel: its jiffy is what BPF's TIMEOUT_INIT reply, a
    route's rto_min and bpf_setsockopt's timer bounds are counted in.

    Read from the kernel's own configuration (/proc/config.gz, else /boot/config-RELEASE);
    without either, measured: /proc/timer_list prints `jiffies` beside the monotonic clock
    (`now at … nsecs`), and two readings 200 ms apart give jiffies per second, taken to
    the nearest of the frequencies Linux offers. Not `getconf CLK_TCK` (USER_HZ, the unit
    of /proc/PID/stat, fixed at 100 whatever CONFIG_HZ is)."""
    for text in _configs():
        m = re.search(r"^CONFIG_HZ=(\d+)$", text, re.M)
        if m:
            return int(m.group(1))
    return measured_hz()


def _configs() -> list[str]:
    found = []
    try:
        found.append(gzip.decompress(Path("/proc/config.gz").read_bytes()).decode())
    except OSError:
        pass
    try:
        found.append(Path(f"/boot/config-{platform.release()}").read_text())
    except OSError:
        pass
    return found


def _timer_list() -> tuple[int, int]:
    """(monotonic ns, jiffies) from one read of /proc/timer_list."""
    try:
        text = Path("/proc/timer_list").read_text()
    except OSError as e:
        raise HostError("cannot learn CONFIG_HZ (needed to count timers in jiffies): no /proc/config.gz, no "
                        f"/boot/config-{platform.release()}, and /proc/timer_list is unreadable ({e.strerror})") from None
    now = re.search(r"^now at (\d+) nsecs", text, re.M)
    jiffies = re.search(r"^jiffies: (\d+)", text, re.M)
    if not (now and jiffies):
        raise HostError("cannot learn CONFIG_HZ: /proc/timer_list shows no `now at` or `jiffies` line")
    return int(now.group(1)), int(jiffies.group(1))


def measured_hz(interval_s: float = 0.2) -> int:
    """HZ measured from the jiffies counter against the monotonic clock."""
    t0, j0 = _timer_list()
    time.sleep(interval_s)
    t1, j1 = _timer_list()
    rate = (j1 - j0) / ((t1 - t0) / 1e9)
    return min(HZ_CHOICES, key=lambda hz: abs(hz - rate))


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
