"""Route-metric and sysctl fallbacks (hosts without BPF, and the knobs BPF has none for):
the default routes' `initcwnd`, `rto_min`, `quickack`, and
`net.ipv4.tcp_slow_start_after_idle`. Each change records the exact line or value it
replaced so that revert puts it back."""

from __future__ import annotations

import ipaddress
import re
import shlex

from shortflow.exceptions import TuneError
from shortflow.host import knobs, routes, sysctl
from shortflow.host.commands import raising
from shortflow.host.knobs import knob
from shortflow.host.routes import STATE_FLAGS, replaceable
from shortflow.tune.settings import TuneSettings

SLOW_START_AFTER_IDLE = "net.ipv4.tcp_slow_start_after_idle"

default_routes = raising(TuneError, routes.default_routes)
_replace = raising(TuneError, knobs.set_route)
_sysctl = raising(TuneError, knobs.set_sysctl)

__all__ = ["SLOW_START_AFTER_IDLE", "apply", "default_routes", "foreign_change", "plan", "replaceable", "route_options",
           "undo"]

#: The metrics the tuner sets on a default route (`route_options`).
TUNER_METRICS = ("initcwnd", "rto_min", "quickack")
#: The words `ip -o route show default` prints before a value, and what the value must be;
#: and the words it prints alone. A route line with any other word is not one the kernel
#: showed the tuner: a journal holding it was written by hand.
_NUMBER = re.compile(r"^[0-9]{1,10}$")
_TIME = re.compile(r"^[0-9]{1,10}(\.[0-9]{1,6})?(us|ms|s)?$")
_NAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,32}$")
_VALUE = {"dev": _NAME, "proto": _NAME, "metric": _NUMBER, "table": _NAME, "pref": re.compile(r"^(low|medium|high)$"),
          "scope": _NAME, "mtu": _NUMBER, "advmss": _NUMBER, "initcwnd": _NUMBER, "initrwnd": _NUMBER,
          "rto_min": _TIME, "quickack": re.compile(r"^[01]$"), "congctl": _NAME, "features": _NAME,
          "hoplimit": _NUMBER, "expires": re.compile(r"^[0-9]{1,10}sec$"), "realm": _NAME, "window": _NUMBER,
          "rtt": _TIME, "rttvar": _TIME, "ssthresh": _NUMBER, "cwnd": _NUMBER, "reordering": _NUMBER,
          "fastopen_no_cookie": re.compile(r"^[01]$")}
_ADDRESS_AFTER = {"via", "src"}
#: Metrics `show` may print as `mtu lock 1400`.
_LOCKABLE = {"mtu", "advmss", "initcwnd", "initrwnd", "rto_min", "hoplimit", "window", "rtt", "rttvar", "ssthresh",
             "cwnd", "reordering", "congctl"}


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
        opts += ["rto_min", str(knob("rto_min", "route_metric").encode(s.rto_min_s))]
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
            why = _shown_route_why_not(line)
            if why:
                raise TuneError(f"the default route cannot be changed and restored exactly: {why}")
            new = " ".join(_without(replaceable(line), set(opts[0::2])) + opts)
            changes.append({"kind": "route", "family": family, "before": line, "after": new})
    if s.slow_start_after_idle is not None:
        old = sysctl.read(SLOW_START_AFTER_IDLE)
        changes.append({"kind": "sysctl", "key": SLOW_START_AFTER_IDLE, "before": old,
                        "after": str(int(s.slow_start_after_idle))})
    return changes


def apply(change: dict[str, object]) -> None:
    if change["kind"] == "route":
        _replace(shlex.split(str(change["after"])), family=str(change["family"]))
    else:
        _sysctl(str(change["key"]), str(change["after"]))


def undo(change: dict[str, object]) -> None:
    if change["kind"] == "route":
        # The route as it was, metrics and all: replace puts the old line back exactly.
        _replace(replaceable(str(change["before"])), family=str(change["family"]))
    else:
        _sysctl(str(change["key"]), str(change["before"]))



def _shown_route_why_not(line: str) -> str | None:
    """Why `line` is not a default route as `ip -o route show default` prints one (its
    words checked one by one against that grammar), None when it is."""
    try:
        tokens = shlex.split(line)
    except ValueError as e:
        return f"{line!r} does not split into words ({e})"
    if not tokens or tokens[0] != "default":
        return f"{line!r} is not a default route"
    if " ".join(tokens) != " ".join(line.split()):
        # Re-rendered from its words, it must read the same: `ip` prints no quotes or escapes.
        return f"{line!r} holds quoting `ip route show` never prints"
    i = 1
    while i < len(tokens):
        word = tokens[i]
        if word in STATE_FLAGS or word == "onlink":
            i += 1
            continue
        if word in _ADDRESS_AFTER:
            value = tokens[i + 1: i + 3]
            if value[:1] == ["inet6"] or value[:1] == ["inet"]:
                value = value[1:]
                i += 1
            try:
                ipaddress.ip_address((value or [""])[0])
            except ValueError:
                return f"{line!r}: {word} takes an address, not {(value or [''])[0]!r}"
            i += 2
            continue
        if word not in _VALUE:
            return f"{line!r}: {word!r} is not a word `ip route show` prints for a default route"
        if word in _LOCKABLE and i + 1 < len(tokens) and tokens[i + 1] == "lock":
            i += 1
        shown = tokens[i + 1] if i + 1 < len(tokens) else ""
        if not _VALUE[word].match(shown):
            return f"{line!r}: {word} {shown!r} is not a value `ip route show` prints"
        i += 2
    return None


def foreign_change(before: str, after: str) -> str | None:
    """Why a journalled route change (`before` → `after`) is not one `plan` can produce —
    a route the kernel showed, changed in the tuner's metrics only — or None when it is.
    A journal is checked with this before anything in it is obeyed."""
    why = _shown_route_why_not(before) or _shown_route_why_not(after)
    if why:
        return why
    tail, keys = shlex.split(after), set()
    while len(tail) >= 3 and tail[-2] in TUNER_METRICS and tail[-2] not in keys:
        keys.add(tail[-2])
        tail = tail[:-2]
    if not keys:
        return f"after {after!r} sets none of the tuner's metrics ({', '.join(TUNER_METRICS)})"
    if tail != _without(replaceable(before), keys):
        return (f"after {after!r} is not before {before!r} with the tuner's metrics ({', '.join(sorted(keys))}) "
                "changed: other words differ")
    return None
