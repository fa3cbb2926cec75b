"""`shortflow reproduce`: each figure of the source documents beside the simulator's.

Every row names the scenario file it ran (shipped in ``shortflow/scenarios/``) and the
``--set`` overrides, so ``shortflow simulate`` can run it again by hand, and carries one
line explaining a difference when there is one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
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


def _registry(quick: bool) -> dict[str, Callable[[], list[Row]]]:
    from shortflow.reproduce import doc000, doc001, doc002, doc003, doc004

    return {"000": doc000.rows, "001": lambda: doc001.rows(quick), "002": doc002.rows, "003": doc003.rows,
            "004": lambda: doc004.rows(quick)}


DOCUMENTS = ("000", "001", "002", "003", "004")
#: Documents whose full run takes minutes (aggregate traffic over several seeds).
SLOW_DOCUMENTS = ("001", "004")
#: Documents whose figures also run on the real kernel with `--real`.
REAL_DOCUMENTS = ("000",)


def reproduce(documents: Iterable[str] = DOCUMENTS, *, real: bool = False, quick: bool = False,
              progress: Callable[[int, int, Row], None] | None = None) -> list[Row]:
    """All rows for `documents` ("000" to "004"). With `quick`, documents 001 and 004 run
    shortened (60 s / 10 s of traffic, 2 seeds, fewer points) instead of their full sets
    (300 s / 60 s, 5 seeds), which take minutes. With `real`, the rows of
    `REAL_DOCUMENTS` also run on this machine's kernel in the testbed (root; slow: each
    case is a real run with real timeouts); `progress(done, total, row)` is called before
    each real run."""
    reg = _registry(quick)
    rows: list[Row] = []
    for d in documents:
        rows.extend(reg[d]())
    if real:
        from shortflow.reproduce.real import add_real_column

        add_real_column([r for r in rows if r.document in REAL_DOCUMENTS], progress)
    return rows
