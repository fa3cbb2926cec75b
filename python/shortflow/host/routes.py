"""Routes: the default routes of a namespace and `ip route replace`, in one place.

Routes are read as the text `ip -o route show` prints because that text is what `ip route
replace` takes back: restoring a route exactly (metrics, flags and all) is a round trip
through it, which `ip -j`'s JSON has no inverse for. The few words `show` prints that
`replace` refuses are dropped here (`replaceable`), nowhere else."""

from __future__ import annotations

import shlex

from shortflow.host.commands import in_ns, run

#: Words `ip route show` prints about a route's state that `ip route replace` does not take.
STATE_FLAGS = {"linkdown", "dead", "onlink", "pervasive", "offload", "trap", "rt_offload", "rt_trap", "rt_offload_failed"}


def _ip(args: list[str], ns: str | None) -> str:
    return (in_ns(ns, "ip", *args) if ns else run(["ip", *args])).stdout


def default_routes(ns: str | None = None) -> list[tuple[str, str]]:
    """(family flag, route line) of every default route in `ns` (None: this namespace)."""
    out = []
    for family in ("-4", "-6"):
        for line in _ip([family, "-o", "route", "show", "default"], ns).splitlines():
            if line.strip():
                out.append((family, line.strip()))
    return out


def replaceable(line: str) -> list[str]:
    """A shown route as arguments `ip route replace` takes: state flags dropped, and the
    `lock` that `show` prints after `rto_min` (always locked; its parser takes no `lock`)."""
    tokens = [t for t in shlex.split(line) if t not in STATE_FLAGS]
    return [t for i, t in enumerate(tokens) if not (t == "lock" and i > 0 and tokens[i - 1] == "rto_min")]


def replace(route: list[str], *, family: str | None = None, ns: str | None = None) -> None:
    """`ip [FAMILY] route replace ROUTE…` in `ns`: creates the route or changes it in place."""
    _ip([*([family] if family else []), "route", "replace", *route], ns)

