"""The time account against the real kernel (root, namespaces).

Two namespaces joined by a veth pair run a scripted conversation (`time_account_probe.py`):
keep-alive exchanges with a client pause and a server think time, a RST after a rest, a
window closed with everything acknowledged, FINs dropped on arrival. The truth is the
scripts' own clocks and, for resends, the sending namespace's kernel counters
(`TcpExtTCPLossProbes`, `TcpExtTCPTimeouts`). The capture point sees every packet (a drop
happens at the receiver's netfilter INPUT, after tcpdump has seen the packet).

The veth round trip is tens of µs, so "within one RTT" would be within the scheduler's
noise: a time is checked to `SLACK` (a few of the kernel's 4 ms jiffies, and the scripts'
own wake-ups), and the causes to add up to the duration exactly.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import shortflow
from netns import Pair, namespace_pair
from shortflow.analyze import CAUSES

pytestmark = pytest.mark.netns

PROBE = Path(__file__).with_name("time_account_probe.py")
PORT = "8080"
SLACK = 0.015


def converse(tmp_path: Path, plan: dict[str, Any], at: str = "client",
             drop_client_fins: int = 0) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, int]]:
    """Runs the plan; returns (client's clock, server's clock, the analyzer's one row, the
    client namespace's kernel counters' increase)."""
    pcap = tmp_path / "conv.pcap"
    with namespace_pair() as p:
        for _ in range(drop_client_fins):
            # Each rule drops the first FIN that reaches it: n rules, the first n FINs.
            p.exec(p.server, "iptables", "-A", "INPUT", "-p", "tcp", "--dport", PORT, "--tcp-flags", "FIN", "FIN",
                   "-m", "statistic", "--mode", "nth", "--every", "1000000", "--packet", "0", "-j", "DROP")
        ns, dev = (p.client, p.client_dev) if at == "client" else (p.server, p.server_dev)
        before = counters(p)
        with p.capture(ns, dev, pcap, "tcp"):
            srv = p.spawn(p.server, sys.executable, str(PROBE), "server", PORT, json.dumps(plan))
            assert srv.stdout is not None and srv.stdout.readline().strip() == "listening", srv.communicate(timeout=5)
            cli = p.spawn(p.client, sys.executable, str(PROBE), "client", p.server_ip, PORT, json.dumps(plan))
            c_out, c_err = cli.communicate(timeout=60)
            s_out, s_err = srv.communicate(timeout=60)
            assert cli.returncode == 0 and srv.returncode == 0, (c_err, s_err)
        after = counters(p)
    a = shortflow.analyze(str(pcap))
    assert not a.errors, a.errors
    (row,) = a.table.to_pylist()
    total = sum(row[f"time_{c}_s"] for c in CAUSES)
    assert total == pytest.approx(row["duration_s"], abs=1e-9), row
    grew = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    return json.loads(c_out.splitlines()[-1]), json.loads(s_out.splitlines()[-1]), row, grew


def counters(p: Pair) -> dict[str, int]:
    """The client namespace's TcpExt counters (/proc/net/netstat is per namespace)."""
    text = p.exec(p.client, "cat", "/proc/net/netstat").stdout.splitlines()
    out: dict[str, int] = {}
    for names, values in zip(text[::2], text[1::2]):
        prefix = names.split(":")[0]
        for n, v in zip(names.split()[1:], values.split()[1:]):
            out[f"{prefix}{n}"] = int(v)
    return out


def test_a_clients_pause_is_idle_and_the_servers_think_time_application(tmp_path):
    plan = {"exchanges": [{"pause_s": 0, "request": 200, "think_s": 0, "response": 30000},
                          {"pause_s": 0.4, "request": 200, "think_s": 0.25, "response": 30000}],
            "end": "close"}
    c, s, row, _ = converse(tmp_path, plan)
    pause = c["sent_at"][1] - c["received_at"][0]
    assert row["time_idle_s"] == pytest.approx(pause, abs=SLACK), row
    assert row["time_application_s"] == pytest.approx(0.25, abs=SLACK), row
    assert row["time_slow_start_s"] < SLACK and row["time_timeout_s"] == 0, row
    # The last byte's ACK completes the response; only the close follows it.
    assert row["response_complete_s"] == pytest.approx(row["duration_s"], abs=SLACK), row
    # Exchange by exchange: the scripts' sizes exactly, the pause the second exchange's
    # idle and the think time its application; the exchanges' spans and causes add up to
    # the connection's.
    x = shortflow.analyze(str(tmp_path / "conv.pcap")).exchanges.to_pylist()
    assert [(e["request_bytes"], e["response_bytes"]) for e in x] == [(200, 30000), (200, 30000)]
    assert x[1]["time_idle_s"] == pytest.approx(pause, abs=SLACK), x[1]
    assert x[1]["think_before_s"] == pytest.approx(pause, abs=SLACK), x[1]
    assert x[1]["time_application_s"] == pytest.approx(0.25, abs=SLACK), x[1]
    assert x[0]["time_application_s"] < SLACK and x[0]["time_idle_s"] < SLACK, x[0]
    assert x[1]["ttfb_s"] == pytest.approx(0.25, abs=SLACK), x[1]
    for c in CAUSES:
        assert sum(e[f"time_{c}_s"] for e in x) == pytest.approx(row[f"time_{c}_s"], abs=1e-9), c


