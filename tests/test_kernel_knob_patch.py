"""A knob added to the kernel table is one edit: `tests/data/patches/dummy-kernel-knob.patch`
adds a line (a dummy bound on net.ipv4.tcp_synack_retries, 1 to 63, never applied to the
project) and the assertion of its test, both in crates/scenario/src/kernel.rs. Applied to a
copy of the tree, the copy's own test passes, and the table the copy serves (the JSON the
bindings hand Python, printed by the scenario crate's `reference kernel` example) makes
`realize` refuse a scenario it accepted before and `tune`'s sysctl setter refuse the value,
with no other file touched. (The simulator runs the scenario's own model ranges, which the
patch does not change: the kernel table bounds what is set on a kernel, not what is
simulated.)"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from shortflow import _core
from shortflow.host import HostError, knobs
from shortflow.testbed import load
from shortflow.testbed.realize import RealizeError

ROOT = Path(__file__).resolve().parents[1]
PATCH = ROOT / "tests" / "data" / "patches" / "dummy-kernel-knob.patch"

needs_cargo = pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not on PATH")


def touched(patch: str) -> list[str]:
    return sorted(set(re.findall(r"^\+\+\+ b/(\S+)$", patch, re.M)))


def test_the_patch_touches_one_table_file_and_its_test() -> None:
    patch = PATCH.read_text()
    assert touched(patch) == ["crates/scenario/src/kernel.rs"]
    hunks = re.findall(r"^@@ .* @@(.*)$", patch, re.M)
    # One hunk in the table, one in the table's test module.
    assert len(hunks) == 2 and "KERNEL_KNOBS" in hunks[0] and "mod tests" in hunks[1], hunks
    added = [line[1:] for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert sum("KernelKnob {" in line for line in added) == 1
    assert sum("assert" in line for line in added) == 1


def _copy_applied(tmp: Path) -> Path:
    """The Rust workspace as it stands in this checkout, copied, with the patch applied."""
    copy = tmp / "tree"
    copy.mkdir()
    for name in ("Cargo.toml", "Cargo.lock", "rustfmt.toml", "bpf"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, copy / name)
    shutil.copytree(ROOT / "crates", copy / "crates", ignore=shutil.ignore_patterns("target", "fuzz"))
    for step in (["--check"], []):
        r = subprocess.run(["git", "apply", *step, str(PATCH)], cwd=copy, capture_output=True, text=True)
        assert r.returncode == 0, f"the fixture no longer applies to this tree (regenerate it): {r.stderr}"
    return copy


def _cargo(copy: Path, *args: str) -> str:
    # A target directory of the fixture's own under the checkout's: kept between runs.
    env = {**os.environ, "CARGO_TARGET_DIR": str(ROOT / "target" / "knob-fixture")}
    r = subprocess.run(["nice", "cargo", *args], cwd=copy, capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


@needs_cargo
def test_one_table_line_reaches_realize_and_tune(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: the scenario's model takes synack_retries up to 255, and so does realize.
    assert load("002-initial-window", ["server.synack_retries=100"]).plan is not None
    copy = _copy_applied(tmp_path)
    _cargo(copy, "test", "-q", "-p", "shortflow-scenario", "--lib", "kernel::")
    served = json.loads(_cargo(copy, "run", "-q", "-p", "shortflow-scenario", "--example", "reference", "kernel"))
    # The copy serves the unpatched table plus exactly the one knob.
    ours = json.loads(_core.kernel_knobs())
    new = [k for k in served["knobs"] if k not in ours["knobs"]]
    assert [k["name"] for k in new] == ["synack_retries"] and served["constants"] == ours["constants"]
    # The patched table in place of this build's: realize and tune decide from it.
    monkeypatch.setattr(knobs, "_table", lambda: served)
    knobs.knob.cache_clear()
    try:
        with pytest.raises(RealizeError, match=r"server.synack_retries: 100: net.ipv4.tcp_synack_retries takes 1 to 63"):
            load("002-initial-window", ["server.synack_retries=100"])
        assert load("002-initial-window", ["server.synack_retries=63"]).plan is not None
        # Refused before any namespace is entered or value written (this namespace does not exist).
        with pytest.raises(HostError, match=r"net.ipv4.tcp_synack_retries = 100: the kernel takes 1 to 63"):
            knobs.set_sysctl("net.ipv4.tcp_synack_retries", 100, "sf-000000-nonexistent")
    finally:
        knobs.knob.cache_clear()
