"""The host layer: namespaces and links read through `ip -j`, run ownership, and the BPF
program's configuration layout (shared by `tune` and the testbed)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shortflow.host import HostError, bpf, netns, records
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


def test_owner_record_names_a_live_process_and_not_a_reused_pid_nor_a_zombie(tmp_path):
    record = tmp_path / "owner"
    records.write_owner(record)
    assert records.live_owner(record) == os.getpid()
    pid, start = record.read_text().split()
    record.write_text(f"{pid} {int(start) + 1}\n")  # same pid, another process
    assert records.live_owner(record) is None
    record.write_text("garbage\n")
    assert records.live_owner(record) is None
    assert records.live_owner(tmp_path / "missing") is None
    # A child that has exited and is not reaped yet: a zombie is no owner.
    child = subprocess.Popen([sys.executable, "-c", "import sys, pathlib; from shortflow.host import records; "
                              "records.write_owner(pathlib.Path(sys.argv[1])); print('written', flush=True); "
                              "sys.stdin.read()", str(record)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "written"
    assert records.live_owner(record) == child.pid
    assert child.stdin is not None
    child.stdin.close()
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert records.live_owner(record) is None, "a zombie runs nothing"
    child.wait()
    child.stdout.close()


def test_a_host_lock_names_its_holder_and_goes_with_it(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "RUN_DIR", tmp_path)
    lock = records.HostLock("t")
    assert records.holder(lock.path) is None and lock.acquire() is None
    assert records.holder(lock.path) == os.getpid()
    # Another process finds it busy, named; then the holder is killed: free at once.
    take = ("import sys, pathlib; from shortflow.host import records; records.RUN_DIR = pathlib.Path(sys.argv[1]); "
            "print(records.HostLock('t').acquire(), flush=True); sys.stdin.read()")
    with subprocess.Popen([sys.executable, "-c", take, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True) as other:
        assert other.stdout is not None and other.stdout.readline().strip() == str(os.getpid())
        other.kill()
    lock.release()
    assert records.holder(lock.path) is None
    with subprocess.Popen([sys.executable, "-c", take, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True) as other:
        assert other.stdout is not None and other.stdout.readline().strip() == "None"
        assert records.holder(lock.path) == other.pid and lock.acquire() == other.pid
        other.kill()
    assert lock.acquire() is None, "SIGKILLed: the kernel dropped its lock"
    lock.release()


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
