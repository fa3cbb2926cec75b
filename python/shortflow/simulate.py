"""`shortflow.simulate()`: run a scenario in the Rust simulator.

The run happens in `shortflow._core.simulate` with the GIL released; this module only
turns its JSON report into Python objects and a `pyarrow.Table`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

import pyarrow as pa

from shortflow import _core
from shortflow.scenario import Scenario

#: Per-connection keys every report has (see crates/sim/src/report.rs).
CONNECTION_KEYS = (
    "id",
    "start_s",
    "request_sent_s",
    "complete_s",
    "established",
    "syn_transmissions",
    "synack_transmissions",
    "retransmissions",
    "timeouts",
    "fast_retransmits",
    "rack_losses",
    "tlp_probes",
    "spurious_timeouts",
    "dsacks",
    "delayed_acks",
    "optimizer_resends",
    "handshake_rtt_s",
    "bytes_received",
    "packets_dropped",
)


@dataclass
class SimulationResult:
    """What one run produced: ``connections`` (one dict each), ``summary`` and the
    scenario it ran. ``table`` gives the connections as a `pyarrow.Table`."""

    scenario: Scenario
    connections: list[dict[str, Any]]
    summary: dict[str, Any]
    raw: dict[str, Any]

    @property
    def table(self) -> pa.Table:
        return pa.table({k: [c[k] for c in self.connections] for k in CONNECTION_KEYS})

    def to_json(self) -> str:
        return json.dumps(self.raw, indent=1)


def simulate(
    scenario: Scenario | str | PathLike[str],
    overrides: Iterable[str] = (),
    *,
    pcap: str | PathLike[str] | None = None,
    timeline: bool = False,
) -> SimulationResult:
    """Runs `scenario` (a `Scenario`, or the path of a scenario file) with ``key=value``
    overrides. With `pcap`, writes what the capture point saw; with `timeline`, each
    connection gets ``timeline``: (seconds from first SYN, response bytes so far).

    >>> import shortflow
    >>> s = shortflow.Scenario.builtin("000-table4", ["drop.syn=[1]"])
    >>> round(shortflow.simulate(s).connections[0]["request_sent_s"], 3)
    3.001
    """
    sc = scenario if isinstance(scenario, Scenario) else Scenario.load(Path(scenario))
    extra = tuple(overrides)
    if extra:
        sc = sc.with_overrides(*extra)
    text = _core.simulate(sc.text, sc.source, list(sc.overrides), pcap=pcap, timeline=timeline)
    raw = json.loads(text)
    return SimulationResult(sc, raw["connections"], raw["summary"], raw)
