"""TCP sockets read over sock_diag, against real sockets: listeners found in the namespace
they listen in and not elsewhere, and smoothed RTTs that agree with what `ss` (iproute2's
own reading of the same tcp_info) prints for the same connection."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time

import pytest

from shortflow.host import sockets


def test_rtts_agree_with_ss_for_the_same_connection() -> None:
    with socket.create_server(("127.0.0.1", 0)) as srv:
        port = srv.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as c:
            a, _ = srv.accept()
            with a:
                for _ in range(20):  # a few round trips, so the RTT is a measured one
                    c.sendall(b"x" * 100)
                    a.recv(100)
                    a.sendall(b"y")
                    c.recv(1)
                mine = [s for s in sockets.tcp("established") if s.local == f"127.0.0.1:{c.getsockname()[1]}"]
                ss = subprocess.run(["ss", "-H", "-tin", "state", "established", f"sport = :{c.getsockname()[1]}"],
                                    capture_output=True, text=True, check=True).stdout
                assert sockets.listening(port)
    (s,) = mine
    assert s.peer == f"127.0.0.1:{port}" and s.rtt_s is not None
    m = re.search(r"\brtt:([0-9.]+)/", ss)
    assert m, ss
    # The two readings are moments apart on an idle loopback: the same smoothed RTT within 1 ms.
    assert abs(s.rtt_s - float(m.group(1)) / 1000) < 0.001, (s.rtt_s, ss)
    assert 0 < s.rtt_s < 0.1


@pytest.mark.netns
def test_a_listener_is_found_in_its_own_namespace_only(lone_ns: str) -> None:
    ns = lone_ns
    subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"], check=True)
    code = "import socket,sys,time; s=socket.create_server(('::',47123),family=socket.AF_INET6); print(1,flush=True); time.sleep(60)"
    listener = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout is not None and listener.stdout.readline().strip() == "1"
        deadline = time.monotonic() + 5
        while not sockets.listening(47123, ns) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sockets.listening(47123, ns)
        assert [s.local for s in sockets.tcp("listening", ns)] == ["[::]:47123"]
        assert not sockets.listening(47124, ns)
        assert not any(s.local.endswith(":47123") for s in sockets.tcp("listening")), "not in this namespace"
    finally:
        listener.kill()
        listener.communicate()
