"""`shortflow analyze --scheduler`: one Dask task per trace on a running cluster, the
results merged into the same table and summary as a local run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import shortflow
from shortflow.analyze import analyze, summary_document

SHORTFLOW = [sys.executable, "-m", "shortflow"]


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    d = tmp_path_factory.mktemp("cluster-traces")
    out = []
    # Different sizes, losses and vantages: a merge that mixed up files, rows or counts
    # would show; the third is a gzip'd pcapng seen from the server.
    for i, (n, loss, extra) in enumerate([(300, 0.1, {}), (120, 0.0, {"ipv6": True}),
                                          (200, 0.2, {"vantage": "server", "format": "pcapng", "gzip": True})]):
        p = d / f"t{i}.pcap{'ng.gz' if extra.get('gzip') else ''}"
        shortflow.generate(p, connections=n, seed=10 + i, syn_loss=loss, synack_loss=loss / 2, ack_loss=loss / 4, **extra)
        out.append(p)
    return out


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """The address of a running cluster of 2 workers to send tasks to: the project's own
    local cluster (`dask_client`, its scratch space removed on exit)."""
    from shortflow.cluster import dask_client

    with dask_client(None, 2) as client:
        yield client.scheduler.address


def test_a_cluster_run_equals_the_local_run(traces, scheduler):
    names = [str(p) for p in traces]
    local = analyze(names, workers=2)
    done = []
    remote = analyze(names, scheduler=scheduler, progress=lambda b, t, p: done.append((b, t, p)))
    assert remote.table.num_rows == local.table.num_rows > 0
    assert remote.table.schema.equals(local.table.schema, check_metadata=True)
    assert remote.table.equals(local.table)
    # Rows of every file, each with its own trace index, in file order.
    assert remote.table.column("trace").combine_chunks().indices.to_pylist() == \
        local.table.column("trace").combine_chunks().indices.to_pylist()
    assert len(set(remote.table.column("trace").to_pylist())) == 3
    assert summary_document(remote) == summary_document(local)
    assert remote.raw_summary == local.raw_summary
    # One progress report per finished file, the last one complete.
    assert len(done) == 3
    assert done[-1][0] == done[-1][1] == sum(p.stat().st_size for p in traces)
    assert done[-1][2] == local.summary["packets"]


def test_a_filtered_cluster_run_equals_the_filtered_local_run(traces, scheduler):
    # The filter travels with each task: the workers compile it for their files.
    names = [str(p) for p in traces]
    expr = "portrange 10000-10099"
    local = analyze(names, workers=2, filter=expr)
    remote = analyze(names, scheduler=scheduler, filter=expr)
    assert 0 < remote.table.num_rows < analyze(names, workers=2).table.num_rows
    assert remote.table.equals(local.table)
    assert remote.raw_summary == local.raw_summary
    assert [f["filtered_out"] for f in remote.files] == [f["filtered_out"] for f in local.files]
    assert all(f["filtered_out"] > 0 for f in remote.files)


def test_the_cli_writes_the_same_table_and_summary(traces, scheduler, tmp_path):
    def cli(*extra: str, out: Path) -> dict[str, object]:
        r = subprocess.run([*SHORTFLOW, "analyze", *map(str, traces), "--summary-json", str(out / "s.json"),
                            "--out", str(out), "-q", *extra], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        return json.loads((out / "s.json").read_text())

    (tmp_path / "local").mkdir()
    (tmp_path / "remote").mkdir()
    local = cli(out=tmp_path / "local")
    remote = cli("--scheduler", scheduler, out=tmp_path / "remote")
    assert remote == local
    a = pq.read_table(tmp_path / "local" / "connections.parquet")
    b = pq.read_table(tmp_path / "remote" / "connections.parquet")
    assert b.equals(a)
    meta = pq.read_schema(tmp_path / "remote" / "connections.parquet").metadata
    assert json.loads(meta[b"files"]) == [str(p) for p in traces]


def test_standard_input_and_an_unreachable_scheduler_are_refused(traces, tmp_path):
    r = subprocess.run([*SHORTFLOW, "analyze", "-", "--scheduler", "tcp://127.0.0.1:9"], input="",
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "--scheduler" in r.stderr and "standard input" in r.stderr
    # Port 9 (discard) is closed here: the connection is refused, and the error says where.
    r = subprocess.run([*SHORTFLOW, "analyze", str(traces[0]), "--scheduler", "tcp://127.0.0.1:9", "-q"],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "error: Dask scheduler 'tcp://127.0.0.1:9'" in r.stderr
    assert "Traceback" not in r.stderr
    r = subprocess.run([*SHORTFLOW, "analyze", str(traces[0]), "--scheduler", "no-port-here", "-q"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "error: Dask scheduler 'no-port-here'" in r.stderr and "internal error" not in r.stderr


def test_merged_summaries_add_up_and_a_foreign_state_is_named(traces):
    from shortflow import _core

    one = [analyze([str(p)]) for p in traces]
    merged = _core.merge_summaries([a.files[0]["summary_state"] for a in one])
    assert merged["packets"] == sum(a.raw_summary["packets"] for a in one)
    assert merged["connection_tries"] == sum(a.raw_summary["connection_tries"] for a in one)
    assert merged == analyze([str(p) for p in traces]).raw_summary
    with pytest.raises(ValueError, match="summary state 1: invalid type"):
        _core.merge_summaries([one[0].files[0]["summary_state"], '{"packets": "many"}'])
