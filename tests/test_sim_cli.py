"""`shortflow simulate` and `shortflow.simulate()` as a user runs them."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import shortflow
from shortflow.exceptions import SimulationLimitError
from shortflow.simulate import CONNECTION_KEYS, REPORT_FIELDS

SHORTFLOW = [sys.executable, "-m", "shortflow"]
SCENARIOS = Path(shortflow.__file__).parent / "scenarios"


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([*SHORTFLOW, *args], capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError(f"exit {r.returncode}\nstdout:{r.stdout}\nstderr:{r.stderr}")
    return r


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


BASE = '[path]\nrtt = "100ms"\n[client]\nstack = "rfc2988"\n[server]\nstack = "rfc2988"\n'


def test_json_has_the_connection_keys_and_the_hand_computed_timeline(tmp_path):
    s = write(tmp_path, BASE)
    out = tmp_path / "r.json"
    r = run("simulate", str(s), "--set", "drop.syn=[1, 2]", "--json", str(out))
    assert "9.100" in r.stdout
    report = json.loads(out.read_text())
    (c,) = report["connections"]
    # Every key the core declares is written (the timeline only when asked for), and the
    # API's table has a column of each that holds one value.
    declared = [name for name, *_ in REPORT_FIELDS]
    assert list(c) == [k for k in declared if k != "timeline"]
    assert set(CONNECTION_KEYS) == {k for k in declared if k not in ("rto_costs", "requests", "timeline")}
    result = shortflow.simulate(s, ["drop.syn=[1, 2]"])
    assert result.table.column_names == list(CONNECTION_KEYS)
    assert result.table.column("syn_transmissions").to_pylist() == [3]
    # SYNs at 0, 3 and 9 s; the SYN/ACK is back 100 ms later and the request leaves at once.
    assert math.isclose(c["request_sent_s"], 9.1, abs_tol=1e-4)
    assert c["syn_transmissions"] == 3 and c["synack_transmissions"] == 1
    assert c["timeouts"] == 2 and c["retransmissions"] == 0
    assert c["complete_s"] > c["request_sent_s"]


def test_client_optimizer_from_the_command_line(tmp_path):
    s = write(tmp_path, BASE)
    out = tmp_path / "r.json"
    run("simulate", str(s), "--set", "drop.syn=[1,2]", "--set",
        'mechanisms.syn_optimizer={side="client", delay="200ms", retries=3}', "--json", str(out), "-q")
    (c,) = json.loads(out.read_text())["connections"]
    assert math.isclose(c["request_sent_s"], 0.5, abs_tol=1e-4)
    assert c["optimizer_resends"] == 2


@pytest.mark.parametrize(
    ("text", "sets", "key"),
    [
        ('[path]\nrtt = "1ms"\nbandwith = "1Mbit"\n', [], "path.bandwith"),
        ('[path]\nrtt = 100\n', [], "path.rtt"),
        (BASE, ["workload.response=35"], "workload.response"),
        (BASE, ["client.nagle=true"], "client.nagle"),
        (BASE, ["path.bandwidth=10mbps"], "path.bandwidth"),
        ("[path]\n", [], "path.rtt"),
    ],
)
def test_bad_scenario_exits_2_naming_where_and_key(tmp_path, text, sets, key):
    s = write(tmp_path, text)
    args = ["simulate", str(s)]
    for o in sets:
        args += ["--set", o]
    r = run(*args, check=False)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    line = " ".join(r.stderr.split())
    # An unknown key given with --set is named there, not in the file (which has no typo).
    where = f"--set {sets[0]}" if "unknown key" in line and sets else str(s)
    assert where in line and key in line, line


def test_scenario_error_carries_file_and_key(tmp_path):
    s = write(tmp_path, BASE)
    with pytest.raises(shortflow.ScenarioError) as e:
        shortflow.Scenario.load(s, ["path.queue.kind=codel"])
    assert e.value.file == str(s)
    assert e.value.key == "path.queue.kind"
    assert isinstance(e.value, shortflow.ShortflowError)


def test_same_seed_same_result_and_table(tmp_path):
    s = write(tmp_path, BASE + '[random_loss]\nforward = 0.05\nreverse = 0.05\n[workload]\nresponse = "50kB"\nconnections = 20\n')
    a = shortflow.simulate(s)
    b = shortflow.simulate(s)
    assert a.raw == b.raw
    assert a.table.num_rows == 20
    c = shortflow.simulate(s, ["random_loss.seed=99"])
    assert c.raw != a.raw


def test_pcap_round_trip_through_the_analyzer(tmp_path):
    """The analyzer, reading the simulator's capture, counts the same SYNs and SYN/ACKs and
    measures the same handshake RTT as the simulator's own records."""
    pcap = tmp_path / "sim.pcap"
    sets = ["drop.syn=[1]", "drop.synack=[2]", "workload.connections=5", "capture.point=router"]
    result = shortflow.simulate(shortflow.Scenario.builtin("000-table4", sets), ["path.rtt=40ms"], pcap=pcap)
    analysis = shortflow.analyze([pcap])
    rows = analysis.table.sort_by("client_port").to_pylist()
    sims = result.connections
    assert len(rows) == len(sims) == 5
    for row, sim in zip(rows, sims):
        assert row["syn_count"] == sim["syn_transmissions"]
        assert row["synack_count"] == sim["synack_transmissions"]
        assert row["established"]
        assert math.isclose(row["handshake_rtt_s"], sim["handshake_rtt_s"], abs_tol=50e-6), (row, sim)
    assert sims[0]["syn_transmissions"] == 2


