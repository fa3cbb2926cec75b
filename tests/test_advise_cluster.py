"""`shortflow advise --scheduler`: each trace's passes as tasks on a running Dask cluster,
the ranking, the fidelity and the per-connection tables those of the local run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

SHORTFLOW = [sys.executable, "-m", "shortflow"]

#: Four captures near the server with different losses, windows and sizes: a merge that
#: mixed up traces, connections or sums would show.
TRACES = [
    ('seed = 21\n[path]\nrtt = "80ms"\n[random_loss]\nper_connection = true\nsynack = 0.2\ndata = 0.02\n'
     '[workload]\nresponse = "15kB"\nconnections = 150\ninterval = "40ms"\n'),
    # Connections of one client overlapping on a narrow path: groups replayed together,
    # their models handed back by the trace's worker (a trace after another: its
    # connections' indices follow the first trace's).
    ('seed = 5\n[path]\nrtt = "100ms"\nbandwidth = "4Mbit"\naccess_bandwidth = "1Gbit"\n'
     '[workload]\nresponse = "60kB"\nconnections = 12\ninterval = "150ms"\nparallel = true\n'),
    ('seed = 22\n[path]\nrtt = "150ms"\n[server]\ninitial_window = 4\n[random_loss]\nper_connection = true\n'
     'data = 0.05\n[workload]\nresponse = "30kB"\nconnections = 90\ninterval = "60ms"\n'),
    ('seed = 23\n[path]\nrtt = "30ms"\n[random_loss]\nper_connection = true\nsynack = 0.1\n'
     '[workload]\nresponse = "2kB"\nconnections = 200\ninterval = "20ms"\n'),
]


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    d = tmp_path_factory.mktemp("advise-cluster")
    out = []
    for i, text in enumerate(TRACES):
        sc, pcap = d / f"t{i}.toml", d / f"t{i}.pcap"
        sc.write_text(text)
        subprocess.run([*SHORTFLOW, "simulate", str(sc), "--set", 'capture.point="server"', "--pcap", str(pcap), "-q"],
                       check=True, timeout=120)
        out.append(pcap)
    return out


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """The address of a running cluster of 2 workers: the project's own local cluster."""
    from shortflow.cluster import dask_client

    with dask_client(None, 2) as client:
        yield client.scheduler.address


def _advise(traces: list[Path], out: Path, *extra: str) -> tuple[dict, str]:
    out.mkdir()
    r = subprocess.run([*SHORTFLOW, "advise", *map(str, traces), "--json", str(out / "advice.json"), "--out",
                        str(out), *extra], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads((out / "advice.json").read_text()), r.stdout


def test_a_cluster_run_gives_the_local_runs_advice(traces, scheduler, tmp_path):
    local, local_text = _advise(traces, tmp_path / "local")
    remote, remote_text = _advise(traces, tmp_path / "remote", "--scheduler", scheduler)
    assert remote == local
    assert local["replay"]["connections"] == 452 and local["replay"]["faithful_share"] > 0.75
    assert local["shared"]["groups"] >= 1 and local["shared"]["faithful"] >= 10, local["shared"]
    assert max(f["harm"]["neighbours_s"] or 0 for f in local["fixes"]) > 0.1
    assert local["fixes"][0]["saved_s_total"] > 1
    # The table, intervals and reasons as printed, the same (but for where the tables went).
    assert remote_text.replace("/remote/", "/") == local_text.replace("/local/", "/")
    # Every connection's row and every saving, in the same order.
    for name in ("connections.parquet", "savings.parquet", "shared.parquet"):
        a, b = pq.read_table(tmp_path / "local" / name), pq.read_table(tmp_path / "remote" / name)
        assert b.num_rows == a.num_rows > 0 and b.equals(a), name
    # Each trace's connections are there under its own name.
    conns = pq.read_table(tmp_path / "remote" / "connections.parquet").to_pylist()
    assert {c["trace"] for c in conns} == {str(p) for p in traces}


def test_an_address_where_nothing_answers_is_said(traces, tmp_path):
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"}
    r = subprocess.run([*SHORTFLOW, "advise", str(traces[0]), "--scheduler", "tcp://127.0.0.1:9"], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 1, r.stderr
    assert "Dask scheduler 'tcp://127.0.0.1:9'" in r.stderr
