"""Running commands, in the root namespace or inside one of ours, with errors that say
which command failed and what it printed."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence

from shortflow.exceptions import PrivilegeError, ShortflowError


class TestbedError(ShortflowError):
    """A testbed step failed (a command, a child process, a measurement)."""


def require_root() -> None:
    if os.geteuid() != 0:
        raise PrivilegeError("the testbed needs root (network namespaces, iptables, tc): run it with sudo or as root")


def run(args: Sequence[str], *, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    try:
        r = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise TestbedError(f"{args[0]!r} not found: install it (`make deps` installs the testbed's Debian packages)") from None
    except subprocess.TimeoutExpired:
        raise TestbedError(f"`{' '.join(args)}` did not finish in {timeout:g} s") from None
    if check and r.returncode != 0:
        raise TestbedError(f"`{' '.join(args)}` failed ({r.returncode}): {(r.stderr or r.stdout).strip()}")
    return r


def in_ns(ns: str, *args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return run(["ip", "netns", "exec", ns, *args], check=check, timeout=timeout)


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
