"""`shortflow advise` on captures where connections overlapped on one path: they replay
together on the simulator's shared dumbbell, and what a larger initial window costs their
neighbours is counted as harm beside the lone replays' estimate.

The truth is the simulator's own: the workload that made the capture, run again with the
fix on the server. On a narrow bottleneck the lone replays promise far more than the
workload gains (each first flight queues behind the others'); the shared replay predicts
what it gains. On a wide one the two agree and no neighbour loses anything."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

SHORTFLOW = [sys.executable, "-m", "shortflow"]

#: Twelve connections from one client started every 150 ms, each fetching 60 kB over 100 ms
#: through a 4 Mbit/s bottleneck (the hosts' own links fast): each response takes ~120 ms
#: of the link, so three or four are in flight at once.
SHARED = """\
seed = 5
[path]
rtt = "100ms"
bandwidth = "{rate}"
access_bandwidth = "1Gbit"
queue = {{ kind = "droptail", packets = 64 }}
[client]
stack = "linux"
[server]
stack = "linux"
[workload]
request = "300B"
response = "60kB"
connections = 12
interval = "150ms"
parallel = {parallel}
"""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([*SHORTFLOW, *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def advised(tmp: Path, rate: str, parallel: bool = True) -> tuple[dict, Path]:
    sc, pcap = tmp / "shared.toml", tmp / "shared.pcap"
    sc.write_text(SHARED.format(rate=rate, parallel=str(parallel).lower()))
    run("simulate", str(sc), "--set", 'capture.point="server"', "--pcap", str(pcap), "-q")
    doc = json.loads(run("advise", str(pcap), "--json", "-", "--out", str(tmp / "out")).stdout)
    # --out's shared.parquet: the figures the JSON sums, connection by connection.
    rows = pq.read_table(tmp / "out" / "shared.parquet").to_pylist()
    for f in doc["fixes"]:
        mine = [r for r in rows if r["fix"] == f["fix"]]
        if f["shared_replay"] is None:
            assert mine == []
            continue
        assert len(mine) == f["shared_replay"]["connections"]
        assert sum(r["saved_s_together"] for r in mine) == pytest.approx(f["shared_replay"]["saved_s_shared"])
        assert sum(r["neighbours_s"] for r in mine) == pytest.approx(f["harm"]["neighbours_s"])
    return doc, sc


def gained(sc: Path, iw: int) -> float:
    """Seconds the workload's connections gain, all told, when the server's initial window
    is `iw` instead of the stack's 10: the same seeded run again."""
    def durations(window: int) -> list[float]:
        doc = json.loads(run("simulate", str(sc), "--set", f"server.initial_window={window}", "--json", "-").stdout)
        return [c["complete_s"] for c in doc["connections"]]
    return sum(a - b for a, b in zip(durations(10), durations(iw)))


def fix(doc: dict, name: str) -> dict:
    return next(f for f in doc["fixes"] if f["fix"] == name)


def test_on_a_narrow_bottleneck_the_neighbours_loss_is_counted_and_the_shared_replay_predicts_the_gain(tmp_path):
    doc, sc = advised(tmp_path, "4Mbit")
    assert doc["shared"] == {"groups": 1, "connections": 12, "replayed": True, "faithful": 12, "left_out": 0,
                             "not_known": 0, "not_loaded": 0, "not_loaded_reasons": {}}
    iw32 = fix(doc, "server IW 32")
    truth = gained(sc, 32)
    shared = iw32["shared_replay"]
    assert shared["connections"] == 12
    # The workload gains what the shared replay predicts...
    assert shared["saved_s_shared"] == pytest.approx(truth, rel=0.1), (shared, truth)
    # ...and much less than the connections alone would: the difference is what the
    # neighbours' larger flights cost each one, counted as harm.
    assert shared["saved_s_lone"] > 1.4 * truth, (shared, truth)
    assert iw32["harm"]["neighbours_s"] > 0.3, iw32["harm"]
    assert iw32["harm"]["neighbours_s"] == pytest.approx(shared["saved_s_lone"] - shared["saved_s_shared"], abs=0.15)
    # Some connections the lone replays make faster are made slower among their neighbours.
    assert iw32["harm"]["connections_slower"] >= 2, iw32["harm"]
    # Fixes that leave the flights alone are not replayed together.
    assert fix(doc, "server SYN RTO 200ms")["harm"]["neighbours_s"] is None


