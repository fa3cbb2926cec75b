"""The host layer: namespaces and links read through `ip -j`, run ownership, and the BPF
program's configuration layout (shared by `tune` and the testbed)."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from shortflow.host import HostError, bpf, netns
from shortflow.host.runid import TESTBED_ROLE_OBJECT, fresh_run_id

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="creating a network namespace needs root")


@needs_root
def test_namespaces_and_links_come_from_ip_json():
    """A namespace and a veth pair the test creates are listed by name (no `@peer` suffix,
    no text scraping); killing the namespace removes both."""
    ns, dev = f"sf-{fresh_run_id()}-hostt", f"sf-{fresh_run_id()}-h"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "link", "add", dev, "type", "veth", "peer", "name", "peer0", "netns", ns], check=True)
        assert ns in netns.namespaces()
        assert dev in netns.links()
        assert netns.links(ns) == ["lo", "peer0"]
        sleeper = subprocess.Popen(["ip", "netns", "exec", ns, "sleep", "30"])
        try:
            # `ip netns exec` enters the namespace after it has started: wait for that.
            deadline = time.monotonic() + 5
            while not netns.namespace_pids(ns) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert netns.namespace_pids(ns) not in (None, [])
            assert netns.kill_namespace(ns)
            assert sleeper.wait(timeout=5) != 0, "the process inside was killed"
        finally:
            sleeper.kill()
            sleeper.wait(timeout=5)
        assert ns not in netns.namespaces()
        assert dev not in netns.links(), "deleting the namespace removed the veth pair"
        assert netns.namespace_pids(ns) is None and not netns.kill_namespace(ns)
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "link", "del", dev], capture_output=True)


def test_owner_record_names_a_live_process_and_not_a_reused_pid(tmp_path):
    netns.write_owner(tmp_path)
    assert netns.owner_alive(tmp_path) == os.getpid()
    pid, start = (tmp_path / netns.OWNER_FILE).read_text().split()
    (tmp_path / netns.OWNER_FILE).write_text(f"{pid} {int(start) + 1}\n")  # same pid, another process
    assert netns.owner_alive(tmp_path) is None
    (tmp_path / netns.OWNER_FILE).write_text("garbage\n")
    assert netns.owner_alive(tmp_path) is None
    assert netns.owner_alive(tmp_path / "missing") is None


def test_config_names_struct_configs_members_and_refuses_what_does_not_fit():
    c = bpf.Config(syn_rto_jiffies=750, port=443, timer_min_us=8000)
    assert c.fields() == [("syn_rto_jiffies", 750), ("iw_segments", 0), ("rto_min_us", 0), ("delack_max_us", 0),
                          ("sfr_factor_pct", 0), ("sfr_cutout_bytes", 0), ("sfr_restore_us", 0), ("port", 443),
                          ("timer_min_us", 8000)]
    with pytest.raises(HostError, match="syn_rto_jiffies = 4294967296"):
        bpf.Config(syn_rto_jiffies=1 << 32).fields()
    with pytest.raises(HostError, match="port = -1"):
        bpf.Config(port=-1).fields()


def test_testbed_role_cgroups_are_told_apart_from_a_tuners_scope():
    """`tune revert --orphans` leaves a live testbed run's SYN-RTO program alone: its cgroups
    are named by role; a cgroup the tuner was scoped to is not."""
    assert TESTBED_ROLE_OBJECT.match("sf-0a1b2c-client")
    assert TESTBED_ROLE_OBJECT.match("sf-0a1b2c-server")
    assert not TESTBED_ROLE_OBJECT.match("sf-0a1b2c-tune")
    assert not TESTBED_ROLE_OBJECT.match("sf-0a1b2c-clientx")
