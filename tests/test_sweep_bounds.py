"""`sweep` refuses what would only run the machine out of memory, at once and in words:
more runs than it can hold, more local workers than the cores can carry."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest


def sweep(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    t = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "shortflow", "sweep", "002-initial-window", *args],
                       capture_output=True, text=True, timeout=120)
    return r, time.monotonic() - t


def test_a_billion_seeds_is_refused_before_any_run_is_planned():
    r, took = sweep("--grid", "server.initial_window=2,4,10", "--seeds", "1000000000")
    assert r.returncode == 2 and took < 10, (r.returncode, took)
    assert "3 grid points × 1,000,000,000 seeds = 3,000,000,000 runs" in r.stderr and "at most 1,000,000" in r.stderr, r.stderr


@pytest.mark.parametrize("workers", ["1000", "0"])
def test_workers_beyond_four_a_core_are_refused(workers):
    r, _ = sweep("--grid", "server.initial_window=2", "--workers", workers)
    limit = 4 * (os.cpu_count() or 1)
    assert r.returncode == 2 and f"--workers {workers}: from 1 to {limit} here" in r.stderr, r.stderr


def _descendants(pid: int) -> list[int]:
    kids = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            kids += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            pass
    return kids + [d for k in kids for d in _descendants(k)]


def _scratch() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("sf-dask-*"))


def test_a_killed_worker_is_reported_in_plain_words(tmp_path):
    """The worker running a task dies (the OOM killer, an operator): distributed gives up on
    the task (after `allowed-failures` more tries; none here) and the sweep says so."""
    before = _scratch()
    env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0", "COLUMNS": "400"}
    cmd = [sys.executable, "-m", "shortflow", "sweep", "001-sfr-web", "--grid", "workload.duration=100000s",
           "--workers", "1", "-o", str(tmp_path / "out.parquet")]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as p:
        deadline = time.monotonic() + 60
        # The worker process is the one that has spent CPU running the simulation.
        killed = []
        while not killed and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.5)
            for pid in _descendants(p.pid):
                try:
                    ticks = sum(int(x) for x in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[11:13])
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if b"spawn_main" in cmdline and ticks > 300:  # > 3 s of CPU: the simulation
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
        assert killed, "no worker ever ran the simulation"
        out, err = p.communicate(timeout=120)
    assert p.returncode == 1, (p.returncode, err)
    assert "internal error" not in err and "KilledWorker" not in err, err
    assert "the worker running workload.duration=100000s seed=1 died (killed, or out of memory" in " ".join(err.split()), err
    assert _scratch() <= before, "the local cluster's scratch directory went with it"


def _killed_sweep_scratch(tmp_path: Path) -> Path:
    """Starts a long sweep, SIGKILLs it (and so its local cluster) once its scratch directory
    exists; that directory, left behind."""
    before = _scratch()
    cmd = [sys.executable, "-m", "shortflow", "sweep", "001-sfr-web", "--grid", "workload.duration=100000s",
           "--workers", "1", "-o", str(tmp_path / "out.parquet")]
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as p:
        deadline = time.monotonic() + 60
        while not (_scratch() - before) or not all((d / "owner").exists() for d in _scratch() - before):
            assert time.monotonic() < deadline and p.poll() is None, "the sweep never made its scratch directory"
            time.sleep(0.1)
        (scratch,) = _scratch() - before
        workers = _descendants(p.pid)
        p.kill()
    for pid in workers:  # (the nannies follow their parent; a worker mid-task may take a moment)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert scratch.is_dir(), "killed: nothing removed it"
    return scratch


@pytest.mark.netns
def test_a_killed_sweeps_scratch_is_known_to_testbed_clean_and_to_the_next_sweep(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("testbed clean needs root")
    scratch = _killed_sweep_scratch(tmp_path)
    r = subprocess.run([sys.executable, "-m", "shortflow", "testbed", "clean"], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "COLUMNS": "400"})
    assert r.returncode == 0, r.stderr
    assert f"Dask scratch directory {scratch} (its sweep was killed)" in r.stdout, r.stdout
    assert not scratch.exists()
    scratch = _killed_sweep_scratch(tmp_path)
    r, _ = sweep("--grid", "server.initial_window=2", "--workers", "1", "-o", str(tmp_path / "small.parquet"))
    assert r.returncode == 0, r.stderr
    assert not scratch.exists(), "the next local cluster removed the killed one's scratch"


def test_a_live_sweeps_scratch_is_not_stale(tmp_path):
    from shortflow.cluster import stale_scratch
    from shortflow.host.records import write_owner

    live = Path(tempfile.mkdtemp(prefix="sf-dask-", dir=tmp_path))
    write_owner(live / "owner")
    unproven = Path(tempfile.mkdtemp(prefix="sf-dask-", dir=tmp_path))
    dead = Path(tempfile.mkdtemp(prefix="sf-dask-", dir=tmp_path))
    # pid 1, but started at another time: not the process that made it.
    (dead / "owner").write_text("1 999999999999\n")
    old = tempfile.tempdir
    tempfile.tempdir = str(tmp_path)
    try:
        assert stale_scratch() == [dead]
    finally:
        tempfile.tempdir = old
    assert live.exists() and unproven.exists()
