"""Route-metric and sysctl fallbacks (hosts without BPF, and the knobs BPF has none for):
the default routes' `initcwnd`, `rto_min`, `quickack`, and
`net.ipv4.tcp_slow_start_after_idle`. Each change records the exact line or value it
replaced so that revert puts it back."""

from __future__ import annotations

import shlex
from pathlib import Path

from shortflow.exceptions import TuneError
from shortflow.host import HostError, run
from shortflow.tune.settings import TuneSettings

SLOW_START_AFTER_IDLE = "net.ipv4.tcp_slow_start_after_idle"
def _ip(*args: str) -> str:
    try:
        return run(["ip", *args]).stdout
    except HostError as e:
        raise TuneError(str(e)) from None


def default_routes() -> list[tuple[str, str]]:
    """(family flag, route line) of every default route in this network namespace."""
    out = []
    for family in ("-4", "-6"):
        for line in _ip(family, "-o", "route", "show", "default").splitlines():
            if line.strip():
                out.append((family, line.strip()))
    return out


#: Words `ip route show` prints about a route's state that `ip route replace` does not take.
STATE_FLAGS = {"linkdown", "dead", "onlink", "pervasive", "offload", "trap", "rt_offload", "rt_trap", "rt_offload_failed"}


def replaceable(line: str) -> list[str]:
    """A shown route as arguments `ip route replace` takes: state flags dropped, and the
    `lock` that `show` prints after `rto_min` (always locked; its parser takes no `lock`)."""
    tokens = [t for t in shlex.split(line) if t not in STATE_FLAGS]
    return [t for i, t in enumerate(tokens) if not (t == "lock" and i > 0 and tokens[i - 1] == "rto_min")]


def _without(tokens: list[str], metrics: set[str]) -> list[str]:
    """`tokens` without the given metrics (and their `lock` and value)."""
    kept, i = [], 0
    while i < len(tokens):
        if tokens[i] in metrics:
            i += 1
            if i < len(tokens) and tokens[i] == "lock":
                i += 1
            i += 1
            continue
        kept.append(tokens[i])
        i += 1
    return kept


def route_options(s: TuneSettings, *, with_iw_and_rto: bool) -> list[str]:
    opts: list[str] = []
    if with_iw_and_rto and s.iw is not None:
        opts += ["initcwnd", str(s.iw)]
    if with_iw_and_rto and s.rto_min_s is not None:
        opts += ["rto_min", f"{round(s.rto_min_s * 1000)}ms"]
    if s.quickack:
        opts += ["quickack", "1"]
    return opts


def plan(s: TuneSettings, *, with_iw_and_rto: bool) -> list[dict[str, object]]:
    """The route and sysctl changes, each with what it replaces."""
    changes: list[dict[str, object]] = []
    opts = route_options(s, with_iw_and_rto=with_iw_and_rto)
    if opts:
        routes = default_routes()
        if not routes:
            raise TuneError("no default route to set initcwnd/rto_min/quickack on")
        for family, line in routes:
            new = " ".join(_without(replaceable(line), set(opts[0::2])) + opts)
            changes.append({"kind": "route", "family": family, "before": line, "after": new})
    if s.slow_start_after_idle is not None:
        old = Path("/proc/sys/net/ipv4/tcp_slow_start_after_idle").read_text().strip()
        changes.append({"kind": "sysctl", "key": SLOW_START_AFTER_IDLE, "before": old,
                        "after": str(int(s.slow_start_after_idle))})
    return changes


def apply(change: dict[str, object]) -> None:
    if change["kind"] == "route":
        _ip(str(change["family"]), "route", "replace", *shlex.split(str(change["after"])))
    else:
        _sysctl(str(change["key"]), str(change["after"]))


def undo(change: dict[str, object]) -> None:
    if change["kind"] == "route":
        # The route as it was, metrics and all: replace puts the old line back exactly.
        _ip(str(change["family"]), "route", "replace", *replaceable(str(change["before"])))
    else:
        _sysctl(str(change["key"]), str(change["before"]))


def _sysctl(key: str, value: str) -> None:
    try:
        run(["sysctl", "-q", "-w", f"{key}={value}"])
    except HostError as e:
        raise TuneError(str(e)) from None
