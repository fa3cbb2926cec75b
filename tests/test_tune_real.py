"""`shortflow tune` on the real kernel: the program is attached to a cgroup the test
creates, and only processes the testbed starts in that cgroup (in namespaces the test
created) are touched; never the host's own connections."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from leftover_snapshot import bpf_pins
from shortflow import testbed
from shortflow.cli import app
from shortflow.exceptions import TuneError
from shortflow.host import cgroup2_root
from shortflow.testbed.names import PREFIX, RUN_ID_PREFIX_ENV
from shortflow.tune import TuneSettings, apply, load_prefixes, plan, reload_prefixes, revert, status
from shortflow.tune.settings import PrefixRule

pytestmark = pytest.mark.netns

SCENARIO = """
    [path]
    rtt = "20ms"
    [client]
    stack = "linux"
    [server]
    stack = "linux"
    [drop]
    syn = [1]
    [workload]
    request = "300B"
    response = "35kB"
    port = {port}
"""


@pytest.fixture
def cgroup():
    tag = os.environ.get(RUN_ID_PREFIX_ENV, "")
    cg = cgroup2_root() / f"{PREFIX}{(tag + 'c0ffee')[:6]}-tune"
    cg.mkdir()
    yield cg
    cg.rmdir()


def run_in(tmp_path: Path, cgroup: Path, port: int) -> dict:
    s = tmp_path / f"s{port}.toml"
    s.write_text(textwrap.dedent(SCENARIO.format(port=port)))
    r = testbed.run(str(s), str(tmp_path / f"pcap{port}"), cgroup=str(cgroup))
    (c,) = r["connections"]
    assert c["status"] == 200 and c["syn_transmissions"] == 2, c
    syn_gap = float(syn_gap_of(Path(r["pcaps"]["client"])))
    return {"syn_gap": syn_gap, "flights": c["response_flights"]}


def syn_gap_of(pcap: Path) -> float:
    import shortflow

    (row,) = shortflow.analyze(pcap).table.select(["syn_gaps_s"]).to_pylist()
    return row["syn_gaps_s"][0]


def snapshot(cgroup: Path) -> tuple[str, str, str]:
    show = subprocess.run(["bpftool", "cgroup", "show", str(cgroup)], capture_output=True, text=True).stdout
    routes = subprocess.run(["ip", "route", "show", "table", "all"], capture_output=True, text=True).stdout
    return show, routes, " ".join(bpf_pins())


def test_iw_and_syn_rto_on_one_port_only_and_revert_leaves_nothing(tmp_path, cgroup):
    before = snapshot(cgroup)
    state = tmp_path / "state.json"
    apply(TuneSettings(iw=4, syn_rto_s=0.1, port=8080, cgroup=cgroup), state_path=state)
    try:
        tuned = run_in(tmp_path, cgroup, 8080)
        other = run_in(tmp_path, cgroup, 8081)
        counters = status(state_path=state)["bpf"]["counters"]
    finally:
        revert(state_path=state)
    # 35 kB = 24 segments of 1460 B: IW 4 needs 3 flights (4, 8, 16), Linux's IW 10 needs 2.
    assert tuned["flights"] == 3 and other["flights"] == 2, (tuned, other)
    # The lost SYN is resent after 100 ms (within the 32 ms timer-wheel granule) on 8080 only.
    assert 0.095 <= tuned["syn_gap"] <= 0.140, tuned
    assert 0.99 <= other["syn_gap"] <= 1.05, other
    assert counters["syn_rto_set"] >= 2 and counters["iw_set"] >= 1 and counters["setsockopt_errors"] == 0
    assert snapshot(cgroup) == before
    assert not state.exists()


def test_prefix_map_reload_changes_the_window_without_detaching(tmp_path, cgroup):
    state = tmp_path / "state.json"
    client_net = "10.231.1.0/24"  # the testbed's client side: the server's remote address
    apply(TuneSettings(cgroup=cgroup, prefixes=[PrefixRule(__import__("ipaddress").ip_network(client_net), iw=4)]),
          state_path=state)
    try:
        prog = status(state_path=state)["bpf"]["prog_id"]
        assert run_in(tmp_path, cgroup, 8080)["flights"] == 3
        reload_prefixes([], state_path=state)  # no prefix: back to the kernel's IW 10
        assert run_in(tmp_path, cgroup, 8082)["flights"] == 2
        st = status(state_path=state)
        assert st["bpf"]["prog_id"] == prog and st["bpf"]["still_attached"]
        assert st["bpf"]["counters"]["prefix_hits"] >= 1
    finally:
        revert(state_path=state)


def test_dry_run_changes_nothing_and_unsafe_values_are_refused(tmp_path, cgroup):
    before = snapshot(cgroup)
    state = tmp_path / "state.json"
    r = CliRunner().invoke(app, ["tune", "apply", "--iw", "4", "--scope", f"cgroup={cgroup}",
                                 "--dry-run", "--state", str(state)])
    assert r.exit_code == 0, r.output
    assert "would attach" in r.output and not state.exists()
    assert snapshot(cgroup) == before
    r = CliRunner().invoke(app, ["tune", "apply", "--iw", "500", "--scope", f"cgroup={cgroup}", "--state", str(state)])
    assert r.exit_code == 2 and "--force" in r.output and not state.exists()
    with pytest.raises(TuneError, match="rto-min"):
        plan(TuneSettings(rto_min_s=1.0, cgroup=cgroup))  # above what the kernel takes
    assert snapshot(cgroup) == before


def test_route_fallback_in_a_namespace_is_reverted_exactly(tmp_path):
    """`--fallback routes` run inside a namespace of its own: initcwnd and quickack on its
    default route, then back to the very same line."""
    ns = f"{PREFIX}{(os.environ.get(RUN_ID_PREFIX_ENV, '') + 'f00d00')[:6]}-routes"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        sh = ["ip", "netns", "exec", ns]
        subprocess.run([*sh, "ip", "link", "add", "d0", "type", "veth", "peer", "name", "d1"], check=True)
        subprocess.run([*sh, "ip", "link", "set", "d0", "up"], check=True)
        subprocess.run([*sh, "ip", "addr", "add", "10.231.9.1/24", "dev", "d0"], check=True)
        subprocess.run([*sh, "ip", "route", "add", "default", "via", "10.231.9.254", "dev", "d0", "rto_min", "300ms"], check=True)
        routes = lambda: subprocess.run([*sh, "ip", "route"], capture_output=True, text=True).stdout  # noqa: E731
        before = routes()
        state = tmp_path / "state.json"
        cli = [*sh, str(Path(os.sys.executable)), "-m", "shortflow", "tune"]
        r = subprocess.run([*cli, "apply", "--iw", "20", "--quickack", "--fallback", "routes", "--state", str(state)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "initcwnd 20" in routes() and "quickack 1" in routes() and "rto_min lock 300ms" in routes()  # untouched
        r = subprocess.run([*cli, "revert", "--state", str(state)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert routes() == before
    finally:
        subprocess.run(["ip", "netns", "del", ns])


def test_prefix_file_errors_name_file_and_prefix(tmp_path):
    p = tmp_path / "p.toml"
    p.write_text('"10.0.0.0/8" = { iw = 10, syn_rto = "200ms" }\n"2001:db8::/32" = { iw = 4 }\n')
    rules = load_prefixes(p)
    assert [(str(r.network), r.iw, r.syn_rto_s) for r in rules] == [("10.0.0.0/8", 10, 0.2), ("2001:db8::/32", 4, None)]
    for text, words in (('"10.0.0.1/8" = { iw = 4 }', ["10.0.0.1/8", "prefix"]),
                        ('"10.0.0.0/8" = { iw = 4, mss = 3 }', ["10.0.0.0/8", "expected"]),
                        ('"10.0.0.0/8" = { syn_rto = 200 }', ["syn_rto", "unit"]),
                        ('"10.0.0.0/8" = { iw = 0 }', ["10.0.0.0/8.iw"])):
        p.write_text(text + "\n")
        with pytest.raises(TuneError) as e:
            load_prefixes(p)
        assert str(p) in str(e.value) and all(w in str(e.value) for w in words), e.value
