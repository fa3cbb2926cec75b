"""Network namespaces and links, read through `ip -j` (JSON), never by scraping `ip`'s text
output, whose layout changes between iproute2 versions."""

from __future__ import annotations

import json
import os
import signal
import time
from typing import Any

from shortflow.host.commands import HostError, in_ns, run


def _ip_json(*args: str) -> list[dict[str, Any]]:
    """`ip -j ARGS` parsed; an empty list when there is nothing (ip prints nothing at all
    for an empty `netns list`)."""
    out = run(["ip", "-j", *args]).stdout.strip()
    if not out:
        return []
    try:
        rows = json.loads(out)
    except json.JSONDecodeError as e:
        raise HostError(f"`ip -j {' '.join(args)}` printed something that is not JSON ({e})") from None
    if not isinstance(rows, list):
        raise HostError(f"`ip -j {' '.join(args)}` printed {type(rows).__name__}, not a list")
    return rows


def namespaces() -> list[str]:
    """The names of the named network namespaces (`ip netns list`)."""
    return [str(row["name"]) for row in _ip_json("netns", "list") if "name" in row]


def links(ns: str | None = None) -> list[str]:
    """The interface names in `ns` (the root namespace when None), without the `@peer`
    suffix that the text output adds to veths."""
    args = ("-n", ns, "link", "show") if ns else ("link", "show")
    return [str(row["ifname"]) for row in _ip_json(*args) if "ifname" in row]


def create_namespace(ns: str) -> None:
    """A new named network namespace with its loopback up."""
    run(["ip", "netns", "add", ns])
    in_ns(ns, "ip", "link", "set", "lo", "up")


def delete_namespace(ns: str) -> bool:
    """Deletes `ns` (its links and sockets go with it); False when it did not exist."""
    return run(["ip", "netns", "del", ns], check=False).returncode == 0


def add_veth(end: tuple[str, str], peer: tuple[str, str]) -> None:
    """A veth pair made directly inside two namespaces, each end given as (name,
    namespace): no end ever sits in the root namespace."""
    run(["ip", "link", "add", end[0], "netns", end[1], "type", "veth", "peer", "name", peer[0], "netns", peer[1]])


def set_up(ns: str, dev: str, address: str, *, gso_max_segs: int | None = None) -> None:
    """Gives `dev` in `ns` its address (`10.0.0.1/24`) and brings it up; with
    `gso_max_segs`, caps the segments the stack hands it in one super-packet (where the
    kernel takes the setting)."""
    in_ns(ns, "ip", "addr", "add", address, "dev", dev)
    if gso_max_segs is not None:
        in_ns(ns, "ip", "link", "set", dev, "gso_max_segs", str(gso_max_segs), check=False)
    in_ns(ns, "ip", "link", "set", dev, "up")


def delete_link(name: str) -> bool:
    """Deletes link `name` of this namespace (a veth takes its peer with it); False when
    there was none."""
    return run(["ip", "link", "del", name], check=False).returncode == 0


def link_exists(name: str) -> bool:
    """Whether `name` is a link of this network namespace, as the kernel answers (not
    /sys/class/net, which shows the namespace sysfs was mounted in)."""
    return name in links()


def namespace_pids(ns: str) -> list[int] | None:
    """The processes inside `ns`; None when it does not exist."""
    r = run(["ip", "netns", "pids", ns], check=False)
    if r.returncode != 0:
        return None
    return [int(x) for x in r.stdout.split()]


def kill_namespace(ns: str) -> bool:
    """Kills every process inside `ns` (SIGTERM, then SIGKILL) and deletes it. False when it
    did not exist."""
    pids = namespace_pids(ns)
    if pids is None:
        return False
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        if not pids:
            break
        time.sleep(0.2)
        pids = namespace_pids(ns) or []
    delete_namespace(ns)
    return True
