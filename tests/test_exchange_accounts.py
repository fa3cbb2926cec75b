"""The exchanges' time accounts against their connection's, on every real capture: each
exchange's causes add up to its span, the spans tile the connection, and cause by cause the
exchanges' shares add up to the connection's account."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

import shortflow

DATA = Path(__file__).parent / "data" / "real"
CAPTURES = sorted(p.name for p in DATA.iterdir() if p.suffix in (".pcap", ".pcapng", ".gz"))

@pytest.mark.parametrize("name", CAPTURES)
def test_the_exchanges_accounts_add_up_to_their_connections(name: str) -> None:
    a = shortflow.analyze(str(DATA / name))
    causes = [c for c in a.table.column_names if c.startswith("time_") and c.endswith("_s")]
    exchanges = collections.defaultdict(list)
    for x in a.exchanges.to_pylist():
        exchanges[x["conn_id"]].append(x)
        assert abs(sum(x[c] for c in causes) - x["duration_s"]) <= 1e-6, x
    by_cause_differs = []
    for conn in a.table.to_pylist():
        xs = exchanges.get(conn["conn_id"])
        if not xs:
            continue
        assert abs(sum(x["duration_s"] for x in xs) - conn["duration_s"]) <= 1e-6, conn["conn_id"]
        by_cause_differs += [(conn["conn_id"], c) for c in causes if abs(sum(x[c] for x in xs) - conn[c]) > 1e-6]
    assert not by_cause_differs