def test_on_a_wide_bottleneck_no_neighbour_loses_anything(tmp_path):
    doc, sc = advised(tmp_path, "1Gbit")
    iw32 = fix(doc, "server IW 32")
    shared = iw32["shared_replay"]
    assert shared["connections"] == 12
    assert iw32["harm"]["neighbours_s"] < 0.005, iw32["harm"]
    assert iw32["harm"]["connections_slower"] == 0
    assert shared["saved_s_shared"] == pytest.approx(shared["saved_s_lone"], abs=0.005)
    assert shared["saved_s_shared"] == pytest.approx(gained(sc, 32), rel=0.05)


def test_connections_one_after_another_have_no_neighbours(tmp_path):
    doc, _ = advised(tmp_path, "4Mbit", parallel=False)
    assert doc["shared"]["groups"] == 0
    assert fix(doc, "server IW 32")["harm"]["neighbours_s"] is None


def test_the_table_says_what_the_shared_replay_found(tmp_path):
    sc, pcap = tmp_path / "shared.toml", tmp_path / "shared.pcap"
    sc.write_text(SHARED.format(rate="4Mbit", parallel="true"))
    run("simulate", str(sc), "--set", 'capture.point="server"', "--pcap", str(pcap), "-q")
    out = run("advise", str(pcap)).stdout
    assert "12 connections in 1 group overlapped on one path" in out, out
    assert "server IW 32: together" in out, out


def test_a_client_capture_has_no_fix_that_reaches_the_neighbours(tmp_path):
    sc, pcap = tmp_path / "shared.toml", tmp_path / "client.pcap"
    sc.write_text(SHARED.format(rate="4Mbit", parallel="true"))
    run("simulate", str(sc), "--set", 'capture.point="client"', "--pcap", str(pcap), "-q")
    doc = json.loads(run("advise", str(pcap), "--json", "-").stdout)
    assert doc["shared"]["groups"] == 1 and doc["shared"]["replayed"] is False, doc["shared"]
    assert all(f["harm"]["neighbours_s"] is None for f in doc["fixes"])
    assert "no fix of the client's host changes the server's flights" in run("advise", str(pcap)).stdout


def test_groups_are_one_traces_overlapping_connections_of_one_measured_path():
    """The grouping rules on spans as the first pass keeps them: chains of overlaps on one
    path whose rate was measured are groups; another client's connections at the same
    server, or a path without a rate, or another trace, are not replayed with them."""
    from shortflow.advise_shared import Spans

    spans = Spans()
    conns = [  # (trace, client, start s, span s)
        ("a", "c1", 0.0, 1.0), ("a", "c1", 0.5, 1.0), ("a", "c1", 1.4, 0.2),  # a chain of three
        ("a", "c1", 5.0, 0.1),  # alone: no neighbour
        ("a", "c2", 0.2, 0.5),  # another client at the same server, overlapping the chain
        ("b", "c1", 0.1, 1.0),  # another trace: its clock is not trace a's
        ("a", "c3", 7.0, 1.0), ("a", "c3", 7.5, 1.0),  # overlapping, but no rate on c3's path
    ]
    for i, (trace, client, start, span) in enumerate(conns):
        spans.add(i, {"trace": trace, "client_ip": client, "server_ip": "s", "first_seen": int(start * 1e9),
                      "last_end": span})
    groups = spans.groups(lambda path: path[0] != "c3")
    assert sorted(groups.of) == [0, 1, 2] and len(groups.sizes) == 1
    # c2's connection overlapped the chain at the server, c3's two each other: not known.
    assert groups.unknown == 3
