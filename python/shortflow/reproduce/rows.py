"""One reproduced figure (`Row`), the mechanism offered for a difference (`Why`), and how
a document's module runs a shipped scenario and makes its rows: the pieces every
`docNNN` module and the real-kernel column share, below the package that gathers them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from shortflow.scenario import Scenario
from shortflow.simulate import SimulationResult, simulate


@dataclass
class Row:
    """One figure: the paper's number beside ours."""

    document: str
    figure: str
    case: str
    paper: float | None
    ours: float | None
    unit: str
    scenario: str
    overrides: list[str] = field(default_factory=list)
    note: str = ""
    #: The same case on this machine's real kernel (`reproduce --real`), and why not.
    real: float | None = None
    real_note: str = ""
    #: The same case on the real kernel with `shortflow tune --syn-rto` on the row's side.
    real_tune: float | None = None
    #: The mechanism offered for a difference, and the difference it accounts for.
    why: Why | None = field(default=None, repr=False, compare=False)

    def as_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("why")
        return d

    @property
    def command(self) -> str:
        sets = " ".join(f"--set '{o}'" for o in self.overrides)
        return f"shortflow simulate {self.scenario} {sets}".strip()


@dataclass(frozen=True)
class Why:
    """A mechanism that explains a difference, with the difference (paper − ours, in the
    row's unit) it can account for. A difference outside [low, high] is not explained by it:
    the note then says so, with the figures, instead of repeating a canned sentence."""

    text: str
    low: float
    high: float
    #: Where the mechanism puts our own figure, when it says (e.g. 200 ms per resend).
    ours_range: tuple[float, float] | None = None

    def note(self, paper: float, ours: float, unit: str) -> str:
        d = paper - ours
        if self.ours_range and not self.ours_range[0] <= ours <= self.ours_range[1]:
            lo, hi = self.ours_range
            return (f"UNEXPLAINED: ours {ours:.4g} {unit} is not the {lo:.4g} to {hi:.4g} {unit} this mechanism gives: "
                    f"{self.text}")
        if self.low <= d <= self.high:
            return f"{self.text} (paper − ours = {d:+.4g} {unit})"
        return (f"UNEXPLAINED: paper − ours = {d:+.4g} {unit}, outside the {self.low:+.4g} to {self.high:+.4g} {unit} "
                f"that this accounts for: {self.text}")


#: A difference no mechanism is offered for: any difference is reported unexplained.
NONE = Why("no mechanism known to make these differ", 0.0, 0.0)


def agrees(paper: float | None, ours: float | None, rel: float = 0.01, abs_: float = 0.001) -> bool:
    """Whether two figures agree within 1 % (or 1 ms for figures near zero): anything
    further apart is a difference, and a difference is always explained."""
    if paper is None or ours is None:
        return False
    return abs(paper - ours) <= max(abs_, rel * abs(paper))


def run_case(name: str, overrides: Iterable[str], *, timeline: bool = False) -> tuple[SimulationResult, str, list[str]]:
    """Runs built-in scenario `name` with `overrides`; returns the result, file and overrides."""
    ov = list(overrides)
    sc = Scenario.builtin(name, ov)
    return simulate(sc, timeline=timeline), f"scenarios/{name}.toml", ov


def row(document: str, figure: str, case: str, paper: float | None, ours: float | None, unit: str,
        scenario: str, overrides: list[str], why: Why, *, today: str = "") -> Row:
    """A row whose note, when the figures differ, is `why` checked against the actual
    difference (or `today` when the paper has none)."""
    if paper is None:
        note = today
    elif ours is None:
        note = "no result: the simulated connection did not complete"
    else:
        note = "" if agrees(paper, ours) else why.note(paper, ours, unit)
    return Row(document, figure, case, paper, ours, unit, scenario, overrides, note, why=why)
