"""tcpdump on the router's two links: `client-side.pcap` (between client and router: what
the client sent, what reached it) and `server-side.pcap` (what the server sent, what
reached it). The router's emulator acts between the two."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from shortflow.host.daemon import DEVNULL, Daemon
from shortflow.testbed.topology import Topology


class Captures:
    def __init__(self, topo: Topology, out_dir: Path) -> None:
        self.topo, self.out_dir = topo, out_dir
        n = topo.names
        self.paths = {"client": out_dir / "client-side.pcap", "server": out_dir / "server-side.pcap"}
        self._devs = {"client": n.router_client_dev, "server": n.router_server_dev}
        self._daemons: list[Daemon] = []

    def start(self) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        for side, path in self.paths.items():
            # --immediate-mode and -U: packets still in the kernel ring at SIGINT would be lost.
            d = self.topo.daemon(f"tcpdump on the {side} side", "router",
                                 ["tcpdump", "-i", self._devs[side], "-n", "-U", "--immediate-mode", "-s", "256",
                                  "-w", str(path), "tcp"], stdout=DEVNULL)
            self._daemons.append(d)
            d.ready_stderr("listening on")

    def stop(self) -> dict[str, Path]:
        time.sleep(0.1)  # the last packets' trip through the ring buffer
        for d in self._daemons:
            d.signal_stop(signal.SIGINT, grace=10)
        return self.paths
