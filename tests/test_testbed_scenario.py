"""The testbed's reading of scenario files: what the real kernel cannot do is refused with
the key and the file named (no root needed)."""

from __future__ import annotations

import textwrap
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from shortflow.cli import app
from shortflow.exceptions import ScenarioError
from shortflow.testbed import load
from shortflow.testbed.link import Link


def write(tmp_path, body: str):
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(body))
    return p


def test_full_scenario_is_read(tmp_path):
    s = load(write(tmp_path, """
        name = "x"
        seed = 7
        [path]
        rtt = "20ms"
        bandwidth = "10Mbit"
        queue = { kind = "droptail", packets = 50 }
        [client]
        stack = "linux"
        [server]
        stack = "linux"
        initial_window = 4
        rto_min = "50ms"
        quickack = true
        [drop]
        syn = [1]
        data = [3, 1]
        [random_loss]
        forward = 0.01
        [workload]
        kind = "http"
        request = "300B"
        response = "35kB"
        connections = 3
        interval = "2s"
        [capture]
        point = "client"
    """))
    assert (s.rtt_s, s.bandwidth_bps, s.queue_packets) == (0.02, 10e6, 50)
    assert s.seed == 7
    assert (s.request_bytes, s.response_bytes, s.connections, s.interval_s) == (300, 35_000, 3, 2.0)
    assert s.plan.server.route == ["rto_min", "50ms", "initcwnd", "4", "congctl", "cubic", "quickack", "1"]
    assert s.plan.client.route == ["congctl", "cubic"]


def test_the_emulator_gets_the_scenario_the_testbed_resolved(tmp_path):
    # Not translated: the same text and overrides, the text kept in the run's directory.
    # (Its delays, drops and losses from it: crates/netem/src/scenario.rs; on the kernel:
    # test_testbed_real.py.)
    text = '[path]\nrtt = "20ms"\n[random_loss]\ngilbert_forward = { p_good_to_bad = 0.1, p_bad_to_good = 0.5 }\n'
    s = load(write(tmp_path, text), ["path.rtt=30ms", "drop.syn=[2]"])
    run = tmp_path / "run"
    run.mkdir()
    args = Link(SimpleNamespace(workdir=run), s)._scenario_args()  # type: ignore[arg-type]
    assert args == ["--scenario", str(run / "scenario.toml"), "--set", "path.rtt=30ms", "--set", "drop.syn=[2]"]
    assert (run / "scenario.toml").read_text() == text


def test_gilbert_elliott_loss_is_realised_not_refused(tmp_path):
    s = load(write(tmp_path, """
        [path]
        rtt = "20ms"
        [random_loss]
        gilbert_reverse = { p_good_to_bad = 0.05, p_bad_to_good = 0.4, loss_bad = 0.5 }
    """))
    assert s.plan is not None
    decided = {d.key: d for d in s.plan.decisions}
    assert decided["random_loss"].action == "set" and "shortflow-netem" in decided["random_loss"].knob
    assert "gilbert" in s.resolved["random_loss"]["reverse"]


@pytest.mark.parametrize(("body", "words"), [
    ('[path]\nrtt = "20ms"\n[client]\nstack = "solaris"\n', ["client.delayed_ack_timeout", "200ms", "'solaris'"]),
    ('[path]\nrtt = "20ms"\n[client]\nstack = "bsd"\n', ["client.delayed_ack", "bsd_tick"]),
    ('[path]\nrtt = "20ms"\n[server]\nabc_limit = 1\n[workload]\nresponse = "35kB"\n', ["server.abc_limit", "tcp_slow_start"]),
    ('[path]\nrtt = "20ms"\n[client]\nquick_acks = 0\n', ["client.ack.quick_acks", "TCP_MAX_QUICKACKS"]),
    ('[path]\nrtt = "20ms"\n[server]\nrto_min_on_variance = false\n[random_loss]\nforward = 0.01\n',
     ["server.rto.min_on_variance"]),
    ('[path]\nrtt = "20ms"\n[server]\nmss = "9000B"\n', ["server.mss", "1460"]),
    ('[path]\nrtt = "20ms"\n[workload]\nrequests = 2\n', ["workload.requests", "one request"]),
    ('[path]\nrtt = "20ms"\n[drop]\nsyn = [1]\n[server]\nstack = "rfc6298"\nrto_min = "200ms"\n',
     ["server.iw_one_after_handshake_loss", "1 handshake drops"]),
    # The simulator's own checks come first: the file must be a valid scenario.
    ('[path]\nrtt = "20ms"\n[path.extra]\n', ["path.extra", "unknown key"]),
    ('[path]\nrtt = "20"\n', ["path.rtt", "no unit"]),
    ('[path]\nbandwidth = "1Mbit"\n', ["path.rtt", "missing"]),
    ('[path]\nrtt = "20ms"\nqueue = { kind = "red", packets = 50, min_threshold = 5.0, max_threshold = 15.0 }\n',
     ["path.queue", "drop-tail"]),
    ('[path]\nrtt = "20ms"\n[drop]\nsyn = [0]\n', ["drop.syn"]),
    ('[path]\nrtt = "20ms"\n[random_loss]\nforward = 1.5\n', ["random_loss.forward", "probability"]),
    ('[path]\nrtt = "20ms"\n[workload]\nkind = "ftp"\n', ["workload.kind"]),
    ('[path]\nrtt = "20ms"\n[mechanisms]\nsyn_optimizer = { side = "client" }\n', ["mechanisms.syn_optimizer"]),
    ('[path]\nrtt = "20ms"\nbogus = 1\n', ["bogus"]),
])
def test_refusals_name_key_and_file(tmp_path, body, words):
    p = write(tmp_path, body)
    with pytest.raises(ScenarioError) as e:
        load(p)
    msg = str(e.value)
    assert str(p) in msg
    for w in words:
        assert w in msg


