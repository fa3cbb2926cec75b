"""tcpdump on the router's two links: `client-side.pcap` (between client and router: what
the client sent, what reached it) and `server-side.pcap` (what the server sent, what
reached it). The router's emulator acts between the two."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from shortflow.testbed.system import TestbedError
from shortflow.testbed.topology import Topology, stop


class Captures:
    def __init__(self, topo: Topology, out_dir: Path) -> None:
        self.topo, self.out_dir = topo, out_dir
        n = topo.names
        self.paths = {"client": out_dir / "client-side.pcap", "server": out_dir / "server-side.pcap"}
        self._devs = {"client": n.router_client_dev, "server": n.router_server_dev}
        self._procs: list[subprocess.Popen[str]] = []

    def start(self) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        for side, path in self.paths.items():
            # --immediate-mode and -U: packets still in the kernel ring at SIGINT would be lost.
            p = self.topo.spawn(f"tcpdump ({side} side)", "router",
                                ["tcpdump", "-i", self._devs[side], "-n", "-U", "--immediate-mode", "-s", "256",
                                 "-w", str(path), "tcp"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            self._procs.append(p)
            self._wait_listening(p, side)

    @staticmethod
    def _wait_listening(p: subprocess.Popen[str], side: str) -> None:
        assert p.stderr is not None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            line = p.stderr.readline()
            if "listening on" in line:
                return
            if not line:
                break
        raise TestbedError(f"tcpdump on the {side} side did not start: {line.strip()}")

    def stop(self) -> dict[str, Path]:
        time.sleep(0.1)  # the last packets' trip through the ring buffer
        for p in self._procs:
            stop(p, signal.SIGINT, grace=10)
        return self.paths
