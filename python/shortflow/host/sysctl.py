"""Kernel settings under /proc/sys: read and written here only, in the root network
namespace or inside one of ours (each namespace has its own `net.*`)."""

from __future__ import annotations

from pathlib import Path

from shortflow.host.commands import in_ns, run

PROC_SYS = Path("/proc/sys")


def path(key: str) -> Path:
    """`net.ipv4.tcp_sack` → /proc/sys/net/ipv4/tcp_sack (of the reader's namespace)."""
    return PROC_SYS / key.replace(".", "/")


def exists(key: str) -> bool:
    """Whether this kernel has the setting (a sysctl that came with a later kernel has no file)."""
    return path(key).exists()


def read(key: str, ns: str | None = None) -> str:
    """The value as the kernel prints it (stripped)."""
    if ns is None:
        return path(key).read_text().strip()
    return in_ns(ns, "sysctl", "-n", key).stdout.strip()


def write(key: str, value: str | int, ns: str | None = None) -> None:
    """Sets `key` to `value`, in namespace `ns` (None: this one); HostError naming the key
    when the kernel refuses it."""
    args = ["sysctl", "-q", "-w", f"{key}={value}"]
    if ns is None:
        run(args)
    else:
        in_ns(ns, *args)
