"""The real kernel: drop the first SYN of each connection with iptables in a namespace,
capture with tcpdump, and check the analyzer counts exactly the forced retransmissions,
one RFC 6298 step (1 s) after the original — Linux's initial SYN RTO."""

from __future__ import annotations

import re
import sys
import textwrap

import pytest

import shortflow
from netns import leftovers, namespace_pair

pytestmark = pytest.mark.netns

CONNECTIONS = 3
PORT = 8080

SERVER = textwrap.dedent(
    f"""
    import socket
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", {PORT})); s.listen(16); print("ready", flush=True)
    for _ in range({CONNECTIONS}):
        c, _ = s.accept(); c.recv(100); c.sendall(b"ok"); c.close()
    """
)

CLIENT = textwrap.dedent(
    f"""
    import socket, sys
    for _ in range({CONNECTIONS}):
        s = socket.create_connection((sys.argv[1], {PORT}), timeout=15)
        s.sendall(b"GET"); s.recv(100); s.close()
    """
)


def test_forced_syn_drops_are_counted_exactly(tmp_path):
    pcap = tmp_path / "client-side.pcap"
    with namespace_pair() as net:
        # Every second SYN to the port is dropped: with sequential connections that is the
        # first SYN of each one, and its retransmission gets through.
        net.exec(net.server, "iptables", "-A", "INPUT", "-p", "tcp", "--syn", "--dport", str(PORT),
                 "-m", "statistic", "--mode", "nth", "--every", "2", "--packet", "0",
                 "-m", "comment", "--comment", f"sf-{net.run_id}", "-j", "DROP")
        server = net.spawn(net.server, sys.executable, "-c", SERVER)
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        with net.capture(net.client, net.client_dev, pcap, f"tcp port {PORT}"):
            net.exec(net.client, sys.executable, "-c", CLIENT, net.server_ip)
        counters = net.exec(net.server, "iptables", "-L", "INPUT", "-v", "-x", "-n").stdout
        run_id = net.run_id
    assert not leftovers(run_id), "namespaces or veths of the test were left behind"
    dropped = int(re.search(r"^\s*(\d+)\s+\d+\s+DROP", counters, re.M).group(1))
    assert dropped == CONNECTIONS

    a = shortflow.analyze(pcap)
    assert not a.errors
    s = a.summary
    assert s["connection_tries"] == CONNECTIONS
    assert s["successful"] == CONNECTIONS
    assert s["syn_retransmissions"] == dropped
    assert s["multiple_syns"] == CONNECTIONS
    assert s["multiple_syns_outside_standard"] == 0
    assert a.vantage == "client"
    gaps = [g for row in a.table.column("syn_gaps_s").to_pylist() for g in row]
    classes = [c for row in a.table.column("syn_gap_class").to_pylist() for c in row]
    assert classes == ["rfc6298:1s"] * CONNECTIONS
    # Linux's SYN timer lands on its 4 ms jiffy grid: allow a few jiffies.
    assert all(1.0 <= g <= 1.05 for g in gaps), gaps
