"""`shortflow.simulate()`: run a scenario in the Rust simulator.

The run happens in `shortflow._core.simulate` with the GIL released; this module only
turns its JSON report into Python objects and a `pyarrow.Table`.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shortflow import _core
from shortflow._interrupt import interruptible
from shortflow.scenario import Scenario
from shortflow.units import parse_size

if TYPE_CHECKING:
    import pyarrow as pa

#: A connection's report as the core declares it: (key, unit, Rust type, meaning), in order.
REPORT_FIELDS: tuple[tuple[str, str, str, str], ...] = tuple(_core.report_fields())

#: The report's keys that hold one value each (not a list): every report has them, and
#: `SimulationResult.table` has a column of each.
CONNECTION_KEYS: tuple[str, ...] = tuple(name for name, _, ty, _ in REPORT_FIELDS if "Vec<" not in ty)

#: `--flows` columns, as the core declares them (crates/sim's report): the analyzer's name
#: where it measures the same quantity, the simulator's own otherwise; then the report's
#: key and the Arrow type's name. Names, not `pa` types, so that importing this module
#: (every `simulate` and `reproduce` command) does not import pyarrow (~0.1 s).
FLOW_COLUMNS: tuple[tuple[str, str, str], ...] = tuple(_core.FLOW_COLUMNS)


def _arrow_type(name: str) -> pa.DataType:
    import pyarrow as pa

    return pa.list_(pa.float64()) if name == "list<item: double>" else pa.type_for_alias(name)


#: Events a run may take by default (~3 minutes of this simulator at its usual speed).
DEFAULT_MAX_EVENTS = 2_000_000_000
#: Share of the machine's memory a run may take by default.
DEFAULT_MEMORY_SHARE = 0.25


def memory_budget(max_memory: int | str | None) -> int:
    """Bytes a run may use: `max_memory` as bytes or a size with its unit (``"2GB"``),
    or by default a quarter of this machine's physical memory."""
    if max_memory is None:
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            return 0
        return int(total * DEFAULT_MEMORY_SHARE)
    n = parse_size(max_memory, what="--max-memory") if isinstance(max_memory, str) else max_memory
    if n <= 0:
        raise ValueError(f"--max-memory {max_memory!r}: must be more than 0B")
    return n


@dataclass
class SimulationResult:
    """What one run produced: ``connections`` (one dict each), ``summary`` and the
    scenario it ran. ``table`` gives the connections as a `pyarrow.Table`."""

    scenario: Scenario
    connections: list[dict[str, Any]]
    summary: dict[str, Any]
    raw: dict[str, Any]

    @property
    def warnings(self) -> list[str]:
        """What the user should know (a run cut by its time limit, …)."""
        return list(self.raw.get("warnings", []))

    @property
    def incomplete(self) -> bool:
        """The run stopped at its time limit with connections not complete."""
        return bool(self.summary.get("time_limit_reached"))

    @property
    def table(self) -> pa.Table:
        """One row per connection, a column per key of `CONNECTION_KEYS`, named as the report names it."""
        import pyarrow as pa

        return pa.table({k: [c[k] for c in self.connections] for k in CONNECTION_KEYS})

    @property
    def flows(self) -> pa.Table:
        """One row per connection with the analyzer's column names where they mean the
        same (``conn_id``, ``first_ts_s``, ``syn_count``, ``handshake_rtt_s``,
        ``bytes_s2c`` ...), plus the simulator's (pair, sizes, completion, timeouts,
        mechanism counters, and ``rto_costs``: document 004's C(f) per timeout)."""
        import pyarrow as pa

        return pa.table({name: pa.array([c.get(key) for c in self.connections], type=_arrow_type(t))
                         for name, key, t in FLOW_COLUMNS})

    def metadata(self) -> dict[str, str]:
        """What made the run, as the flows' Parquet file keeps it: the scenario file (or
        shipped name) and every ``--set`` override, so the run can be made again."""
        from shortflow import __version__

        return {"shortflow_version": __version__, "scenario": self.scenario.source, "scenario_name": self.scenario.name,
                "overrides": json.dumps(list(self.scenario.overrides))}

    def write_flows(self, path: str | PathLike[str]) -> None:
        """Writes `flows` as Parquet, with `metadata` as the file's key-value metadata."""
        import pyarrow.parquet as pq

        flows = self.flows
        pq.write_table(flows.replace_schema_metadata({**(flows.schema.metadata or {}), **self.metadata()}), str(path))

    def to_json(self) -> str:
        return json.dumps(self.raw, indent=1)


#: Called after each `simulate` run (in this thread): `shortflow reproduce` counts its
#: runs with it for its progress.
_after_run: list[Callable[[], None]] = []


@contextlib.contextmanager
def each_run(callback: Callable[[], None]) -> Iterator[None]:
    """Calls `callback()` after every `simulate` run made inside the block."""
    _after_run.append(callback)
    try:
        yield
    finally:
        _after_run.remove(callback)


def simulate(
    scenario: Scenario | str | PathLike[str],
    overrides: Iterable[str] | str = (),
    *,
    pcap: str | PathLike[str] | None = None,
    timeline: bool = False,
    rate: float | None = None,
    max_memory: int | str | None = None,
    max_events: int = DEFAULT_MAX_EVENTS,
    totals_only: bool = False,
) -> SimulationResult:
    """Runs `scenario` (a `Scenario`, or the path of a scenario file) with ``key=value``
    overrides. With `pcap`, writes what the capture point saw; with `timeline`, each
    connection gets ``timeline``: (seconds from first SYN, response bytes so far). With
    `rate`, a Poisson or PackMime workload runs at that many connections/s instead of its
    own rate or calibrated load (the same traffic as the calibrated run that found it).
    With `totals_only`, no connection's report is kept (``connections`` is empty, the
    summary's ``totals`` add them up), so memory follows the connections open at once.

    The run stays within `max_memory` (bytes, or a size such as ``"2GB"``; default a
    quarter of this machine's memory) and `max_events`; beyond, it raises
    `SimulationLimitError` saying what to change.

    >>> import shortflow
    >>> s = shortflow.Scenario.builtin("000-table4", ["drop.syn=[1]"])
    >>> round(shortflow.simulate(s).connections[0]["request_sent_s"], 3)
    3.001
    """
    sc = scenario if isinstance(scenario, Scenario) else Scenario.load(Path(scenario))
    extra = (overrides,) if isinstance(overrides, str) else tuple(overrides)
    if extra:
        sc = sc.with_overrides(*extra)
    text = interruptible(lambda: _core.simulate(sc.text, sc.source, list(sc.overrides), pcap=pcap, timeline=timeline,
                                                 rate=rate, max_memory=memory_budget(max_memory), max_events=max_events,
                                                 totals_only=totals_only))
    for callback in list(_after_run):
        callback()
    raw = json.loads(text)
    # The report says what ran: the scenario and the overrides on top of it.
    raw["scenario_source"] = sc.source
    raw["overrides"] = list(sc.overrides)
    return SimulationResult(sc, raw["connections"], raw["summary"], raw)
