"""A killed synopt daemon never blocks traffic (its rules only copy packets: NFLOG). Its
nftables table belongs to its netlink socket (`flags owner`), so the kernel deletes it when
the daemon is SIGKILLed; a table made without an owner (`--unowned-table`, the fallback on
kernels before 5.12 or without libnftables) is deleted by the next start of the daemon or by
`shortflow testbed clean`'s stale-table pass — but never the table of a daemon that is still
running. After a normal exit, SIGINT, SIGTERM, or SIGKILL (and that clean-up for unowned
tables), `nft list ruleset` holds nothing of ours: no rule, no chain, no empty table."""

from __future__ import annotations

import ctypes.util
import json
import os
import signal
import subprocess

import pytest

from shortflow.testbed.clean import remove_stale_synopt_tables, stale_synopt_tables
from synopt_bed import bed, wait_for

pytestmark = pytest.mark.netns

ARGS = ("-d", "200", "-r", "3", "-c", "-p", "80")


def _owner_tables_unavailable() -> str | None:
    """Why this machine cannot own a table (the daemon then falls back, and says so)."""
    if ctypes.util.find_library("nftables") is None:
        return "libnftables is not installed (the nftables package provides it)"
    release = tuple(int(x) for x in os.uname().release.split(".")[:2] if x.isdigit())
    if release < (5, 12):
        return f"kernel {os.uname().release} has no owner flag for nftables tables (Linux 5.12+)"
    return None


def test_sigkilled_daemon_leaves_no_table(tmp_path):
    why = _owner_tables_unavailable()
    if why:
        pytest.skip(why)
    with bed(tmp_path, rtt="10ms") as b:
        client = b.ns("client")
        d = b.start_synopt("client", *ARGS)
        assert len(b.synopt_rules("client")) == 3
        d.send_signal(signal.SIGUSR1)
        assert wait_for(lambda: b.stats_path.exists()), "SIGUSR1 writes the JSON counters"
        assert json.loads(b.stats_path.read_text())["table_owned"] is True
        # Another process (here `nft`) may not touch an owned table: only its daemon can.
        r = subprocess.run(["ip", "netns", "exec", client, "nft", "delete", "table", "inet",
                            b.synopt_rules("client")[0].split(":")[0]], capture_output=True, text=True, timeout=30)
        assert r.returncode != 0 and "Operation not permitted" in r.stderr, r
        d.send_signal(signal.SIGKILL)
        d.wait(timeout=5)
        # The kernel deleted the table with the daemon's socket: nothing of ours, at once,
        # with no clean-up run.
        assert "synopt" not in b.nft_ruleset("client"), b.nft_ruleset("client")
        assert stale_synopt_tables([client]) == []
        assert b.fetch(timeout_s=3) < 0.5


def test_killed_daemon_fails_open_and_its_unowned_rules_are_removed(tmp_path):
    with bed(tmp_path, rtt="10ms") as b:
        client = b.ns("client")
        d = b.start_synopt("client", *ARGS, "--unowned-table")
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
        d2 = b.start_synopt("client", *ARGS, "--unowned-table")
        now = b.synopt_rules("client")
        assert len(now) == 3 and not set(now) & set(rules)
        _, err = b.stop_synopt(d2)
        assert err.count("removed the nftables table of a dead run") == 1, err
        assert "synopt" not in b.nft_ruleset("client"), "SIGTERM deletes the daemon's whole table"
        # Killed again: `shortflow testbed clean`'s pass finds and removes them.
        d3 = b.start_synopt("client", *ARGS, "--unowned-table")
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
