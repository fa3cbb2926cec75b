"""Every exit path of a testbed run leaves nothing behind: SIGTERM, Ctrl-C (SIGINT) and a
crashed child (the link emulator killed mid-run)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from shortflow.testbed.clean import leftovers
from shortflow.testbed.names import PREFIX, RUN_ID_PREFIX_ENV

pytestmark = pytest.mark.netns

# The first SYN is dropped, so the run waits ~1 s for the retransmission: time to interrupt.
SCENARIO = """
    [path]
    rtt = "20ms"
    [drop]
    syn = [1]
    [workload]
    response = "1000B"
"""


def start_run(tmp_path: Path) -> subprocess.Popen[str]:
    s = tmp_path / "s.toml"
    s.write_text(textwrap.dedent(SCENARIO))
    # SIGINT back to its default: a child of a non-interactive shell may inherit SIG_IGN.
    return subprocess.Popen([sys.executable, "-m", "shortflow", "testbed", "run", str(s)], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def wait_for_router(before: dict[str, list[str]], timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tag = PREFIX + os.environ.get(RUN_ID_PREFIX_ENV, "")
        new = [n for n in leftovers()["namespaces"]
               if n not in before["namespaces"] and n.endswith("-router") and n.startswith(tag)]
        if new:
            return new[0]
        time.sleep(0.05)
    raise AssertionError("the run never built its router namespace")


def comm(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:  # it exited meanwhile
        return ""


def assert_nothing_new(before: dict[str, list[str]]) -> None:
    """Nothing new of this session's runs (their ids start with the session's tag, see
    conftest): a testbed someone runs beside the tests is not ours to judge."""
    tag = PREFIX + os.environ.get(RUN_ID_PREFIX_ENV, "")
    after = leftovers()
    new = {k: sorted(x for x in set(after[k]) - set(before[k]) if tag in x) for k in after}
    assert not any(new.values()), new


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_mid_run_removes_everything(tmp_path, sig):
    before = leftovers()
    p = start_run(tmp_path)
    wait_for_router(before)
    time.sleep(0.5)  # inside the SYN retransmission wait
    p.send_signal(sig)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert_nothing_new(before)


def test_crashed_emulator_ends_the_run_and_removes_everything(tmp_path):
    before = leftovers()
    p = start_run(tmp_path)
    router = wait_for_router(before)
    deadline = time.monotonic() + 10
    netem = None
    while netem is None and time.monotonic() < deadline:
        pids = subprocess.run(["ip", "netns", "pids", router], capture_output=True, text=True).stdout.split()
        netem = next((int(x) for x in pids if comm(x) == "shortflow-netem"), None)
        time.sleep(0.05)
    assert netem is not None
    os.kill(netem, signal.SIGKILL)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 1
    assert "shortflow-netem exited early" in err
    assert_nothing_new(before)


def test_clean_leaves_a_live_run_alone_and_removes_it_with_force(tmp_path):
    from shortflow.testbed.clean import clean

    before = leftovers()
    p = start_run(tmp_path)
    try:
        router = wait_for_router(before)
        run_id = router.split("-")[1]
        # Stopped, the run is still alive but cannot race clean by tearing itself down.
        p.send_signal(signal.SIGSTOP)
        lines = clean(only=run_id)  # only= keeps the test off other people's runs
        assert any(f"run {run_id}: it is still running" in line for line in lines), lines
        assert router in leftovers()["namespaces"]
        lines = clean(force=True, only=run_id)
        assert any(router in line for line in lines), lines
        assert router not in leftovers()["namespaces"]
    finally:
        p.kill()
        p.communicate(timeout=30)
        clean(only=run_id)  # the killed run's work directory, now stale
    assert_nothing_new(before)


def clean_cli(run_id: str, tmpdir: Path) -> subprocess.CompletedProcess[str]:
    """`shortflow testbed clean` as another shell would run it: another $TMPDIR (as `sudo`
    gives), only this run's objects (the tests stay off other people's runs)."""
    return subprocess.run([sys.executable, "-m", "shortflow", "testbed", "clean", "--run", run_id], text=True,
                          capture_output=True, env={**os.environ, "TMPDIR": str(tmpdir), "COLUMNS": "400"}, timeout=120)


def test_clean_from_another_tmpdir_leaves_a_live_run_running(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    before = leftovers()
    p = start_run(tmp_path)
    try:
        router = wait_for_router(before)
        run_id = router.split("-")[1]
        r = clean_cli(run_id, elsewhere)
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        assert f"run {run_id}: it is still running (pid {p.pid})" in r.stdout, r.stdout
        assert router in leftovers()["namespaces"]
        # The run goes on to its end, untouched: its one connection completes.
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert "200" in out or "complete" in out.lower(), out
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate(timeout=30)
    assert_nothing_new(before)


def test_the_first_clean_after_a_sigkill_cleans_though_the_owner_is_a_zombie(tmp_path):
    before = leftovers()
    p = start_run(tmp_path)
    router = wait_for_router(before)
    run_id = router.split("-")[1]
    p.send_signal(signal.SIGKILL)
    # Not reaped yet: the owner is a zombie, and a zombie runs nothing.
    deadline = time.monotonic() + 10
    while Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        r = clean_cli(run_id, Path(tempfile.gettempdir()))
        assert r.returncode == 0 and "still running" not in r.stdout, r.stdout
        assert f"namespace {router}" in r.stdout, r.stdout
        assert not any(run_id in x for objs in leftovers().values() for x in objs), leftovers()
    finally:
        p.communicate(timeout=30)
    assert_nothing_new(before)
