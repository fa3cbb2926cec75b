"""Route-metric and sysctl fallbacks (hosts without BPF, and the knobs BPF has none for):
the default routes' `initcwnd`, `rto_min`, `quickack`,
`net.ipv4.tcp_slow_start_after_idle` and the kernel table's sysctls asked for with `--set`.
Each change records the exact line or value it replaced so that revert puts it back."""

from __future__ import annotations

import shlex

from shortflow.exceptions import TuneError
from shortflow.host import kernel_hz, knobs, routes, sysctl
from shortflow.host.commands import raising
from shortflow.host.knobs import knob
from shortflow.host.routes import replaceable
from shortflow.tune.settings import TuneSettings

SLOW_START_AFTER_IDLE = "net.ipv4.tcp_slow_start_after_idle"

default_routes = raising(TuneError, routes.default_routes)
_replace = raising(TuneError, knobs.set_route)
_sysctl = raising(TuneError, knobs.set_sysctl)

__all__ = ["SLOW_START_AFTER_IDLE", "apply", "default_routes", "plan", "replaceable", "route_options", "undo"]


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
            new = " ".join(_without(replaceable(line), set(opts[0::2])) + opts)
            changes.append({"kind": "route", "family": family, "before": line, "after": new})
    if s.slow_start_after_idle is not None:
        old = sysctl.read(SLOW_START_AFTER_IDLE)
        changes.append({"kind": "sysctl", "key": SLOW_START_AFTER_IDLE, "before": old,
                        "after": str(int(s.slow_start_after_idle))})
    for name, value in s.sysctls.items():
        k = knob(name, "sysctl")
        changes.append({"kind": "sysctl", "key": k.knob, "before": sysctl.read(k.knob),
                        "after": str(k.encode(value, kernel_hz()))})
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

