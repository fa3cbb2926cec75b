"""The floors of the house (design.md), enforced: no module or crate imports upward.

Python: import-linter's contracts in pyproject.toml (host <- testbed, tune <- front door;
testbed and tune independent). Rust: the workspace's dependency graph from `cargo metadata`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Each crate and the shortflow crates it may depend on (floors below it only).
ALLOWED = {
    "shortflow-wire": set(),
    "shortflow-scenario": set(),
    "shortflow-trace": {"shortflow-wire", "shortflow-scenario"},
    "shortflow-sim": {"shortflow-wire", "shortflow-scenario", "shortflow-trace"},
    # The daemons read packets through the wire layer, never through the analyzer.
    "shortflow-netem": {"shortflow-wire", "shortflow-scenario", "shortflow-sim"},
    "shortflow-synopt": {"shortflow-wire", "shortflow-scenario"},
    "shortflow-py": {"shortflow-wire", "shortflow-scenario", "shortflow-trace", "shortflow-sim", "shortflow-netem",
                     "shortflow-synopt"},
}


def test_python_import_contracts() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    r = subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not on PATH")
def test_rust_crates_depend_only_downward() -> None:
    meta = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
                                     cwd=ROOT, capture_output=True, text=True, check=True).stdout)
    crates = {p["name"]: {d["name"] for d in p["dependencies"] if d["name"].startswith("shortflow-")}
              for p in meta["packages"]}
    assert set(crates) == set(ALLOWED), "a crate was added or removed: give it its floor in ALLOWED"
    for name, deps in crates.items():
        assert deps <= ALLOWED[name], f"{name} depends upward on {sorted(deps - ALLOWED[name])}"
