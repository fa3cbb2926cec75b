"""`shortflow synopt` on the real kernel (root, namespaces): a lost SYN or SYN/ACK is resent
by the daemon after the requested 200 ms instead of the kernel's 1 s. Times come from the
router's client-side capture, read by the project analyzer (SYN counts, handshake) and
its segment reader, `shortflow.tcp` (the first SYN and the client's ACK)."""

from __future__ import annotations

import pytest

from shortflow import synopt
from shortflow.testbed.synopt import SynoptDaemon
from synopt_bed import bed

pytestmark = pytest.mark.netns

RTT = 0.020
DELAY = 0.200
#: The issue's bound: established 200-205 ms + RTT after the first SYN.
SLACK = 0.005
#: Capture timestamps and the emulator's release (+0.1-0.3 ms, measured on this machine) may put the
#: ACK a little before the nominal RTT is complete: never more than this.
EARLY = 0.001


def test_client_mode_resends_the_lost_syn_after_200ms(tmp_path):
    with bed(tmp_path, rtt="20ms", drop="syn = [1]") as b:
        d = b.start_synopt("client", "-d", "200", "-r", "3", "-c", "-p", "80")
        connect = b.fetch()
        stats, _ = b.stop_synopt(d)
        (h,) = b.handshakes()
    assert (h.syns, h.synacks) == (2, 1)
    took = h.established - h.first_syn
    assert DELAY + RTT - EARLY <= took <= DELAY + SLACK + RTT, took
    assert abs(h.handshake_rtt - RTT) <= 0.002, h.handshake_rtt
    assert 0.2 < connect < 0.2 + SLACK + RTT + 0.005, connect  # curl agrees (kernel 1 s: > 1 s)
    assert (stats["copies_taken"], stats["resends"], stats["answered"], stats["held"]) == (1, 1, 1, 0)
    assert stats["resend_lateness"]["max_us"] < 2000


def test_server_mode_resends_the_lost_synack_after_200ms(tmp_path):
    with bed(tmp_path, rtt="20ms", drop="synack = [1]") as b:
        # Started through the Python API (`shortflow.testbed.synopt`) rather than the CLI.
        d = SynoptDaemon(b.topo, "server", synopt.Options(delay_ms=200, retries=3, mode="server", ports=[80]))
        d.start()
        assert len(d.rules()) == 3  # SYN/ACK copy, first ACKs, RST (one inet table: IPv4 and IPv6)
        b.fetch()
        stats, _ = d.stop()
        assert d.rules() == []
        (h,) = b.handshakes()
    # The client saw one SYN and one SYN/ACK (the first was lost before this capture point).
    assert (h.syns, h.synacks) == (1, 1)
    took = h.established - h.first_syn
    assert DELAY + RTT - EARLY <= took <= DELAY + SLACK + RTT, took
    assert (stats["copies_taken"], stats["resends"], stats["answered"]) == (1, 1, 1)


def test_router_mode_protects_a_client_that_runs_nothing(tmp_path):
    """The daemon runs in the router; the client namespace has no synopt rule or process.
    The router's resend leaves the router itself (OUTPUT), after the link emulator's
    forward delay (filter FORWARD): the handshake completes 200 ms + the return half of the
    RTT after the first SYN reached the router."""
    with bed(tmp_path, rtt="20ms", drop="syn = [1]") as b:
        d = b.start_synopt("router", "-d", "200", "-r", "3", "--router", "-p", "80")
        assert b.synopt_rules("client") == [] and len(b.synopt_rules("router")) > 0
        b.fetch()
        stats, _ = b.stop_synopt(d)
        (h,) = b.handshakes()
    assert (h.syns, h.synacks) == (1, 1)  # the router's resend is not on the client's link
    took = h.established - h.first_syn
    assert DELAY + RTT / 2 - EARLY <= took <= DELAY + SLACK + RTT / 2, took
    # SYN kept then answered by the SYN/ACK; SYN/ACK kept then answered by the client's ACK.
    assert (stats["copies_taken"], stats["resends"], stats["answered"], stats["held"]) == (2, 1, 2, 0)


def test_without_synopt_the_kernel_waits_one_second(tmp_path):
    """The baseline the daemon improves on (Linux's SYN RTO, RFC 6298 (5.7): 1 s)."""
    with bed(tmp_path, rtt="20ms", drop="syn = [1]") as b:
        b.fetch()
        (h,) = b.handshakes()
    assert h.established - h.first_syn >= 1.0 + RTT - EARLY
