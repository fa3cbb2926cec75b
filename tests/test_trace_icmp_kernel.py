"""The real kernel refusing SYNs with ICMP, and a capture that sees one direction only
(root, namespaces).

The server's firewall rejects the port with an ICMP destination-unreachable (iptables
`REJECT --reject-with …`); Linux's client ends the try at once (`tcp_v4_err` in SYN-SENT).
The client's tcpdump sees the SYN and the ICMP message quoting it: the analyzer must say
`refused_icmp`, with no RTO ladder and no phantom connection. With `-Q out` the capture
sees only what the client sent: the capture point must still be told (the client's own
packets leave with TTL 64).
"""

from __future__ import annotations

import errno
import signal
import sys
import textwrap
import time

import pytest

import shortflow
from netns import leftovers, namespace_pair

pytestmark = pytest.mark.netns

PORT = 8081

CLIENT = textwrap.dedent(
    f"""
    import socket, sys
    s = socket.socket()
    s.settimeout(10)
    try:
        s.connect((sys.argv[1], {PORT}))
    except OSError as e:
        print(type(e).__name__, e.errno)
    else:
        print("connected")
    """
)


@pytest.mark.parametrize(("reject", "want_errno"), [
    # Linux's icmp_err_convert: port unreachable → ECONNREFUSED; host unreachable and
    # "communication administratively prohibited" (code 13) → EHOSTUNREACH.
    ("icmp-port-unreachable", errno.ECONNREFUSED),
    ("icmp-admin-prohibited", errno.EHOSTUNREACH),
    ("icmp-host-unreachable", errno.EHOSTUNREACH),
])
def test_syn_refused_by_icmp(tmp_path, reject, want_errno):
    pcap = tmp_path / "client.pcap"
    with namespace_pair() as net:
        net.exec(net.server, "iptables", "-A", "INPUT", "-p", "tcp", "--syn", "--dport", str(PORT),
                 "-m", "comment", "--comment", f"sf-{net.run_id}", "-j", "REJECT", "--reject-with", reject)
        with net.capture(net.client, net.client_dev, pcap, f"tcp port {PORT} or icmp"):
            out = net.exec(net.client, sys.executable, "-c", CLIENT, net.server_ip).stdout
        run_id = net.run_id
    assert not leftovers(run_id)
    # The kernel's own verdict: the try ended with that error, not a timeout.
    assert int(out.split()[1]) == want_errno, out
    a = shortflow.analyze(pcap)
    assert not a.errors
    assert a.files[0]["icmp_unreachable"] >= 1
    (row,) = a.table.to_pylist()
    assert row["handshake"] == "refused_icmp" and row["syn_count"] == 1
    s = a.raw_summary
    assert (s["refused_icmp"], s["refused_rst"], a.summary["unsuccessful"]) == (1, 0, 1)
    assert row["duration_s"] < 0.1  # the refusal came back within the veth's round trip


def test_one_directional_capture_at_the_client(tmp_path):
    pcap = tmp_path / "out-only.pcap"
    server = textwrap.dedent(
        f"""
        import socket
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", {PORT})); s.listen(4); print("ready", flush=True)
        c, _ = s.accept(); c.recv(100); c.sendall(b"ok" * 2000); c.close()
        """
    )
    client = textwrap.dedent(
        f"""
        import socket, sys
        s = socket.create_connection((sys.argv[1], {PORT}), timeout=10)
        s.sendall(b"GET"); n = 0
        while (b := s.recv(65536)):
            n += len(b)
        s.close(); print(n)
        """
    )
    with namespace_pair() as net:
        srv = net.spawn(net.server, sys.executable, "-c", server)
        assert srv.stdout is not None and srv.stdout.readline().strip() == "ready"
        # -Q out: what the client sent, nothing it received (an asymmetric route's view).
        p = net.spawn(net.client, "tcpdump", "-i", net.client_dev, "-Q", "out", "-n", "-U", "--immediate-mode",
                      "-s", "256", "-w", str(pcap), f"tcp port {PORT}")
        assert p.stderr is not None
        while (line := p.stderr.readline()) and "listening on" not in line:
            pass
        got = net.exec(net.client, sys.executable, "-c", client, net.server_ip).stdout.strip()
        time.sleep(0.2)
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=10)
    assert got == "4000"
    a = shortflow.analyze(pcap)
    (row,) = a.table.to_pylist()
    assert row["packets_s2c"] == 0 and row["packets_c2s"] >= 3
    assert row["handshake"] == "answered"  # the client's ACK of the SYN/ACK shows it
    assert row["vantage"] == "client" and a.vantage == "client"
    assert a.raw_summary["one_directional"] == 1
    assert "hop counts" in a.vantage_basis, a.vantage_basis
