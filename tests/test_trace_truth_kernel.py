"""The analyzer against the truth of the real kernel (root, namespaces).

The testbed drops chosen segments with its emulator (`[drop]`, the emulator's
`--drop KIND:N`), captures on both sides of the router and runs the analyzer on each
capture. The truth is what the emulator dropped, the scenario's settings (initcwnd) and the
server kernel's own counters (`TcpExtTCPFastRetrans`, `TcpExtTCPLossProbes`,
`TcpExtTCPTimeouts`, read in its namespace before and after the run). Short RTTs keep each
run near a second.

A loss before the capture point is seen only as a hole filled later: near the client, the
server's retransmission of a segment lost on the way is the first copy the capture sees.
The sender's class is therefore checked on the server-side capture, and the client-side
capture on what it can see (the hole, the initial window).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

import shortflow
from shortflow import testbed

pytestmark = pytest.mark.netns


def run(tmp_path: Path, body: str, sysctls: dict[str, dict[str, str | int]] | None = None) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Runs the scenario; returns the testbed's result and the analyzer's one row per side."""
    s = tmp_path / "s.toml"
    s.write_text(textwrap.dedent(body))
    r = testbed.run(str(s), str(tmp_path / "pcap"), sysctls=sysctls)
    (c,) = r["connections"]
    assert c["error"] is None and c["status"] == 200, c
    rows = {}
    for side in ("client", "server"):
        a = shortflow.analyze(r["pcaps"][side])
        assert not a.errors
        (row,) = a.table.to_pylist()
        rows[side] = row
    return r, rows


def counter(r: dict[str, Any], name: str) -> int:
    return int(r["kernel_counters"]["server"].get(name, 0))


def drops(r: dict[str, Any]) -> list[tuple[str, int]]:
    return [(d["kind"], d["nth"]) for d in r["link"]["drops"]]


def test_fast_retransmit_of_a_mid_flight_loss(tmp_path):
    r, rows = run(tmp_path, """
        [path]
        rtt = "10ms"
        [server]
        initial_window = 10
        [drop]
        data = [3]
        [workload]
        response = "30kB"
    """)
    assert drops(r) == [("data", 3)]
    truth = counter(r, "TcpExtTCPFastRetrans")
    assert truth == 1 and counter(r, "TcpExtTCPTimeouts") == 0
    for side, row in rows.items():
        got = (row["retx_fast_s2c"], row["retx_timeout_s2c"], row["retx_tlp_s2c"], row["fast_recoveries"])
        assert got == (truth, 0, 0, 1), side
        # Every resend, of any class, once; the client resent nothing.
        assert (row["retx_s2c"], row["retx_c2s"]) == (truth, 0), side
        # The lost segment was part of the first flight: near the client it is a hole,
        # and still counts.
        assert row["iw_segments"] == 10, side


def test_tail_loss_probe_then_repair(tmp_path):
    # The last two of three segments lost: with two packets out, Linux's probe timer is
    # 2·SRTT + 2 jiffies (tcp_schedule_loss_probe), well before the RTO; the probe resends
    # the last segment, its SACK shows the other hole, repaired by fast retransmit.
    r, rows = run(tmp_path, """
        [path]
        rtt = "10ms"
        [server]
        initial_window = 10
        [drop]
        data = [2, 3]
        [workload]
        response = "4000B"
    """)
    assert drops(r) == [("data", 2), ("data", 3)]
    probes, fast = counter(r, "TcpExtTCPLossProbes"), counter(r, "TcpExtTCPFastRetrans")
    assert (probes, fast, counter(r, "TcpExtTCPTimeouts")) == (1, 1, 0)
    row = rows["server"]
    assert (row["retx_tlp_s2c"], row["retx_fast_s2c"], row["retx_timeout_s2c"]) == (probes, fast, 0)


def test_timeout_of_a_tail_loss_without_probes(tmp_path):
    # tcp_early_retrans = 0: no tail loss probe, the lost last segment waits for the RTO.
    r, rows = run(tmp_path, """
        [path]
        rtt = "10ms"
        [server]
        initial_window = 10
        [drop]
        data = [3]
        [workload]
        response = "4000B"
    """, sysctls={"server": {"net.ipv4.tcp_early_retrans": 0}})
    assert drops(r) == [("data", 3)]
    truth = counter(r, "TcpExtTCPTimeouts")
    assert truth == 1 and counter(r, "TcpExtTCPLossProbes") == 0
    row = rows["server"]
    assert (row["retx_timeout_s2c"], row["rto_events"], row["rto_backoff_max"]) == (truth, 1, 0)
    assert (row["retx_fast_s2c"], row["retx_tlp_s2c"]) == (0, 0)
    # The wait for the timer (≥ the 200 ms minimum RTO) is loss repair by timeout.
    assert row["time_timeout_s"] >= 0.2
    # The last segment was lost between the two capture points: the server's side saw the
    # response whole when it was first sent, the client's side only when the timer's
    # resend arrived, at least the minimum RTO later. The server's side saw it as a
    # resend; near the client it is the first copy seen, no resend (hence the testbed
    # counts the server's resends on the server's side).
    near_server, near_client = rows["server"], rows["client"]
    assert (near_server["retx_s2c"], near_client["retx_s2c"]) == (1, 0)
    assert r["connections"][0]["retransmissions"] == 1
    late = (near_client["response_whole_s"] - near_client["request_sent_s"]) - (
        near_server["response_whole_s"] - near_server["request_sent_s"])
    assert 0.2 <= late <= 0.2 + 0.1, late
    # The testbed's completion is the client side's, from its own first SYN.
    assert r["connections"][0]["complete_s"] == round(near_client["response_whole_s"], 6)


