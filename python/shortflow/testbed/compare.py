"""Simulator beside real kernel: the same scenario document run in both worlds, each
per-connection figure set side by side with a verdict.

Agreement (issues 4 and 14): times within 5 % or 10 ms, whichever is larger, widened by
the range Linux's timer wheel may add to the timers the simulated connection waited for
(its `timer_slack_s`: at HZ 250 a 260 ms RTO may fire up to 32 ms late); counts exactly,
the loss-recovery counts against the kernel's own counters (nstat). A scenario the real
kernel cannot run (a profile Linux cannot mimic) still gets the simulator's column and the
reason there is no real one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shortflow.exceptions import ScenarioError
from shortflow.scenario import Scenario
from shortflow.simulate import simulate

#: Figures compared, and whether each is a time (tolerance) or a count (exact).
TIMES = ("request_sent_s", "complete_s")
COUNTS = ("syn_transmissions", "synack_transmissions", "retransmissions", "timeouts", "fast_retransmits",
          "tlp_probes", "spurious_timeouts", "dsacks")
#: Counts the kernel measures per namespace only (None in runs of several connections).
KERNEL_COUNTS = ("timeouts", "fast_retransmits", "tlp_probes", "spurious_timeouts", "dsacks")
KEYS = TIMES + COUNTS

REL_TOLERANCE = 0.05
ABS_TOLERANCE_S = 0.010


def agrees(key: str, sim: Any, real: Any, slack_s: float = 0.0) -> bool | None:
    """Whether the two worlds agree on `key`; None when the real world did not measure it
    (e.g. per-connection timeouts in a run of several connections). `slack_s`: how much
    later the kernel's timer wheel may have fired the timers involved."""
    if real is None and key in KERNEL_COUNTS:
        return None
    if sim is None or real is None:
        return sim is None and real is None
    if key in TIMES:
        return bool(abs(sim - real) <= max(REL_TOLERANCE * abs(sim), ABS_TOLERANCE_S) + slack_s)
    return bool(sim == real)


@dataclass
class Comparison:
    scenario: str
    source: str
    overrides: list[str]
    sim: list[dict[str, Any]]
    real: list[dict[str, Any]] | None
    #: Why there is no real column (the scenario asks for what Linux cannot do).
    unavailable: str = ""
    run_id: str = ""
    verdicts: list[dict[str, bool | None]] = field(default_factory=list)

    @property
    def agree(self) -> bool | None:
        """True when every measured figure agrees; None without a real run."""
        if self.real is None:
            return None
        return all(v is not False for row in self.verdicts for v in row.values())

    def as_json(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "source": self.source, "overrides": self.overrides, "simulator": self.sim,
                "real": self.real, "unavailable": self.unavailable, "run_id": self.run_id,
                "verdicts": self.verdicts, "agree": self.agree}


def compare(scenario: str | Path | Scenario, overrides: Iterable[str] = (), pcap_dir: Path | None = None) -> Comparison:
    """Runs `scenario` (+ overrides) in the simulator and, when Linux can, on the real kernel."""
    from shortflow import testbed

    sc = scenario if isinstance(scenario, Scenario) else Scenario.load(Path(scenario))
    extra = tuple(overrides)
    if extra:
        sc = sc.with_overrides(*extra)
    sim = simulate(sc)
    out = Comparison(sim.scenario.name, sc.source, list(sc.overrides), sim.connections, None)
    try:
        real_scenario = testbed.load(sc)
    except ScenarioError as e:
        out.unavailable = str(e)
        return out
    real = testbed.run(real_scenario, str(pcap_dir) if pcap_dir else None)
    out.real, out.run_id = real["connections"], real["run_id"]
    for i, s in enumerate(sim.connections):
        r = out.real[i] if i < len(out.real) else {}
        slack = float(s.get("timer_slack_s") or 0.0)
        out.verdicts.append({k: agrees(k, s.get(k), r.get(k), slack) for k in KEYS})
    return out
