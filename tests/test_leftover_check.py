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
