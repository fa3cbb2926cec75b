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