LINEAR = Path("/proc/sys/net/ipv4/tcp_syn_linear_timeouts")


@pytest.mark.parametrize(("linear", "gaps", "classes", "ladder"), [
    (0, (1.0, 2.0), ["rfc6298:1s", "rfc6298:2s"], "rfc6298"),
    # Linux 6.x: the first N retries keep the initial RTO instead of doubling it.
    (4, (1.0, 1.0), ["rfc6298:1s", "rfc6298:1s"], "linux_linear"),
])
def test_lost_syns_follow_the_kernels_ladder(tmp_path, linear, gaps, classes, ladder):
    if linear and not LINEAR.exists():
        pytest.skip("this kernel has no net.ipv4.tcp_syn_linear_timeouts (added in Linux 6.x)")
    sysctls = {"client": {"net.ipv4.tcp_syn_linear_timeouts": linear}} if LINEAR.exists() else None
    r, rows = run(tmp_path, """
        [path]
        rtt = "2ms"
        [drop]
        syn = [1, 2]
        [workload]
        response = "1000B"
    """, sysctls=sysctls)
    assert drops(r) == [("syn", 1), ("syn", 2)]
    row = rows["client"]  # the client's side sees every SYN it sent
    assert row["syn_count"] == 3 and row["handshake"] == "answered"
    assert row["syn_gap_class"] == classes
    assert ladder in row["syn_ladder"].split("|"), row["syn_ladder"]
    # Linux's timers land on its jiffy grid and timer wheel: a few jiffies late at most.
    assert all(0 <= g - want <= 0.05 for g, want in zip(row["syn_gaps_s"], gaps)), row["syn_gaps_s"]
    assert row["time_handshake_s"] >= sum(gaps)
    # Near the server only the SYN that got through arrives.
    assert rows["server"]["syn_count"] == 1


@pytest.mark.parametrize("iw", [4, 10])
def test_initial_window_from_the_route_metric(tmp_path, iw):
    _, rows = run(tmp_path, f"""
        [path]
        rtt = "10ms"
        [server]
        initial_window = {iw}
        [workload]
        response = "30kB"
    """)
    for side, row in rows.items():
        assert row["iw_segments"] == iw, side
        assert row["retx_fast_s2c"] + row["retx_timeout_s2c"] + row["retx_tlp_s2c"] == 0, side


def test_a_doubling_ladder_of_the_last_segment(tmp_path):
    # A one-segment response lost four times: Linux probes it once (TLP), then its timer
    # doubles (RFC 6298 5.5). The analyzer calls each step what the kernel counted.
    r, rows = run(tmp_path, """
        [path]
        rtt = "10ms"
        [drop]
        data = [1, 2, 3, 4]
        [workload]
        response = "1000B"
    """)
    assert drops(r) == [("data", 1), ("data", 2), ("data", 3), ("data", 4)]
    probes, timeouts = counter(r, "TcpExtTCPLossProbes"), counter(r, "TcpExtTCPTimeouts")
    assert probes + timeouts == 4 and timeouts >= 2, (probes, timeouts)
    row = rows["server"]
    assert (row["retx_tlp_s2c"], row["retx_timeout_s2c"]) == (probes, timeouts), row
    assert (row["rto_events"], row["rto_backoff_max"]) == (timeouts, timeouts - 1), row
    # The waits are the probe's and the timer's, none of them slow start or the path's.
    assert row["time_timeout_s"] + row["time_tlp_s"] >= 0.2 * (2 ** timeouts - 1), row
    assert row["time_slow_start_s"] == 0, row


def test_an_early_repair_after_fewer_than_three_duplicate_acks(tmp_path):
    # The second of four segments lost: two segments after it, so two duplicate ACKs (with
    # SACK), fewer than three: Linux repairs it by RACK before any timer, as a fast
    # retransmit.
    r, rows = run(tmp_path, """
        [path]
        rtt = "10ms"
        [server]
        initial_window = 10
        [drop]
        data = [2]
        [workload]
        response = "5000B"
    """)
    assert drops(r) == [("data", 2)]
    fast, timeouts = counter(r, "TcpExtTCPFastRetrans"), counter(r, "TcpExtTCPTimeouts")
    assert (fast, timeouts) == (1, 0), (fast, timeouts, counter(r, "TcpExtTCPLossProbes"))
    row = rows["server"]
    assert (row["retx_fast_s2c"], row["retx_timeout_s2c"]) == (1, 0), row
    assert row["time_fast_retransmit_s"] > 0 and row["time_timeout_s"] == 0, row