def test_a_reset_after_a_rest_is_idle(tmp_path):
    plan = {"exchanges": [{"pause_s": 0, "request": 200, "think_s": 0, "response": 5000}],
            "end_pause_s": 0.6, "end": "reset"}
    c, _, row, _ = converse(tmp_path, plan)
    assert row["outcome"] == "rst"
    assert row["time_idle_s"] == pytest.approx(c["ended_at"] - c["received_at"][0], abs=SLACK), row
    assert (row["time_timeout_s"], row["time_teardown_s"]) == (0, 0), row


def test_lost_fins_resent_are_teardown_and_the_kernels_ladder(tmp_path):
    # The client's first three FINs are dropped on arrival: it resends on its probe and
    # timers while every data byte is long acknowledged.
    plan = {"exchanges": [{"pause_s": 0, "request": 200, "think_s": 0, "response": 5000}], "end": "close"}
    c, _, row, grew = converse(tmp_path, plan, at="server", drop_client_fins=3)
    probes, timeouts = grew["TcpExtTCPLossProbes"], grew["TcpExtTCPTimeouts"]
    assert probes + timeouts == 3, grew
    assert (row["retx_tlp_c2s"], row["retx_timeout_c2s"]) == (probes, timeouts), row
    assert row["time_timeout_s"] == 0 and row["time_tlp_s"] == 0, row
    # Users waited only until the response was acknowledged; the rest is teardown.
    assert row["response_complete_s"] < 0.05, row
    assert row["time_teardown_s"] == pytest.approx(row["duration_s"] - row["response_complete_s"], abs=SLACK), row


def test_a_window_closed_with_nothing_outstanding_is_zero_window(tmp_path):
    # A small receive buffer the client does not read for 0.8 s: it acknowledges all it got
    # with a zero window; the server, with more to send, waits for the window to open.
    plan = {"exchanges": [{"pause_s": 0, "request": 200, "think_s": 0, "response": 400_000}],
            "client_rcvbuf": 4096, "read_delay_s": 0.8, "end": "close"}
    _, _, row, _ = converse(tmp_path, plan)
    assert row["zero_window_stalls"] >= 1, row
    assert row["time_zero_window_s"] == pytest.approx(0.8, abs=0.05), row
    assert row["time_application_s"] < SLACK and row["time_idle_s"] < SLACK, row


