"""The native module's stub (`_core.pyi`) matches what the module really exports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "python" / "shortflow"


def test_core_stub_matches_the_native_module():
    r = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "shortflow._core", "--ignore-missing-stub"],
        capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_docstring_examples_run():
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--doctest-modules", "-p", "no:cacheprovider",
         str(PKG / "analyze.py"), str(PKG / "units.py"), str(PKG / "__init__.py"),
         str(PKG / "scenario.py"), str(PKG / "simulate.py"), str(PKG / "synopt.py"), str(PKG / "sweeps.py"),
         str(PKG / "stats.py"), str(PKG / "_interrupt.py"), str(PKG / "cli" / "common.py"),
         str(PKG / "cli" / "__init__.py")],
        capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
