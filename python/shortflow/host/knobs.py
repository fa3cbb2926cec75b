"""The kernel knobs shortflow sets, made concrete for the kernel it runs on: the table
(`_core.kernel_knobs()`, defined once in crates/scenario) gives each stack-profile field's
setters (or `fixed`: the kernel's own code), with unit, range and Linux's default, bounds in
jiffies where the kernel counts in them; this module turns them
into seconds at the running kernel's HZ (`kernel_hz`), checks a value against them,
encodes it the way the kernel is handed it, and sets sysctls and route metrics
(`set_sysctl`, `set_route`; a BPF field goes into the program's configuration, which
`shortflow.host.bpf` writes). The testbed's `realize` and `shortflow tune` both decide,
encode and apply through here.

    rto_min = knob("rto_min", "bpf_field")
    rto_min.limits(hz)          # (0.008, 0.2) at HZ 250
    rto_min.encode(0.05, hz)    # 50000 (µs, the BPF field's unit)
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from shortflow import _core
from shortflow.host import routes, sysctl
from shortflow.host.commands import HostError
from shortflow.host.kernel import kernel_hz


@functools.cache
def _table() -> dict[str, Any]:
    table: dict[str, Any] = json.loads(_core.kernel_knobs())
    return table


def constant(name: str) -> int:
    """One of Linux's constants the table carries (`TCP_RTO_MIN_ns`, `TCP_TIMEOUT_MIN_jiffies`, …)."""
    return int(_table()["constants"][name])


def seconds(name: str) -> float:
    """A time constant (`TCP_RTO_MIN`, `TCP_RTO_MAX`, …) in seconds."""
    return constant(f"{name}_ns") / 1e9


@dataclass(frozen=True)
class Knob:
    """One row: `field` is the stack-profile field the simulator takes the value from,
    `name` the setting as users name it, `set_by` one of sysctl, route_metric, bpf_field,
    module_parameter, fixed; `min`/`max`/`linux` ({"ns"|"jiffies"|"count": n}) may be None."""

    field: str
    name: str
    set_by: str
    knob: str
    encoding: str
    min: dict[str, int] | None
    max: dict[str, int] | None
    linux: dict[str, int] | None
    limit: str
    read_back: str

    def _bound(self, b: dict[str, int], hz: int) -> float:
        ((kind, v),) = b.items()
        if kind == "ns":
            return v / 1e9
        if kind == "jiffies":
            return v / hz
        return float(v)

    @property
    def bounded(self) -> bool:
        return self.min is not None and self.max is not None

    def limits(self, hz: int) -> tuple[float, float]:
        """The range the kernel takes: seconds for a time (at `hz`), else a count."""
        if self.min is None or self.max is None:
            raise HostError(f"{self.knob} has no range in the kernel table")
        return self._bound(self.min, hz), self._bound(self.max, hz)

    def takes(self, value: float, hz: int) -> bool:
        """Whether the kernel takes `value` (a knob without a range takes what its field allows)."""
        if not self.bounded:
            return True
        lo, hi = self.limits(hz)
        return lo <= value <= hi

    def encode(self, value: float, hz: int | None = None) -> int | str:
        """`value` (seconds for a time, else a count) as the kernel is handed it: whole
        jiffies (at `hz`), microseconds or milliseconds; a route metric's milliseconds carry
        their unit."""
        if self.encoding == "jiffies":
            if hz is None:
                raise HostError(f"{self.knob} counts jiffies: the kernel's HZ is needed to encode it")
            return round(value * hz)
        if self.encoding == "microseconds":
            return round(value * 1e6)
        if self.encoding == "milliseconds":
            ms = round(value * 1000)
            return f"{ms}ms" if self.set_by == "route_metric" else ms
        return int(value)

    def decode(self, encoded: int, hz: int) -> float:
        """A value as the kernel holds it, back in seconds (a time) or as a count."""
        per_second = {"jiffies": hz, "microseconds": 1_000_000, "milliseconds": 1000}.get(self.encoding, 1)
        return encoded / per_second


@functools.cache
def knob(name: str, set_by: str) -> Knob:
    """The knob `name` set by `set_by` (`sysctl`, `route_metric`, `bpf_field`)."""
    for k in _table()["knobs"]:
        if k["name"] == name and k["set_by"] == set_by:
            return Knob(**k)
    raise HostError(f"no kernel knob {name!r} set by {set_by!r} in the table (crates/scenario/src/kernel.rs)")


def find(name: str, set_by: str) -> Knob | None:
    """The knob `name` set by `set_by`, None when the table has none."""
    try:
        return knob(name, set_by)
    except HostError:
        return None


def knobs() -> list[Knob]:
    return [Knob(**k) for k in _table()["knobs"]]


def for_field(field: str) -> list[Knob]:
    """The rows of stack-profile field `field`, in the table's order."""
    return [k for k in knobs() if k.field == field]


def set_sysctl(key: str, value: str | int, ns: str | None = None) -> None:
    """Writes sysctl `key` in namespace `ns` (None: this one). A sysctl of the table is held
    to its range first: HostError naming the knob and the range, before the kernel is asked."""
    for k in knobs():
        if k.set_by == "sysctl" and k.knob == key and k.bounded and isinstance(value, int):
            hz = kernel_hz()
            if not k.takes(k.decode(value, hz), hz):
                lo, hi = k.limits(hz)
                raise HostError(f"{key} = {value}: the kernel takes {k.encode(lo, hz)} to {k.encode(hi, hz)} ({k.limit})")
    sysctl.write(key, value, ns)


def set_route(route: list[str], *, family: str | None = None, ns: str | None = None) -> None:
    """Sets a route with its metrics (`… initcwnd 10 rto_min 50ms quickack 1`): the setter of
    every route-metric knob, each already encoded (`Knob.encode`)."""
    routes.replace(route, family=family, ns=ns)


def put_route(route: routes.Route, ns: str | None = None) -> None:
    """Sets `route` exactly as it stands, metrics and locks: how tune changes a default route's
    route-metric knobs and puts the route back."""
    routes.put(route, ns)
