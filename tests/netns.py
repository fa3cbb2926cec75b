"""Network namespaces for tests: every object is named `sf-<run id>-…` and removed on exit.

Traffic flows only between the namespaces made here, on 10.231.x.y addresses inside them.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, check=check, timeout=60)


@dataclass
class Pair:
    """Two namespaces joined by a veth pair: `client` (10.231.0.1) and `server` (10.231.0.2)."""

    run_id: str
    client: str
    server: str
    client_dev: str
    server_dev: str
    client_ip: str = "10.231.0.1"
    server_ip: str = "10.231.0.2"
    procs: list[subprocess.Popen[str]] = field(default_factory=list)

    def exec(self, ns: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return sh("ip", "netns", "exec", ns, *args, check=check)

    def spawn(self, ns: str, *args: str) -> subprocess.Popen[str]:
        p = subprocess.Popen(["ip", "netns", "exec", ns, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        return p

    @contextlib.contextmanager
    def capture(self, ns: str, dev: str, path: Path, bpf: str) -> Iterator[None]:
        """tcpdump on `dev` in `ns` for the duration of the block, flushed on exit."""
        # --immediate-mode: without it packets wait in the kernel ring for up to a second
        # and those still waiting at SIGINT are lost.
        p = self.spawn(ns, "tcpdump", "-i", dev, "-n", "-U", "--immediate-mode", "-s", "256", "-w", str(path), bpf)
        assert p.stderr is not None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # tcpdump says when it listens
            line = p.stderr.readline()
            if "listening on" in line or not line:
                break
        try:
            yield
        finally:
            time.sleep(0.2)
            p.send_signal(signal.SIGINT)
            p.communicate(timeout=10)


@contextlib.contextmanager
def namespace_pair() -> Iterator[Pair]:
    run_id = uuid.uuid4().hex[:6]
    pair = Pair(run_id, f"sf-{run_id}-c", f"sf-{run_id}-s", f"sf{run_id}c", f"sf{run_id}s")
    try:
        sh("ip", "netns", "add", pair.client)
        sh("ip", "netns", "add", pair.server)
        sh("ip", "link", "add", pair.client_dev, "netns", pair.client, "type", "veth",
           "peer", "name", pair.server_dev, "netns", pair.server)
        for ns, dev, ip in ((pair.client, pair.client_dev, pair.client_ip), (pair.server, pair.server_dev, pair.server_ip)):
            pair.exec(ns, "ip", "addr", "add", f"{ip}/30", "dev", dev)
            pair.exec(ns, "ip", "link", "set", dev, "up")
            pair.exec(ns, "ip", "link", "set", "lo", "up")
            # Cached path metrics would change the next connection's timers.
            pair.exec(ns, "sysctl", "-q", "-w", "net.ipv4.tcp_no_metrics_save=1")
        yield pair
    finally:
        for p in pair.procs:
            if p.poll() is None:
                p.kill()
            p.communicate(timeout=10)  # reaps it and closes its pipes
        # Deleting a namespace removes its veth end (and so the pair) and its iptables rules.
        sh("ip", "netns", "del", pair.client, check=False)
        sh("ip", "netns", "del", pair.server, check=False)


def leftovers(run_id: str) -> list[str]:
    """Namespaces or links of this run still present (should be none)."""
    from shortflow.host.netns import links, namespaces

    return [name for name in namespaces() + links() if run_id in name]
