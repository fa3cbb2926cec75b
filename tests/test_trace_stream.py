"""The analyzer as a stream (`_core.ConnectionStream`, which `shortflow advise` reads): the
rows of ended connections, each with all of its exchanges, in batches. Every capture of
tests/data/real and a simulated keep-alive workload give, batch by batch, exactly the rows
and exchanges `analyze` gives for the whole capture."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from shortflow import _core
from shortflow.analyze import analyze

REAL = Path(__file__).parent / "data" / "real"
CAPTURES = sorted(p for p in REAL.iterdir() if p.name != "SOURCES.md")

#: Columns compared row by row (the late-packet column is the one a streamed row cannot
#: take: a late packet comes after its connection's row has left).
_ROW_KEYS = ("conn_id", "client_port", "server_port", "duration_s", "handshake_rtt_s", "syn_count", "synack_count",
             "bytes_c2s", "bytes_s2c", "iw_segments")
_EXCHANGE_KEYS = ("conn_id", "exchange", "request_bytes", "response_bytes", "response_end_s", "ttfb_s", "concurrent")


def _absent(x: object) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _same(a: object, b: object) -> bool:
    # An absent value is NaN in the core's columns, null in the Arrow table.
    return (_absent(a) and _absent(b)) or a == b


def _streamed(path: Path, rows: int) -> tuple[list[tuple], list[tuple], int, dict]:
    s = _core.ConnectionStream([path], rows=rows)
    conns, exchanges, batches = [], [], 0
    while (b := s.next_batch()) is not None:
        cols, xcols = b
        ids = set(int(x) for x in cols["conn_id"])
        # A batch's exchanges are its own rows' and nobody else's.
        assert set(int(x) for x in xcols["conn_id"]) <= ids
        conns += [tuple(cols[k][i].item() for k in _ROW_KEYS) for i in range(len(cols["conn_id"]))]
        exchanges += [tuple(xcols[k][i].item() for k in _EXCHANGE_KEYS) for i in range(len(xcols["conn_id"]))]
        batches += 1
    return conns, exchanges, batches, s.finish()


def _whole(path: Path) -> tuple[list[tuple], list[tuple], dict]:
    a = analyze([str(path)])
    t = a.table.select(list(_ROW_KEYS)).to_pylist()
    x = a.exchanges.select(list(_EXCHANGE_KEYS)).to_pylist()
    return [tuple(r[k] for k in _ROW_KEYS) for r in t], [tuple(r[k] for k in _EXCHANGE_KEYS) for r in x], a.summary


def _check(path: Path, rows: int) -> int:
    conns, exchanges, batches, raw = _streamed(path, rows)
    want_conns, want_exchanges, summary = _whole(path)
    def key(r: tuple) -> tuple:
        return r[:2]  # the connection (and the exchange)

    got_c, want_c = sorted(conns, key=key), sorted(want_conns, key=key)
    assert len(got_c) == len(want_c), path.name
    for g, w in zip(got_c, want_c):
        assert all(_same(a, b) for a, b in zip(g, w)), (path.name, g, w)
    got_x, want_x = sorted(exchanges, key=key), sorted(want_exchanges, key=key)
    assert len(got_x) == len(want_x), path.name
    for g, w in zip(got_x, want_x):
        assert all(_same(a, b) for a, b in zip(g, w)), (path.name, g, w)
    assert raw["summary"]["connection_tries"] == summary["connection_tries"], path.name
    return batches


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_a_real_capture_streams_to_the_rows_and_exchanges_analyze_gives(path: Path):
    _check(path, rows=3)


def test_a_keep_alive_workload_streams_in_many_batches(tmp_path: Path):
    """Connections of several exchanges each, open across many batches: each row still
    leaves with all of its exchanges."""
    sc, pcap = tmp_path / "k.toml", tmp_path / "k.pcap"
    sc.write_text('seed = 5\n[path]\nrtt = "40ms"\n[random_loss]\nper_connection = true\ndata = 0.02\n'
                  '[workload]\nrequest = "300B"\nresponse = "9kB"\nrequests = 4\nthink_time = "150ms"\n'
                  'connections = 300\ninterval = "100ms"\nparallel = true\n')
    subprocess.run([sys.executable, "-m", "shortflow", "simulate", str(sc), "--pcap", str(pcap), "-q"], check=True)
    # 30 s of arrivals: connections end (5 s after their close) all along the capture.
    assert _check(pcap, rows=16) >= 10
