"""A killed synopt daemon never blocks traffic (its rules only copy packets: NFLOG), and its
leftover nftables table is deleted by the next start of the daemon or by `shortflow testbed
clean`'s stale-table pass — but never the table of a daemon that is still running. After a
normal exit, SIGINT, SIGTERM, or SIGKILL and that clean-up, `nft list ruleset` holds nothing
of ours: no rule, no chain, no empty table."""

from __future__ import annotations

import signal

import pytest

from shortflow.testbed.clean import remove_stale_synopt_tables, stale_synopt_tables
from synopt_bed import bed, wait_for

pytestmark = pytest.mark.netns

ARGS = ("-d", "200", "-r", "3", "-c", "-p", "80")


def test_killed_daemon_fails_open_and_its_rules_are_removed(tmp_path):
    with bed(tmp_path, rtt="10ms") as b:
        client = b.ns("client")
        d = b.start_synopt("client", *ARGS)
        rules = b.synopt_rules("client")
        assert len(rules) == 3  # SYN copy, SYN/ACK and RST answers (one inet table: both families)
        assert stale_synopt_tables([client]) == [], "a live daemon's table is not stale"
        d.send_signal(signal.SIGKILL)
        d.wait(timeout=5)
        # The rules stay, but with nobody on the queue the kernel lets packets through.
        assert b.synopt_rules("client") == rules
        for _ in range(3):
            assert b.fetch(timeout_s=3) < 0.5
        # The next start removes the dead run's rules and installs its own.
        d2 = b.start_synopt("client", *ARGS)
        now = b.synopt_rules("client")
        assert len(now) == 3 and not set(now) & set(rules)
        _, err = b.stop_synopt(d2)
        assert err.count("removed the nftables table of a dead run") == 1, err
        assert "synopt" not in b.nft_ruleset("client"), "SIGTERM deletes the daemon's whole table"
        # Killed again: `shortflow testbed clean`'s pass finds and removes them.
        d3 = b.start_synopt("client", *ARGS)
        d3.send_signal(signal.SIGKILL)
        d3.wait(timeout=5)
        assert wait_for(lambda: len(stale_synopt_tables([client])) == 1)
        removed = remove_stale_synopt_tables([client])
        assert len(removed) == 1 and "synopt" not in b.nft_ruleset("client")
        assert b.fetch(timeout_s=3) < 0.5


def test_sigint_removes_rules_and_reports_counters(tmp_path):
    with bed(tmp_path, rtt="10ms") as b:
        d = b.start_synopt("client", *ARGS)
        b.fetch()
        d.send_signal(signal.SIGUSR1)
        assert wait_for(lambda: b.stats_path.exists()), "SIGUSR1 writes the JSON counters"
        d.send_signal(signal.SIGINT)
        d.wait(timeout=5)
        err = d.stderr.read() if d.stderr else ""
        assert d.returncode == 0, err
        assert "answered 1" in err and "resends 0" in err
        assert "synopt" not in b.nft_ruleset("client")
