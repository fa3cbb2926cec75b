"""Simulator beside the real kernel (`shortflow testbed compare`, `reproduce 000 --real`):
the same scenario document in both worlds."""

from __future__ import annotations

import json
import textwrap

import pytest
from typer.testing import CliRunner

from shortflow.cli import app
from shortflow.reproduce import reproduce
from shortflow.reproduce.real import add_real_column
from shortflow.testbed.compare import agrees, compare

pytestmark = pytest.mark.netns

ONE_SYN_LOST = """
    name = "one SYN lost, linux"
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
    response = "5000B"
"""


def write(tmp_path, body):
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(body))
    return p


def test_tolerances():
    assert agrees("request_sent_s", 1.0, 1.049) and not agrees("request_sent_s", 1.0, 1.051)
    assert agrees("complete_s", 0.05, 0.059) and not agrees("complete_s", 0.05, 0.061)  # 10 ms floor
    assert agrees("syn_transmissions", 2, 2) and not agrees("syn_transmissions", 2, 3)
    assert agrees("timeouts", 1, None) is None  # not measured per connection
    assert not agrees("complete_s", 1.0, None)
    # The timer wheel's range widens a time's tolerance: a probe 32 ms late still agrees.
    assert not agrees("complete_s", 0.445, 0.477) and agrees("complete_s", 0.445, 0.477, slack_s=0.032)
    assert agrees("tlp_probes", 1, None) is None and not agrees("tlp_probes", 1, 0)


