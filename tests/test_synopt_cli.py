"""`shortflow synopt` refuses bad input with one line naming the problem and exit code 2,
a missing daemon with exit code 1, and a user without root with exit code 2 — before any
rule is touched."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from shortflow import synopt
from shortflow.exceptions import SynoptError


def cli(*args: str, env: dict[str, str] | None = None, user: int | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "shortflow", "synopt", *args]
    if user is not None:
        cmd = ["setpriv", "--reuid", str(user), "--regid", str(user), "--clear-groups", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, env={**os.environ, **(env or {})})


@pytest.mark.parametrize(("args", "message"), [
    (("-d", "200", "-r", "3", "-c", "-p", "80,x"), "'x' is not a port"),
    (("-d", "200", "-r", "3", "-c", "-p", "70000"), "'70000' is not a port"),
    (("-d", "200", "-r", "3", "-p", "80"), "choose exactly one of -c"),
    (("-d", "200", "-r", "3", "-c", "--router", "-p", "80"), "choose exactly one of -c"),
    (("-d", "0", "-r", "3", "-c", "-p", "80"), "at least 1"),
    (("-d", "5x", "-r", "3", "-c", "-p", "80"), "-d"),
    (("-d", "200", "-r", "-1", "-c", "-p", "80"), "retries must be between"),
    (("-d", "200", "-r", "3", "-c", "-p", "80", "--max-held", "0"), "--max-held"),
    (("-d", "200", "-r", "3", "-c", "-p", "80", "--prefix-len", "33,48"), "IPv4 prefixes are 0-32 bits"),
    (("-d", "200", "-r", "3", "-c", "-p", "80", "--prefix-len", "24"), "--prefix-len '24'"),
    (("-d", "200", "-r", "3", "-c", "-p", "80", "--rcvbuf-kb", "0"), "--rcvbuf-kb 0: at least 1"),
])
def test_bad_input_exits_2_with_one_line(args, message):
    r = cli(*args)
    assert r.returncode == 2, r
    assert message in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_missing_daemon_exits_1_and_says_how_to_build_it():
    r = cli("-d", "200", "-r", "3", "-c", "-p", "80", env={"SHORTFLOW_SYNOPT": "/nonexistent/shortflow-synopt"})
    assert r.returncode == 1 and "SHORTFLOW_SYNOPT" in r.stderr, r


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to run the command as an unprivileged user")
def test_without_root_exits_2():
    r = cli("-d", "200", "-r", "3", "-c", "-p", "80", user=65534)
    assert r.returncode == 2 and "needs root" in r.stderr, r


def test_command_line_of_the_daemon():
    o = synopt.Options(delay_ms=200, retries=3, mode="router", ports=[80, 443], max_held=1000)
    assert synopt.command(o, exe="/x") == ["/x", "-d", "200", "-r", "3", "--router", "-p", "80,443",
                                           "--max-held", "1000", "--group", "7100"]
    assert synopt.parse_ports("80, 443,80") == [80, 443]
    assert synopt.parse_delay_ms("200ms") == synopt.parse_delay_ms("200") == 200
    with pytest.raises(SynoptError):
        synopt.parse_delay_ms("200us")


def test_daemon_rejects_bad_arguments_itself():
    """The Rust daemon checks too (exit 2), for callers that skip the front."""
    try:
        exe = synopt.binary()
    except SynoptError:
        pytest.skip("shortflow-synopt is not built (make build)")
    r = subprocess.run([exe, "-d", "0", "-r", "3", "-c", "-p", "80"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and "delay" in r.stderr
    r = subprocess.run([exe, "-d", "200", "-r", "3", "-p", "80"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 2


@pytest.mark.netns
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the daemon's nftables table and NFLOG socket")
def test_prefix_length_and_receive_buffer_reach_the_daemon(tmp_path):
    """--prefix-len and --rcvbuf-kb are the daemon's: it runs with them (in a namespace of
    the test's own) and reports the prefix lengths it groups initiators by."""
    import signal
    import time
    import uuid

    ns = f"sf-{uuid.uuid4().hex[:6]}-syncli"
    stats = tmp_path / "stats.json"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"], check=True)
        d = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-m", "shortflow", "synopt", "-d", "200", "-r",
                              "3", "-c", "-p", "80", "--prefix-len", "16,32", "--rcvbuf-kb", "1024", "--json-stats",
                              str(stats)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        d.send_signal(signal.SIGTERM)
        _, err = d.communicate(timeout=20)
        assert d.returncode == 0, err
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
    import json

    doc = json.loads(stats.read_text())
    assert doc["prefix_len"] == [16, 32], doc
    o = synopt.Options(delay_ms=200, retries=3, mode="client", ports=[80], prefix_len=(16, 32), rcvbuf_kb=1024)
    assert synopt.command(o, exe="/x")[-4:] == ["--prefix-len", "16,32", "--rcvbuf-kb", "1024"]
