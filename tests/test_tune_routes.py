"""`shortflow tune --fallback routes` on default routes carrying what a JSON reading of
routes loses (locked metrics, a congestion control, an IPv6 preference): applied and
reverted in a network namespace of the test's own, the routes come back to the letter, and
the journal holds each route as its parts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.netns


def test_locked_routes_of_both_families_are_put_back_to_the_letter(tmp_path: Path, lone_ns: str) -> None:
    sh = ["ip", "netns", "exec", lone_ns]
    for cmd in (["ip", "link", "add", "d0", "type", "veth", "peer", "name", "d1"], ["ip", "link", "set", "d0", "up"],
                ["ip", "addr", "add", "10.231.9.1/24", "dev", "d0"],
                ["ip", "-6", "addr", "add", "2001:db8:9::1/64", "dev", "d0", "nodad"],
                ["ip", "route", "add", "default", "via", "10.231.9.254", "dev", "d0", "proto", "static", "mtu", "lock",
                 "1400", "rto_min", "300ms", "congctl", "lock", "cubic"],
                ["ip", "-6", "route", "add", "default", "via", "2001:db8:9::fe", "dev", "d0", "initcwnd", "4", "pref",
                 "high"]):
        subprocess.run([*sh, *cmd], check=True)

    def routes() -> str:
        return "".join(subprocess.run([*sh, "ip", fam, "route", "show"], capture_output=True, text=True,
                                      check=True).stdout for fam in ("-4", "-6"))

    before = routes()
    state = tmp_path / "state.json"
    cli = [*sh, sys.executable, "-m", "shortflow", "tune"]
    r = subprocess.run([*cli, "apply", "--iw", "20", "--quickack", "--fallback", "routes", "--state", str(state)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    now = routes()
    assert now.count("initcwnd 20") == 2 and now.count("quickack 1") == 2, now
    assert "mtu lock 1400" in now and "congctl lock cubic" in now and "pref high" in now, "the rest untouched"
    steps = [json.loads(line) for line in state.read_text().splitlines()[1:]]
    journalled = [s for s in steps if s.get("op") == "route"]
    assert [s["before"]["family"] for s in journalled] == ["-4", "-6"]
    assert ["mtu", 1400, True] in journalled[0]["before"]["metrics"]
    r = subprocess.run([*cli, "revert", "--state", str(state)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert routes() == before and not state.exists()
