"""The suite's leftover check catches what it is there for: a `tune revert` that leaks its
pins (whatever the pins are called), an attachment left on a host cgroup, a sysctl left
changed, while another session's objects appearing meanwhile are not counted."""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path

import pytest

from leftover_snapshot import leaked, snapshot
from shortflow.host import cgroup2_root
from shortflow.testbed.names import PREFIX, RUN_ID_PREFIX_ENV
from shortflow.tune import TuneSettings, apply, orphans, revert


@pytest.mark.netns
def test_a_revert_that_leaks_its_pins_is_caught(tmp_path, monkeypatch):
    tag = os.environ.get(RUN_ID_PREFIX_ENV, "")
    cg = cgroup2_root() / f"{PREFIX}{(tag + secrets.token_hex(3))[:6]}-leak"
    cg.mkdir()
    state = tmp_path / "state.json"
    before = snapshot()
    pin_dir = None
    try:
        result = apply(TuneSettings(iw=4, cgroup=cg), state_path=state)
        pin_dir = Path(result["bpf"]["pin_dir"])
        with monkeypatch.context() as m:
            m.setattr(orphans, "remove_pin_dir", lambda _p: None)  # the broken revert: pins stay
            revert(state_path=state)
        found = leaked(before, snapshot(), tag)
        assert found.get("bpf_pins") == [pin_dir.name], found
    finally:
        if pin_dir is not None:
            shutil.rmtree(pin_dir, ignore_errors=True)
        cg.rmdir()
    assert leaked(before, snapshot(), tag) == {}


def test_other_sessions_objects_are_not_ours_but_host_state_is():
    tag = "abc"
    before = {"bpf_pins": [], "attachments": [], "root_sysctls": ["net.ipv4.tcp_early_retrans=3"], "root_routes": []}
    after = {
        "bpf_pins": [f"{PREFIX}abc123-tune", f"{PREFIX}def456-tune"],  # ours, and another session's
        "attachments": ["/sys/fs/cgroup/sf-def456-tune tune sock_ops id=9",  # another session's cgroup
                        "/sys/fs/cgroup/system.slice tune sock_ops id=7"],     # the host's own cgroup
        "root_sysctls": ["net.ipv4.tcp_early_retrans=0"],
        "root_routes": [],
    }
    assert leaked(before, after, tag) == {
        "bpf_pins": [f"{PREFIX}abc123-tune"],
        "attachments": ["/sys/fs/cgroup/system.slice tune sock_ops id=7"],
        "root_sysctls": ["net.ipv4.tcp_early_retrans=0"],
    }
    assert leaked(after, after, tag) == {}


def test_a_local_dask_cluster_leaves_no_scratch_space():
    """Dask's LocalCluster leaves `dask-scratch-space` in the temporary directory by
    default; the project's cluster (sweeps, analyze) keeps its scratch in a directory of its
    own and removes it. The leftover check would see either."""
    from shortflow.cluster import dask_client

    before = snapshot()
    with dask_client(None, 1) as client:
        assert client.submit(sum, [1, 2]).result() == 3
        during = snapshot()["temp_dirs"]
        assert any("sf-dask-" in d for d in during), during  # the workers' scratch was ours
    assert leaked(before, snapshot(), "none") == {}
    assert leaked({"temp_dirs": []}, {"temp_dirs": ["/tmp/dask-scratch-space"]}, "x") == {"temp_dirs": ["/tmp/dask-scratch-space"]}
