"""The kernel knobs shortflow sets, made concrete for the kernel it runs on: the table
(`_core.kernel_knobs()`, defined once in crates/scenario) gives each knob's setter, unit
and range, with bounds in jiffies where the kernel counts in them; this module turns them
into seconds at the running kernel's HZ (`kernel_hz`), checks a value against them and
encodes it the way the kernel is handed it. The testbed's `realize` and `shortflow tune`
both decide and encode through here.

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
from shortflow.host.commands import HostError


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
    name: str
    set_by: str
    knob: str
    encoding: str
    min: dict[str, int]
    max: dict[str, int]
    limit: str
    read_back: str

    def _bound(self, b: dict[str, int], hz: int) -> float:
        ((kind, v),) = b.items()
        if kind == "ns":
            return v / 1e9
        if kind == "jiffies":
            return v / hz
        return float(v)

    def limits(self, hz: int) -> tuple[float, float]:
        """The range the kernel takes: seconds for a time (at `hz`), else a count."""
        return self._bound(self.min, hz), self._bound(self.max, hz)

    def takes(self, value: float, hz: int) -> bool:
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


@functools.cache
def knob(name: str, set_by: str) -> Knob:
    """The knob `name` set by `set_by` (`sysctl`, `route_metric`, `bpf_field`)."""
    for k in _table()["knobs"]:
        if k["name"] == name and k["set_by"] == set_by:
            return Knob(**k)
    raise HostError(f"no kernel knob {name!r} set by {set_by!r} in the table (crates/scenario/src/kernel.rs)")


def knobs() -> list[Knob]:
    return [Knob(**k) for k in _table()["knobs"]]