def test_syn_rto_without_the_bpf_program_is_refused(tmp_path, monkeypatch):
    from shortflow import _core

    scenario = write(tmp_path, '[path]\nrtt = "20ms"\n[client]\nsyn_rto = "3s"\n')
    monkeypatch.setattr("shutil.which", lambda name: None)
    # The program built with the extension is loaded by its own loader: no clang, no bpftool.
    assert _core.bpf_object("tune") is not None and load(scenario).plan.client.syn_rto_s == 3.0
    monkeypatch.setattr(_core, "bpf_object", lambda name: None)
    with pytest.raises(ScenarioError, match=r"client\.syn_rto: a SYN RTO of 3000ms needs the tuner's BPF program"):
        load(scenario)


def test_cli_bad_scenario_exits_2_with_message(tmp_path):
    p = write(tmp_path, '[path]\nrtt = "20ms"\n[client]\nstack = "windows"\n')
    r = CliRunner().invoke(app, ["testbed", "run", str(p)])
    assert r.exit_code == 2
    assert "client.delayed_ack_timeout" in r.output and "'windows'" in r.output and "Traceback" not in r.output


def test_cli_without_root_exits_2(tmp_path, monkeypatch):
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    r = CliRunner().invoke(app, ["testbed", "clean"])
    assert r.exit_code == 2 and "needs root" in r.output


def test_kernel_defaults_a_scenario_turns_off_reach_both_worlds(tmp_path):
    # Issue 14: the testbed keeps timestamps, SACK, RACK and TLP on; a scenario that turns
    # one off is read by the simulator and the testbed alike.
    p = write(tmp_path, """
        [path]
        rtt = "20ms"
        [client]
        timestamps = false
        tlp = false
        timer_slack = true
        """)
    s = load(p)
    assert (s.client["timestamps"], s.client["tlp"], s.client["sack"]) == (False, False, True)
    assert s.plan.client.sysctls["net.ipv4.tcp_timestamps"] == 0
    assert s.plan.client.sysctls["net.ipv4.tcp_early_retrans"] == 0
    assert "net.ipv4.tcp_sack" not in s.plan.client.sysctls, "the kernel's own value is left alone"
    with pytest.raises(ScenarioError, match=r"server\.recovery.*'prr'"):
        load(write(tmp_path, '[path]\nrtt = "20ms"\n[server]\nrecovery = "rfc6675"\n[drop]\ndata = [2]\n'))
    with pytest.raises(ScenarioError, match=r"server\.hystart"):
        load(write(tmp_path, '[path]\nrtt = "20ms"\n[server]\nhystart = false\n[workload]\nresponse = "35kB"\n'))
    # F-RTO: the kernel's own (net.ipv4.tcp_frto, per namespace) or none, never RFC 4015's.
    assert load(write(tmp_path, '[path]\nrtt = "20ms"\n[server]\nspurious_rto = "off"\n')).plan.server.sysctls["net.ipv4.tcp_frto"] == 0
    with pytest.raises(ScenarioError, match=r"server\.spurious_rto.*tcp_frto"):
        load(write(tmp_path, '[path]\nrtt = "20ms"\n[server]\nspurious_rto = "frto"\n[drop]\ndata = [2]\n'))


def test_compare_tries_the_jiffies_phases_only_with_linux_on_both_ends(tmp_path):
    # `testbed compare` re-simulates a disagreement with other jiffies phases only when both
    # ends run Linux; it read `client.stack` of the resolved scenario, which names the
    # profile (`client.profile`), and so crashed on every disagreement.
    from shortflow.testbed.compare import _linux_both

    s = load(write(tmp_path, """
        name = "x"
        [path]
        rtt = "20ms"
        [client]
        stack = "linux"
        [server]
        stack = "linux"
    """))
    assert s.client["profile"] == "linux" and _linux_both(s)
    s.resolved["server"]["profile"] = "bsd"  # what a profile Linux cannot mimic would give
    assert not _linux_both(s)
