"""What `shortflow advise` reads of the stacks from a capture, on captures the simulator
made with known settings: the options both SYNs offered (SACK, timestamps, window
scaling) and the MSS each announced, and a server's minimum RTO from its timeouts. Each is recovered, written into the
connection's scenario (`--explain`) and used by the replay."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pyarrow.parquet as pq

SHORTFLOW = [sys.executable, "-m", "shortflow"]


def run(*args: str) -> str:
    r = subprocess.run([*SHORTFLOW, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def capture(tmp: Path, name: str, text: str) -> Path:
    sc, pcap = tmp / f"{name}.toml", tmp / f"{name}.pcap"
    sc.write_text(text)
    run("simulate", str(sc), "--set", 'capture.point="server"', "--pcap", str(pcap), "-q")
    return pcap


def explained(pcap: Path, conn: int) -> dict:
    return tomllib.loads(run("advise", str(pcap), "--explain", str(conn)))


OPTIONS = """\
[path]
rtt = "60ms"
[client]
mss = "{mss}B"
sack = {sack}
timestamps = {ts}
window_scaling = {ws}
[workload]
response = "40kB"
connections = 3
interval = "200ms"
"""


def test_the_options_both_syns_offered_are_the_replays(tmp_path):
    for sack, ts, ws, mss in ((False, True, False, 1400), (True, False, True, 1460), (True, True, True, 536)):
        text = OPTIONS.format(sack=str(sack).lower(), ts=str(ts).lower(), ws=str(ws).lower(), mss=mss)
        pcap = capture(tmp_path, f"o{sack:d}{ts:d}{ws:d}", text)
        sc = explained(pcap, 1)
        # Negotiated: what the client's SYN did not offer, neither side uses.
        for side in ("client", "server"):
            assert (sc[side]["sack"], sc[side]["timestamps"], sc[side]["window_scaling"]) == (sack, ts, ws), sc[side]
        # Each SYN's MSS: the client's as set, the server's Linux's own.
        assert (sc["client"]["mss"], sc["server"]["mss"]) == (f"{mss}B", "1460B")
        out = tmp_path / f"out{sack:d}{ts:d}{ws:d}"
        doc = json.loads(run("advise", str(pcap), "--json", "-", "--out", str(out)))
        assert doc["replay"]["faithful_share"] == 1.0
        # The replay runs with them: every segment of a stamped connection carries 12
        # option bytes more, and the replay's duration is the observed one.
        conns = pq.read_table(out / "connections.parquet").to_pylist()
        assert max(abs(c["replay_s"] - c["observed_s"]) / c["observed_s"] for c in conns) <= 0.01


MIN_RTO = """\
seed = 4
[path]
rtt = "10ms"
[server]
rto_min = "{rto_min}"
tlp = false
[random_loss]
per_connection = true
data = 0.2
[workload]
response = "2kB"
connections = 60
interval = "100ms"
"""


def test_a_servers_minimum_rto_is_read_from_its_timeouts(tmp_path):
    pcap = capture(tmp_path, "rto50", MIN_RTO.format(rto_min="50ms"))
    out = tmp_path / "out50"
    doc = json.loads(run("advise", str(pcap), "--json", "-", "--out", str(out)))
    conns = pq.read_table(out / "connections.parquet").to_pylist()
    sc = explained(pcap, conns[0]["conn_id"])
    # An upper bound: the RTO is SRTT + max(rto_min, 4·RTTVAR), on the timer's 4 ms tick.
    ms = int(sc["server"]["rto_min"].removesuffix("ms"))
    assert 50 <= ms <= 55, sc["server"]
    assert "rto_min" not in sc["client"]
    # The replays hold the connections that waited on a timeout: with Linux's 200 ms they
    # would each take 150 ms longer than they did.
    assert doc["replay"]["faithful_share"] >= 0.8, doc["replay"]
    # A server with Linux's own minimum RTO keeps the stack's (no rto_min written).
    pcap = capture(tmp_path, "rto200", MIN_RTO.format(rto_min="200ms"))
    sc = explained(pcap, conns[0]["conn_id"])
    assert "rto_min" not in sc["server"], sc["server"]


#: One bottleneck, the router's: the hosts' own links fast (the simulator's default gives
#: them the path's rate, a second serialization and an unbounded queue behind the capture
#: point that no real host has).
PATH_RATE = """\
seed = 2
[path]
rtt = "40ms"
bandwidth = "{rate}"
access_bandwidth = "1Gbit"
[workload]
response = "300kB"
connections = 4
interval = "3s"
"""


def test_the_bottleneck_rate_and_queue_are_read_from_the_ack_clock(tmp_path):
    # A slow path: the server's flights queue at the bottleneck (its round trips grow by
    # the queue), and the client's ACKs come back one serialization apart.
    for rate, bps, point in (("10Mbit", 10e6, "server"), ("3Mbit", 3e6, "client"), ("3Mbit", 3e6, "server"),
                             ("40Mbit", 40e6, "server")):
        sc, pcap = tmp_path / f"r{rate}{point}.toml", tmp_path / f"r{rate}{point}.pcap"
        sc.write_text(PATH_RATE.format(rate=rate))
        run("simulate", str(sc), "--set", f'capture.point="{point}"', "--pcap", str(pcap), "-q")
        model = explained(pcap, 1)
        got = float(model["path"]["bandwidth"].removesuffix("bit"))
        # Within 5 %: the train's span is measured between ACKs, each on its own timestamp.
        assert abs(got - bps) <= 0.05 * bps, (rate, point, model["path"])
        assert model["path"]["queue"]["packets"] >= 64
        out = tmp_path / f"out{rate}"
        doc = json.loads(run("advise", str(pcap), "--json", "-", "--out", str(out)))
        conns = pq.read_table(out / "connections.parquet").to_pylist()
        worst = max(abs(c["replay_s"] - c["observed_s"]) / c["observed_s"] for c in conns)
        # Within 3 %: the rate read is about 1 % off at 3 Mbit/s, and the end observed near
        # the server is the client's ACK of the last byte, which may come a few ms late.
        # Without the rate the replay ran on a 1 Gbit/s path, three times faster than
        # observed at 10 Mbit/s.
        assert doc["replay"]["faithful_share"] == 1.0 and worst <= 0.03, (rate, worst, conns)


DELACK = """\
seed = 3
[path]
rtt = "30ms"
[client]
{client}
[workload]
kind = "abt"
close = "client"
vectors = '''
{vectors}'''
"""


def keep_alive(segments: int) -> str:
    """Two connections of three exchanges each, a response of whole segments (the last
    one full, and no FIN with it: the client closes), 300 ms between exchanges."""
    lines = []
    for c in range(2):
        lines += [f"SEQ {c * 2_000_000} 3 {c} 0", "w 0 0", "r 30000", "l 0.000000 0.000000"]
        for _ in range(3):
            lines += ["> 300", "t 0", f"< {1448 * segments}", "t 300000"]
    return "\n".join(lines) + "\n"


def test_the_clients_ack_policy_and_delayed_ack_timer_are_read_from_its_acks(tmp_path):
    def model(name: str, client: str, segments: int) -> dict:
        sc, pcap = tmp_path / f"{name}.toml", tmp_path / f"{name}.pcap"
        # The last segment is full: a receiver that delays ACKs holds its ACK.
        sc.write_text(DELACK.format(client=client, vectors=keep_alive(segments)))
        run("simulate", str(sc), "--set", 'capture.point="client"', "--pcap", str(pcap), "-q")
        out = tmp_path / f"out-{name}"
        doc = json.loads(run("advise", str(pcap), "--vantage", "client", "--json", "-", "--out", str(out)))
        conns = pq.read_table(out / "connections.parquet").to_pylist()
        worst = max(abs(c["replay_s"] - c["observed_s"]) / c["observed_s"] for c in conns)
        assert doc["replay"]["faithful_share"] == 1.0 and worst <= 0.01, (name, worst, conns)
        return explained(pcap, 1)["client"]

    # A client that acknowledges every segment (a quickack route).
    assert model("quick", "quickack = true", 41).get("quickack") is True
    # Linux's own: every other segment past its quick ACKs, a 40 ms timer (nothing written).
    linux = model("linux", "", 41)
    assert "quickack" not in linux and "delayed_ack_timeout" not in linux, linux
    # A 200 ms timer (a BSD or Windows receiver's): read from the lone last segment's ACK,
    # within 2 % (the timer may have started with the segment before it).
    slow = model("slow", 'delayed_ack_timeout = "200ms"', 25)
    ms = int(slow["delayed_ack_timeout"].removesuffix("ms"))
    assert 196 <= ms <= 204, slow


SHARED_PATH = """\
seed = 4
[path]
rtt = "20ms"
bandwidth = "2Mbit"
access_bandwidth = "1Gbit"
[workload]
kind = "abt"
close = "client"
vectors = '''
SEQ 0 1 0 0
w 0 0
r 20000
l 0.000000 0.000000
> 300
t 0
< 200000
SEQ 2000000 1 1 0
w 0 0
r 20000
l 0.000000 0.000000
> 300
t 0
< 2896
SEQ 2500000 1 2 0
w 0 0
r 20000
l 0.000000 0.000000
> 300
t 0
< 2896
'''
"""


def test_a_connection_too_short_for_an_ack_train_takes_its_paths_rate(tmp_path):
    # Two segments make no train of three ACKs; the long transfer between the same client
    # and server does. At 2 Mbit/s a full segment takes 6 ms on the wire: a short
    # connection replayed at 1 Gbit/s runs a third faster (42 ms against 63 ms observed).
    pcap = capture(tmp_path, "shared", SHARED_PATH)
    out = tmp_path / "out"
    doc = json.loads(run("advise", str(pcap), "--json", "-", "--out", str(out)))
    conns = pq.read_table(out / "connections.parquet").to_pylist()
    for c in conns:
        model = explained(pcap, c["conn_id"])
        got = float(model["path"]["bandwidth"].removesuffix("bit"))
        assert abs(got - 2e6) <= 0.05 * 2e6, (c, model["path"])
    # Within 5 %: near the server, with no queue in its round trips, a short connection's
    # observed end misses its last segment's time on the bottleneck's wire (2.4 ms of 63).
    worst = max(abs(c["replay_s"] - c["observed_s"]) / c["observed_s"] for c in conns)
    assert doc["replay"]["faithful_share"] == 1.0 and worst <= 0.05, (worst, conns)
