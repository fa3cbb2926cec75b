"""`sweep` refuses what would only run the machine out of memory, at once and in words:
more runs than it can hold, more local workers than the cores can carry."""

from __future__ import annotations

import os
import subprocess
import sys
import time

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
