"""Kept patches as test fixtures (`tests/data/patches/`): each adds one thing the way a
contributor would, and its test applies it to a copy of the Rust workspace, counts the files
it touches and checks, with the copy's own build, that the addition takes effect."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATCHES = ROOT / "tests" / "data" / "patches"

#: Document 001's tail loss: the last of four segments lost, no tail loss probe or RACK, so
#: only a timer repairs it (Linux's RTO, at least 200 ms, without a mechanism).
TAIL_LOSS = """
[path]
rtt = "20ms"
bandwidth = "100Mbit"
[client]
stack = "linux"
delayed_ack = "off"
timestamps = false
mss = "1000B"
[server]
stack = "linux"
mss = "1000B"
initial_window = 10
timestamps = false
rack = false
tlp = false
[drop]
data = [4]
[workload]
response = "4000B"
"""

needs_cargo = pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not on PATH")


def touched(patch: str) -> list[str]:
    """The files a patch changes or adds."""
    return sorted(set(re.findall(r"^\+\+\+ b/(\S+)$", patch, re.M)))


def copy_applied(tmp: Path, patch: Path) -> Path:
    """The Rust workspace as it stands in this checkout, copied, with `patch` applied."""
    copy = tmp / "tree"
    copy.mkdir()
    for name in ("Cargo.toml", "Cargo.lock", "rustfmt.toml", "bpf"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, copy / name)
    shutil.copytree(ROOT / "crates", copy / "crates", ignore=shutil.ignore_patterns("target", "fuzz"))
    for step in (["--check"], []):
        r = subprocess.run(["git", "apply", *step, str(patch)], cwd=copy, capture_output=True, text=True)
        assert r.returncode == 0, f"the fixture no longer applies to this tree (regenerate it): {r.stderr}"
    return copy


def run_cargo(copy: Path, target: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`cargo ARGS` in the copy; its build goes to target/TARGET under the checkout's own
    target directory, kept between runs."""
    env = {**os.environ, "CARGO_TARGET_DIR": str(ROOT / "target" / target)}
    return subprocess.run(["nice", "cargo", *args], cwd=copy, capture_output=True, text=True, env=env, timeout=900)


def cargo(copy: Path, target: str, *args: str) -> str:
    """What `cargo ARGS` in the copy prints, which must succeed."""
    r = run_cargo(copy, target, *args)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def mean_complete(copy: Path, target: str, scenario: Path, *sets: str) -> float:
    """The mean completion time (s) of the copy's simulator on `scenario` (one connection),
    with `sets` (`key=value`), from its `speed` example."""
    out = cargo(copy, target, "run", "-q", "-p", "shortflow-sim", "--example", "speed", "--", str(scenario), *sets)
    m = re.search(r"mean complete Some\(([0-9.]+)\) s +completed 1", out)
    assert m, out
    return float(m.group(1))


def refused_here(scenario: Path, setting: str) -> str:
    """What this build's `shortflow simulate` says of `--set SETTING`."""
    exe = str(Path(sys.executable).with_name("shortflow"))
    r = subprocess.run([exe, "simulate", str(scenario), "--set", setting], capture_output=True, text=True)
    return r.stdout + r.stderr
