"""Route-metric and sysctl fallbacks (hosts without BPF, and the knobs BPF has none for):
the default routes' `initcwnd`, `rto_min`, `quickack`,
`net.ipv4.tcp_slow_start_after_idle` and the kernel table's sysctls asked for with `--set`.
Each change records what it replaced — a route as its fields (`host.routes.Route`), a
sysctl as its value — so that revert puts it back exactly."""

from __future__ import annotations

from typing import Any

from shortflow.exceptions import TuneError
from shortflow.host import kernel_hz, knobs, routes, sysctl
from shortflow.host.commands import raising
from shortflow.host.knobs import knob
from shortflow.host.routes import Route
from shortflow.tune.settings import TuneSettings

SLOW_START_AFTER_IDLE = "net.ipv4.tcp_slow_start_after_idle"

default_routes = raising(TuneError, routes.default_routes)
_put = raising(TuneError, knobs.put_route)
_sysctl = raising(TuneError, knobs.set_sysctl)

__all__ = ["SLOW_START_AFTER_IDLE", "TUNER_METRICS", "Route", "apply", "default_routes", "plan",
           "route_changes_only_tuner_metrics", "route_of", "route_options", "undo"]


def route_options(s: TuneSettings, *, with_iw_and_rto: bool) -> dict[str, int | str]:
    """The route metrics the settings ask for, each as `ip route` writes it."""
    opts: dict[str, int | str] = {}
    if with_iw_and_rto and s.iw is not None:
        opts["initcwnd"] = s.iw
    if with_iw_and_rto and s.rto_min_s is not None:
        opts["rto_min"] = round(s.rto_min_s * 1000)
    if s.quickack:
        opts["quickack"] = 1
    return opts


def route_of(change: dict[str, Any], which: str) -> Route:
    """The `before` or `after` route of a journalled change, checked: TuneError naming the
    part shortflow could not have written."""
    try:
        return Route.from_json(change[which])
    except ValueError as e:
        raise TuneError(f"route {which}: {e}") from None


def plan(s: TuneSettings, *, with_iw_and_rto: bool) -> list[dict[str, object]]:
    """The route and sysctl changes, each with what it replaces."""
    changes: list[dict[str, object]] = []
    opts = route_options(s, with_iw_and_rto=with_iw_and_rto)
    if opts:
        found = default_routes()
        if not found:
            raise TuneError("no default route to set initcwnd/rto_min/quickack on")
        for r in found:
            changes.append({"kind": "route", "family": r.family, "before": r.as_json(),
                            "after": r.with_metrics(opts).as_json()})
    if s.slow_start_after_idle is not None:
        old = sysctl.read(SLOW_START_AFTER_IDLE)
        changes.append({"kind": "sysctl", "key": SLOW_START_AFTER_IDLE, "before": old,
                        "after": str(int(s.slow_start_after_idle))})
    for name, value in s.sysctls.items():
        k = knob(name, "sysctl")
        changes.append({"kind": "sysctl", "key": k.knob, "before": sysctl.read(k.knob),
                        "after": str(k.encode(value, kernel_hz()))})
    return changes


def shown(change: dict[str, Any], which: str) -> str:
    """A change's `before` or `after` as a person reads it: the route as `ip route` writes it."""
    return route_of(change, which).show() if change["kind"] == "route" else str(change[which])


def apply(change: dict[str, Any]) -> None:
    if change["kind"] == "route":
        _put(route_of(change, "after"))
    else:
        _sysctl(str(change["key"]), str(change["after"]))


def undo(change: dict[str, Any]) -> None:
    if change["kind"] == "route":
        # The route as it was, metrics, locks and all.
        _put(route_of(change, "before"))
    else:
        _sysctl(str(change["key"]), str(change["before"]))


#: The metrics the tuner sets on a default route (`route_options`).
TUNER_METRICS = ("initcwnd", "rto_min", "quickack")


def route_changes_only_tuner_metrics(before: Route, after: Route) -> str | None:
    """Why a journalled route change (`before` → `after`) is not one `plan` can produce —
    the route as it was with the tuner's metrics set, nothing else changed — or None when
    it is. A journal is checked with this before anything in it is obeyed."""
    # The tuner's metrics the change set (a metric it asks for that the route already had
    # as asked stays as it was, its lock too).
    set_here = {w: v for w, v, lock in after.metrics if w in TUNER_METRICS and (w, v, lock) not in before.metrics}
    if not set_here and after != before:
        return f"after {after.show()!r} sets none of the tuner's metrics ({', '.join(TUNER_METRICS)})"
    if before.with_metrics(set_here) != after:
        return (f"after {after.show()!r} is not before {before.show()!r} with the tuner's metrics "
                f"({', '.join(sorted(set_here))}) set: other parts differ")
    return None