def with_copies(src: Path, dst: Path, delays_us: list[int], ttl_step: int, zero_id: bool) -> int:
    """Writes `src` (a classic pcap of Ethernet/IPv4 frames, µs timestamps) to `dst` with each
    TCP packet recorded twice, as a mirror port or a capture on both sides of a router
    does: the copy `delays_us[i % len]` later, its TTL `ttl_step` lower; with `zero_id` the
    IPv4 ID of both is 0 (as Linux sends its SYN/ACKs). Returns the copies written."""
    import struct

    raw = src.read_bytes()
    magic, = struct.unpack_from("<I", raw, 0)
    assert magic == 0xA1B2C3D4, "a little-endian, microsecond pcap"
    out, at, records = [raw[:24]], 24, []
    while at < len(raw):
        sec, usec, incl, orig = struct.unpack_from("<IIII", raw, at)
        frame = bytearray(raw[at + 16:at + 16 + incl])
        at += 16 + incl
        records.append((sec * 1_000_000 + usec, frame, orig))

    def ip_checksum(h: bytes) -> int:
        s = sum(struct.unpack(f"!{len(h) // 2}H", h))
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        return ~s & 0xFFFF

    def rewrite(frame: bytearray, ttl_down: int) -> bytearray:
        f = bytearray(frame)
        ihl = (f[14] & 0x0F) * 4
        if zero_id:
            f[18:20] = b"\0\0"
        f[22] -= ttl_down
        f[24:26] = b"\0\0"
        f[24:26] = struct.pack("!H", ip_checksum(bytes(f[14:14 + ihl])))
        return f

    timeline = []
    copies = 0
    for i, (t, frame, orig) in enumerate(records):
        is_tcp = frame[12:14] == b"\x08\x00" and frame[23] == 6
        first = rewrite(frame, 0)
        timeline.append((t, i, 0, first, orig))
        if is_tcp:
            timeline.append((t + delays_us[i % len(delays_us)], i, 1, rewrite(frame, ttl_step), orig))
            copies += 1
    timeline.sort(key=lambda r: (r[0], r[1], r[2]))
    for t, _, _, frame, orig in timeline:
        out.append(struct.pack("<IIII", t // 1_000_000, t % 1_000_000, len(frame), orig) + bytes(frame))
    dst.write_bytes(b"".join(out))
    return copies


@pytest.mark.parametrize(("delays_us", "ttl_step", "zero_id"), [
    ([1, 40, 300, 1700], 1, False),  # both sides of a router: TTL one lower, the sender's IDs
    ([1, 40, 300, 1700], 1, True),   # ... without IDs
    ([1, 15, 120, 2000], 0, True),   # a mirror port: the same TTL, no IDs
])
def test_packets_the_capture_saw_twice_change_nothing(tmp_path, delays_us, ttl_step, zero_id):
    plan = {"exchanges": [{"pause_s": 0, "request": 200, "think_s": 0.05, "response": 60000},
                          {"pause_s": 0.2, "request": 200, "think_s": 0, "response": 20000}], "end": "close"}
    _, _, row, _ = converse(tmp_path, plan)
    doubled = tmp_path / "doubled.pcap"
    copies = with_copies(tmp_path / "conv.pcap", doubled, delays_us, ttl_step, zero_id)
    a = shortflow.analyze(str(doubled))
    (twice,) = a.table.to_pylist()
    assert twice["capture_duplicates"] == copies, (copies, twice["capture_duplicates"])
    same = ("retx_timeout_s2c", "retx_fast_s2c", "retx_tlp_s2c", "retx_timeout_c2s", "rto_events",
            "packets_c2s", "packets_s2c", "syn_count", "synack_count", "iw_segments")
    assert {k: twice[k] for k in same} == {k: row[k] for k in same}
    for c in ("idle", "application", "teardown", "timeout", "tlp"):
        assert twice[f"time_{c}_s"] == pytest.approx(row[f"time_{c}_s"], abs=0.003), c


@pytest.mark.parametrize("rcvbuf", [6000, 0])
def test_rounds_held_by_the_receivers_window_are_the_kernels_rwnd_limited_time(tmp_path, rcvbuf):
    # Over the testbed's emulated 20 ms path (its router and link emulator), a client
    # whose fixed receive buffer (SO_RCVBUF, no autotuning) holds a few segments, or the
    # default one: the server's kernel says how long its sending was limited by the
    # receiver's window (tcpi_rwnd_limited, `tcp_chrono`). The capture at the server gives
    # the same verdict: the window's rounds where the kernel was held by it, none where it
    # was not. Not the same seconds: the kernel counts the instants a send found the window
    # full, and books to its "busy" clock the waits for its pacing timer (BBR, this
    # kernel's default, paces sends between window openings); the time account books each
    # wait after data that filled the window to the window (1.22 s of 1.44 s against the
    # kernel's 0.63-0.66 s, in runs on 2026-11-28).
    from shortflow.testbed import load
    from shortflow.testbed import names as N
    from shortflow.testbed.link import Link
    from shortflow.testbed.topology import Topology

    scenario = tmp_path / "path.toml"
    scenario.write_text('[path]\nrtt = "20ms"\nbandwidth = "100Mbit"\n')
    plan = {"exchanges": [{"pause_s": 0, "request": 200, "think_s": 0, "response": 300_000}],
            "client_rcvbuf": rcvbuf, "end": "close"}
    pcap = tmp_path / "rwnd.pcap"
    with Topology() as topo:
        for role in ("client", "server"):
            topo.set_route(role, [])
            topo.sysctl(role, "net.ipv4.tcp_no_metrics_save", 1)
        link = Link(topo, load(scenario))
        link.start()
        dump = topo.spawn("tcpdump", "server", ["tcpdump", "-i", topo.names.server_dev, "-n", "-U", "--immediate-mode",
                                                 "-s", "128", "-w", str(pcap), "tcp"], stderr=subprocess.PIPE)
        assert dump.stderr is not None and "listening" in dump.stderr.readline()
        srv = topo.spawn("probe server", "server", [sys.executable, str(PROBE), "server", PORT, json.dumps(plan)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert srv.stdout is not None and srv.stdout.readline().strip() == "listening"
        cli = topo.spawn("probe client", "client", [sys.executable, str(PROBE), "client", N.SERVER_IP, PORT, json.dumps(plan)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _, c_err = cli.communicate(timeout=60)
        s_out, s_err = srv.communicate(timeout=60)
        assert cli.returncode == 0 and srv.returncode == 0, (c_err, s_err)
        time.sleep(0.2)
        dump.send_signal(signal.SIGINT)
        dump.communicate(timeout=10)
        link.stop()
    truth = json.loads(s_out.splitlines()[-1])["rwnd_limited_us"] / 1e6
    (row,) = shortflow.analyze(str(pcap)).table.to_pylist()
    rwnd, ss = row["time_receive_window_s"], row["time_slow_start_s"]
    if rcvbuf:
        assert truth > 0.3 * row["duration_s"], truth  # the kernel did wait on the window
        assert rwnd >= truth and rwnd >= 0.6 * row["duration_s"] and ss < 0.05, (rwnd, ss, truth)
    else:
        assert truth < 0.020 and rwnd < 0.020, (rwnd, truth)
