"""Agreement with tshark: our SYN and SYN/ACK retransmission counts equal tshark's
`tcp.analysis.retransmission` counts for those packets, on the same traces."""

from __future__ import annotations

import shutil
import subprocess

import pytest

import shortflow

pytestmark = pytest.mark.peer

TSHARK = shutil.which("tshark")


def tshark_count(path, display_filter: str) -> int:
    r = subprocess.run(
        [TSHARK, "-n", "-r", str(path), "-Y", display_filter, "-T", "fields", "-e", "frame.number"],
        capture_output=True, text=True, timeout=120, check=True,
    )
    return len(r.stdout.split())


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (`make deps` installs it)")
@pytest.mark.parametrize(
    "options",
    [
        {"vantage": "client"},
        {"vantage": "server"},
        {"vantage": "server", "ipv6": True},
        {"vantage": "client", "vlan": 7, "format": "pcapng"},
        {"vantage": "client", "link": "sll", "client_rto_s": 3.0, "server_rto_s": 3.0},
    ],
    ids=["client", "server", "server-ipv6", "client-vlan-pcapng", "client-sll-rfc2988"],
)
def test_retransmission_counts_equal_tshark(tmp_path, options):
    path = tmp_path / "t.pcap"
    shortflow.generate(path, connections=400, seed=11, syn_loss=0.15, synack_loss=0.15, ack_loss=0.15, **options)
    a = shortflow.analyze(path)
    syn = tshark_count(path, "tcp.flags.syn==1 && tcp.flags.ack==0 && tcp.analysis.retransmission")
    synack = tshark_count(path, "tcp.flags.syn==1 && tcp.flags.ack==1 && tcp.analysis.retransmission")
    assert syn > 0 and synack > 0, "the trace must contain both kinds of duplicate"
    assert a.summary["syn_retransmissions"] == syn
    assert a.summary["synack_retransmissions"] == synack


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (`make deps` installs it)")
@pytest.mark.parametrize("link", ["ethernet", "raw", "null", "loop", "sll", "sll2", "ipv4", "ipv6"])
@pytest.mark.parametrize("ipv6", [False, True], ids=["v4", "v6"])
def test_tshark_decodes_tcp_in_every_generated_packet(tmp_path, link, ipv6):
    """The generator's link types as tshark reads them: every packet a TCP segment of the IP
    version asked for (`--link ipv6` alone writes IPv6; `--link ipv4 --ipv6` is refused)."""
    path = tmp_path / "t.pcap"
    if link == "ipv4" and ipv6:
        with pytest.raises(shortflow.ShortflowError, match="carries only IPv4"):
            shortflow.generate(path, connections=30, seed=3, link=link, ipv6=ipv6)
        return
    truth = shortflow.generate(path, connections=30, seed=3, link=link, ipv6=ipv6)
    version = "ipv6" if ipv6 or link == "ipv6" else "ip"
    assert tshark_count(path, "tcp") == truth["packets"] > 0
    assert tshark_count(path, f"{version} && tcp") == truth["packets"]
    assert shortflow.analyze(path).summary["connections"] == truth["connections"]