def test_the_phase_trials_cover_every_phase_of_the_wheels_grid(tmp_path):
    from shortflow.scenario import Scenario
    from shortflow.testbed.compare import PHASES, _phase, _phase_seeds
    from shortflow.testbed.scenario_real import resolve

    sc = Scenario.load(write(tmp_path, ONE_SYN_LOST))
    seeds = _phase_seeds(sc)
    origins = [resolve(sc.with_overrides(*_phase(sc, 7, s)))["client"] for s in seeds]
    # One seed per phase of the 8-jiffy grid, in phase order, and the same every time.
    assert [o["jiffies_origin_ns"] // o["jiffy"] % PHASES for o in origins] == list(range(PHASES))
    assert _phase_seeds(sc) == seeds and len(set(seeds)) == PHASES
    # ... and the k-th in the k-th eighth of a millisecond: the TSval clock's phase.
    assert [o["jiffies_origin_ns"] % 1_000_000 * PHASES // 1_000_000 for o in origins] == list(range(PHASES))
    # A trial keeps the random losses' seed and turns the wheel on at both ends.
    assert "random_loss.seed=7" in _phase(sc, 7, seeds[0]) and all(o["timer_slack"] for o in origins)


def test_one_lost_syn_agrees_in_both_worlds(tmp_path):
    c = compare(write(tmp_path, ONE_SYN_LOST))
    assert c.real is not None, c.unavailable
    (sim,), (real,) = c.sim, c.real
    assert sim["syn_transmissions"] == real["syn_transmissions"] == 2
    # The client read at real-time priority (as root), as the simulator's reads at once.
    assert real["client_realtime"] is True
    # 1 s SYN RTO + RTT (+ serialization); the SYN timer counts whole jiffies from the tick it
    # was armed in (4 ms at HZ 250), so it may fire up to a jiffy early.
    assert -0.004 <= sim["request_sent_s"] - 1.02 < 1e-4
    assert c.agree, c.as_json()


def test_a_profile_linux_cannot_mimic_says_why_and_keeps_the_simulator(tmp_path):
    c = compare(write(tmp_path, ONE_SYN_LOST.replace('stack = "linux"', 'stack = "solaris"', 1)))
    assert c.real is None and c.agree is None
    # realize names the first field Linux cannot set, and the profile it came from.
    assert "client.delayed_ack_timeout" in c.unavailable and "'solaris'" in c.unavailable
    assert c.sim[0]["syn_transmissions"] == 2


def test_cli_compare_writes_both_worlds(tmp_path):
    out = tmp_path / "c.json"
    r = CliRunner().invoke(app, ["testbed", "compare", str(write(tmp_path, ONE_SYN_LOST)), "--set", "drop.syn=[]",
                                 "--json", str(out)])
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    # The kernel runs first; nginx's header bytes reach the simulator as a visible override.
    assert data["overrides"][0] == "drop.syn=[]" and data["agree"] is True
    assert len(data["overrides"]) == 2 and data["overrides"][1].startswith("workload.response_headers=")
    assert data["overrides"][1] == f"workload.response_headers={data['real'][0]['response_headers']}B"
    assert data["simulator"][0]["syn_transmissions"] == data["real"][0]["syn_transmissions"] == 1


def test_reproduce_real_column_for_a_table4_row():
    rows = [r for r in reproduce(["000"]) if r.figure == "table4-client" and r.case.startswith("1 SYN lost")]
    assert [r.case for r in rows] == ["1 SYN lost, without optimizer", "1 SYN lost, with optimizer"]
    add_real_column(rows)
    without, with_optimizer = rows
    # The 2008 stack's 3 s SYN RTO (BPF), which the timer wheel fires up to 256 ms late.
    assert without.real is not None and 3.0 <= without.real <= 3.30, without
    # The same case with `shortflow tune --syn-rto 200ms` on the client: resent after 200 ms.
    assert without.real_tune is not None and 0.195 <= without.real_tune <= 0.245, without
    # With the optimizer: the testbed runs `shortflow synopt -d 200 -r 3 -c`.
    assert with_optimizer.real is not None and 0.195 <= with_optimizer.real <= 0.215, with_optimizer


def test_reproduce_real_column_runs_an_rfc_stack_on_linuxs_handshake_rules():
    """A lost SYN/ACK lets Linux's handshake rules act (the duplicate SYN pushes the SYN/ACK
    timer back), which the RFC stacks do not have and the kernel cannot turn off: the row
    runs with `linux_handshake=true` on both sides and says so, beside the simulator's
    figure with the same rules."""
    rows = [r for r in reproduce(["000"])
            if r.figure == "table4-server-rfc6298" and r.case == "1 SYN/ACK lost, without optimizer"]
    assert len(rows) == 1
    add_real_column(rows)
    (r,) = rows
    assert r.real is not None and 1.0 <= r.real <= 1.06, r
    assert "linux_handshake=true" in r.real_note and "the simulator's figure is the same" in r.real_note, r
    assert "client.linux_handshake=true" not in r.overrides, "the row's own overrides are unchanged"


PACED = """
    name = "initial window 40, server congestion control from the test"
    [path]
    rtt = "50ms"
    bandwidth = "200Mbit"
    [client]
    stack = "linux"
    [server]
    stack = "linux"
    initial_window = 40
    [workload]
    request = "500B"
    response = "500000B"
"""


@pytest.mark.parametrize("cc", ["bbr", "cubic"])
def test_bbr_is_paced_and_cubic_is_not_and_both_agree(tmp_path, cc):
    # The route's congctl gives the server's namespace the algorithm: BBR asks for internal
    # pacing (no fq here), CUBIC does not. Read at the router's server-facing side, before
    # the bottleneck: the first flight of 40 segments as the server's kernel sent it.
    from shortflow.tcp import read_pcap

    pcaps = tmp_path / "pcaps"
    c = compare(write(tmp_path, PACED), [f'server.congestion_control="{cc}"'], pcaps)
    assert c.real is not None, c.unavailable
    assert c.agree, c.as_json()
    data = [s.ts for s in read_pcap(pcaps / "server-side.pcap") if s.src_port == 80 and s.payload > 0]
    gaps = [b - a for a, b in zip(data, data[1:40])]
    assert max(gaps[:9]) < 1e-4, gaps[:9]  # the first ten leave at once either way
    later = sorted(gaps[10:])
    if cc == "bbr":
        # 1448 B at 2.89 · 40 segments per 50 ms: 0.44 ms each (tcp_update_skb_after_send).
        assert 0.35e-3 < later[len(later) // 2] < 0.55e-3, later
    else:
        assert later[-1] < 1e-4, later  # SK_PACING_NONE: back to back