def test_pcap_errors_come_before_the_run_and_a_failed_run_leaves_no_pcap(tmp_path):
    """The pcap is written while the run goes: an unwritable path fails at once, naming
    the path, and a run stopped by its budget removes the pcap it had begun."""
    sc = shortflow.Scenario.builtin("001-sfr-web")
    missing = tmp_path / "no-such-dir" / "x.pcap"
    with pytest.raises(OSError, match="no-such-dir"):
        shortflow.simulate(sc, pcap=missing)
    pcap = tmp_path / "cut.pcap"
    with pytest.raises(SimulationLimitError, match="raise --max-events"):
        shortflow.simulate(sc, pcap=pcap, max_events=20_000)
    assert not pcap.exists()


def test_pcap_from_client_capture_point_raw_ip(tmp_path):
    pcap = tmp_path / "c.pcap"
    r = run("simulate", str(SCENARIOS / "003-bsd-client.toml"), "--set", "capture.point=client",
            "--set", "capture.link=raw", "--pcap", str(pcap))
    assert "capture (client side)" in r.stdout
    a = shortflow.analyze([pcap])
    (row,) = a.table.to_pylist()
    assert row["bytes_s2c"] == 13549 and row["bytes_c2s"] == 27


def test_totals_only_keeps_no_connection_and_the_same_totals(tmp_path):
    s = write(tmp_path, BASE + "[workload]\nconnections = 30\n[random_loss]\nforward = 0.2\nreverse = 0.2\n")
    full, lean = tmp_path / "full.json", tmp_path / "lean.json"
    run("simulate", str(s), "--json", str(full), "-q")
    run("simulate", str(s), "--json", str(lean), "-q", "--totals-only")
    f, lean_report = json.loads(full.read_text()), json.loads(lean.read_text())
    assert lean_report["connections"] == [] and len(f["connections"]) == 30
    t = lean_report["summary"]["totals"]
    assert t == f["summary"]["totals"]
    assert t["connections"] == 30
    assert t["syn_transmissions"] == sum(c["syn_transmissions"] for c in f["connections"])
    assert t["timeouts"] == sum(c["timeouts"] for c in f["connections"]) > 0
    shown = run("simulate", str(s), "--totals-only").stdout
    assert "30 connections" in shown and "GET s" not in shown  # the summary, no per-connection table
    r = run("simulate", str(s), "--totals-only", "--flows", str(tmp_path / "f.parquet"), check=False)
    assert r.returncode == 2 and "--flows needs the per-connection reports" in r.stderr
