"""IPv6: a client-mode synopt resends a lost SYN over IPv6 too (its inet nftables table, IPv6 raw
socket). Two namespaces joined by a veth with ULA addresses inside them only; the first SYN
is dropped in the server namespace (`statistic --mode nth`)."""

from __future__ import annotations

import json
import signal
import sys

import pytest

import shortflow
from netns import namespace_pair
from shortflow import synopt
from shortflow.exceptions import SynoptError

pytestmark = pytest.mark.netns

CLIENT6, SERVER6, PORT = "fd00:231::1", "fd00:231::2", 8080

LISTENER = f"""
import socket
s = socket.socket(socket.AF_INET6); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("{SERVER6}", {PORT})); s.listen(16); print("listening", flush=True)
while True:
    c, _ = s.accept(); c.close()
"""

CONNECT = f"""
import socket, time
s = socket.socket(socket.AF_INET6); t = time.perf_counter(); s.connect(("{SERVER6}", {PORT}))
print(time.perf_counter() - t)
"""


def test_client_mode_resends_a_lost_ipv6_syn(tmp_path):
    try:
        exe = synopt.binary()
    except SynoptError as e:
        pytest.skip(str(e))
    with namespace_pair() as p:
        for ns, dev, ip in ((p.client, p.client_dev, CLIENT6), (p.server, p.server_dev, SERVER6)):
            p.exec(ns, "ip", "-6", "addr", "add", f"{ip}/64", "dev", dev, "nodad")
        p.exec(p.server, "ip6tables", "-A", "INPUT", "-p", "tcp", "--dport", str(PORT), "--syn", "-m", "statistic",
               "--mode", "nth", "--every", "1000", "--packet", "0", "-j", "DROP")
        listener = p.spawn(p.server, sys.executable, "-c", LISTENER)
        assert listener.stdout is not None and listener.stdout.readline().startswith("listening")
        stats = tmp_path / "stats.json"
        d = p.spawn(p.client, exe, "-d", "200", "-r", "3", "-c", "-p", str(PORT), "--json-stats", str(stats))
        assert d.stdout is not None and d.stdout.readline().startswith("ready")
        pcap = tmp_path / "client.pcap"
        with p.capture(p.client, p.client_dev, pcap, "tcp"):
            took = float(p.exec(p.client, sys.executable, "-c", CONNECT).stdout)
        d.send_signal(signal.SIGTERM)
        d.wait(timeout=5)
        assert d.returncode == 0
        counters = json.loads(stats.read_text())
        rules_left = p.exec(p.client, "nft", "list", "ruleset").stdout
    assert 0.200 <= took <= 0.205 + 0.005, took  # veth RTT ≈ 0.1 ms, Python's connect() around it
    (row,) = shortflow.analyze(pcap).table.to_pylist()
    assert row["syn_count"] == 2 and row["established"], row
    assert (counters["copies_taken"], counters["resends"], counters["answered"]) == (1, 1, 1)
    assert "synopt" not in rules_left
