"""A synopt daemon that hangs never blocks a connection: its rules only copy packets
(NFLOG), so with the daemon stopped (SIGSTOP) a connection whose first SYN is lost still
connects, at the kernel's own SYN RTO (1 s), and one without loss at once. Its counters are
live (`shortflow synopt status`), and a second daemon on the same port or NFLOG group is
refused with the reason."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from shortflow.testbed import system
from shortflow.testbed.synopt import SynoptDaemon
from shortflow.testbed.system import in_ns
from synopt_bed import bed

pytestmark = pytest.mark.netns

ARGS = ["-d", "200", "-r", "3", "-c", "-p", "80"]


def status_in(ns: str) -> list[dict]:
    r = in_ns(ns, sys.executable, "-m", "shortflow", "synopt", "status", "--json")
    return json.loads(r.stdout)


def test_stopped_daemon_delays_nothing_and_status_says_it_does_not_answer(tmp_path):
    with bed(tmp_path, rtt="10ms", drop="syn = [1]") as b:
        client = b.ns("client")
        d = b.start_synopt("client", *ARGS)
        d.send_signal(signal.SIGSTOP)
        try:
            (st,) = status_in(client)
            assert st["answering"] is False, st
            # The first SYN is lost: the kernel's own timer resends it after 1 s (the daemon,
            # stopped, cannot); nothing waits for the daemon.
            lost = b.fetch(timeout_s=5)
            assert 0.95 < lost < 1.3, lost
            # No loss: the handshake takes one RTT, as without any daemon.
            assert b.fetch(timeout_s=5) < 0.1
        finally:
            d.send_signal(signal.SIGCONT)
        (st,) = status_in(client)
        assert st["answering"] is True and st["mode"] == "client" and st["pid"] == d.pid, st
        # Resumed, it read the copies it missed: two handshakes answered, none held.
        assert st["copies_taken"] >= 2 and st["held"] == 0 and st["bypassed"] == 0, st
        counters, _ = b.stop_synopt(d)
        assert counters["answered"] >= 2, counters
        assert "synopt" not in b.nft_ruleset("client")


def test_status_is_live_and_counts_a_resend(tmp_path):
    with bed(tmp_path, rtt="10ms", drop="syn = [1]") as b:
        d = b.start_synopt("client", *ARGS)
        connect = b.fetch(timeout_s=5)
        assert 0.2 < connect < 0.3, connect  # resent by the daemon after 200 ms
        (st,) = status_in(b.ns("client"))
        assert (st["resends"], st["answered"], st["held"]) == (1, 1, 0), st
        assert st["resend_lateness"]["count"] == 1, st
        human = in_ns(b.ns("client"), sys.executable, "-m", "shortflow", "synopt", "status").stdout
        assert f"run {st['run_id']}" in human and "resent 1" in human, human
        b.stop_synopt(d)


def test_second_daemon_on_the_same_port_or_group_is_refused(tmp_path):
    with bed(tmp_path, rtt="10ms") as b:
        first = b.start_synopt("client", *ARGS)
        same_port = SynoptDaemon(b.topo, "client", cli_args=ARGS)
        with pytest.raises(system.TestbedError, match="port 80 is already protected by a running shortflow-synopt"):
            same_port.start()
        same_group = SynoptDaemon(b.topo, "client", cli_args=["-d", "200", "-r", "3", "-c", "-p", "8080"])
        with pytest.raises(system.TestbedError, match="NFLOG group 7100 is already bound"):
            same_group.start()
        # Neither left a rule; the first still works and is the only one.
        assert len(b.synopt_rules("client")) == 3
        assert b.fetch() < 0.1
        other = SynoptDaemon(b.topo, "client", cli_args=["-d", "200", "-r", "3", "-c", "-p", "8080", "--group", "7101"])
        other.start()
        assert len(status_in(b.ns("client"))) == 2
        other.stop()
        b.stop_synopt(first)
        assert "synopt" not in b.nft_ruleset("client")


def test_status_without_daemons():
    r = subprocess.run([sys.executable, "-m", "shortflow", "synopt", "status", "--json"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert isinstance(json.loads(r.stdout), list)
