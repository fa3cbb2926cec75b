"""A resolved scenario as the testbed reads it: a thin view of the scenario model's own
resolution (`shortflow._core.resolve_scenario`, the Rust crate `shortflow-scenario`), with
every default filled in and every value normalised (ns, bytes, bit/s). Nothing here parses
a scenario: the file, its units and its `--set` overrides are read once, in Rust.

`load` also realises the scenario for this kernel (`realize.realize`, a module below this
one: it reads only the resolution and the path): a `RealScenario` always carries the
`LinuxPlan` the testbed applies, or `load` raises naming the field Linux cannot set.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shortflow import _core
from shortflow.scenario import Scenario
from shortflow.testbed.realize import LinuxPlan, realize

NS = 1e9


def resolve(sc: Scenario) -> dict[str, Any]:
    """The resolved scenario as the model serialises it (`Scenario` in crates/scenario)."""
    return json.loads(_core.resolve_scenario(sc.text, sc.source, list(sc.overrides)))  # type: ignore[no-any-return]


@dataclass(frozen=True)
class SynOptimizer:
    """`[mechanisms] syn_optimizer`: document 000's tool, run as `shortflow synopt` in the
    namespace of `side`."""

    side: str
    delay_s: float
    retries: int
    ports: tuple[int, ...]


@dataclass
class RealScenario:
    """A resolved scenario (`resolved`, the model's JSON), the scenario it was resolved
    from (text and overrides, handed as they are to the emulator) and the plan realising it
    here."""

    path: Path
    resolved: dict[str, Any]
    plan: LinuxPlan | None = field(default=None, repr=False)
    scenario: Scenario | None = field(default=None, repr=False)

    # The values the testbed acts on, read from the resolved scenario.
    @property
    def name(self) -> str:
        return str(self.resolved["name"])

    @property
    def client(self) -> dict[str, Any]:
        return self.resolved["client"]  # type: ignore[no-any-return]

    @property
    def server(self) -> dict[str, Any]:
        return self.resolved["server"]  # type: ignore[no-any-return]

    @property
    def rtt_s(self) -> float:
        return float(self.resolved["path"]["rtt"]) / NS

    @property
    def bandwidth_bps(self) -> float:
        return float(self.resolved["path"]["bandwidth_bps"])

    @property
    def queue_packets(self) -> int | None:
        """The drop-tail queue's packets (realize refuses every other queue)."""
        q = self.resolved["path"]["queue"]
        return int(q["drop_tail_packets"]) if isinstance(q, dict) and "drop_tail_packets" in q else None

    @property
    def seed(self) -> int:
        """The random losses' seed (the emulator reads it from the scenario itself)."""
        return int(self.resolved["random_loss"]["seed"])

    @property
    def request_bytes(self) -> int:
        return int(self.resolved["workload"]["request"])

    @property
    def response_bytes(self) -> int:
        return int(self.resolved["workload"]["response"])

    @property
    def response_headers(self) -> int | None:
        """`workload.response_headers` when the scenario states a count; None when it is 0
        (the model's default). nginx always sends headers, so a stated 0 cannot hold on the
        real server either, and `testbed compare` then tells the simulator nginx's count."""
        n = int(self.resolved["workload"].get("response_headers", 0))
        return n or None

    @property
    def connections(self) -> int:
        return int(self.resolved["workload"]["connections"])

    @property
    def interval_s(self) -> float:
        return float(self.resolved["workload"]["interval"]) / NS

    @property
    def port(self) -> int:
        return int(self.resolved["workload"]["port"])

    @property
    def syn_optimizer(self) -> SynOptimizer | None:
        o = self.resolved.get("syn_optimizer")
        if o is None:
            return None
        return SynOptimizer(o["side"], o["delay"] / NS, int(o["retries"]), (int(o["port"]),))


def load(scenario: str | Path | Scenario, overrides: Iterable[str] = ()) -> RealScenario:
    """Resolves a scenario (a file, or a `Scenario` with its overrides) plus `overrides`
    (``key=value``, as ``shortflow simulate --set``) and realises it for this kernel; raises
    `ScenarioError` (a `RealizeError` when the model accepts it and Linux cannot run it)."""
    sc = scenario if isinstance(scenario, Scenario) else Scenario.load(Path(scenario))
    extra = tuple(overrides)
    if extra:
        sc = sc.with_overrides(*extra)
    s = RealScenario(Path(sc.source), resolve(sc), scenario=sc)
    s.plan = realize(s)
    return s
