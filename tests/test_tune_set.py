"""`shortflow tune apply --set NAME=VALUE`: any sysctl of the kernel table with a range, by
its row's name, held to that range, journalled and reverted like tune's other sysctls. Run
inside a network namespace the test creates (the sysctls are per namespace), as a user
runs it: the command line, the kernel's values read back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.netns


def read(ns: str, key: str) -> str:
    return subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-n", key], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_set_applies_the_tables_sysctls_and_revert_restores_them(tmp_path: Path, lone_ns: str) -> None:
    keys = ("net.ipv4.tcp_syn_retries", "net.ipv4.tcp_rto_max_ms", "net.ipv4.tcp_reordering")
    before = {k: read(lone_ns, k) for k in keys}
    state = tmp_path / "state.json"
    cli = ["ip", "netns", "exec", lone_ns, sys.executable, "-m", "shortflow", "tune", "apply"]
    sets = ["--set", "syn_retries=3", "--set", "rto_max=60s", "--set", "dupack_threshold=5"]
    r = subprocess.run([*cli, *sets, "--dry-run"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"would sysctl net.ipv4.tcp_syn_retries: {before['net.ipv4.tcp_syn_retries']!r} -> '3'" in r.stdout
    assert f"would sysctl net.ipv4.tcp_rto_max_ms: {before['net.ipv4.tcp_rto_max_ms']!r} -> '60000'" in r.stdout
    assert {k: read(lone_ns, k) for k in keys} == before, "a dry run changes nothing"

    r = subprocess.run([*cli, *sets, "--state", str(state)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert [read(lone_ns, k) for k in keys] == ["3", "60000", "5"]
    r = subprocess.run([*cli[:-1], "revert", "--state", str(state)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert {k: read(lone_ns, k) for k in keys} == before and not state.exists()


@pytest.mark.parametrize(("item", "why"), [
    ("syn_retries=200", "--set syn_retries=200: net.ipv4.tcp_syn_retries takes 1 to 127"),
    ("rto_max=500ms", "--set rto_max=0.5s: net.ipv4.tcp_rto_max_ms takes 1000 to 120000"),
    ("syn_retries=three", "--set syn_retries=three: expected a whole number (net.ipv4.tcp_syn_retries)"),
    ("timestamps=0", "--set 'timestamps=0': expected NAME=VALUE with NAME one of dupack_threshold, rto_max, syn_retries"),
])
def test_set_refuses_what_the_table_does_not_take_and_changes_nothing(tmp_path: Path, lone_ns: str, item: str,
                                                                      why: str) -> None:
    before = read(lone_ns, "net.ipv4.tcp_syn_retries")
    state = tmp_path / "state.json"
    cli = ["ip", "netns", "exec", lone_ns, sys.executable, "-m", "shortflow", "tune", "apply", "--set", item,
           "--state", str(state)]
    r = subprocess.run(cli, capture_output=True, text=True, env={**os.environ, "COLUMNS": "400"})
    assert r.returncode == 2 and why in " ".join(r.stderr.split()), r.stderr
    assert read(lone_ns, "net.ipv4.tcp_syn_retries") == before and not state.exists()
