"""The emulated link in the router namespace: `shortflow-netem` on NFQUEUE for delay, loss
and scripted drops (this kernel has no netem qdisc), `tbf` on the router's two egress veths
for the bottleneck rate and its drop-tail queue.

The emulator is handed the scenario itself (`--scenario`, the same text and overrides the
testbed resolved) and resolves it through the same model as the simulator: its delays,
serialization, scripted drops and random loss (Bernoulli or Gilbert-Elliott) are the
simulator's, and nothing here translates them."""

from __future__ import annotations

import json
import signal
import subprocess
from typing import Any

from shortflow.host import daemons
from shortflow.testbed.names import RunNames
from shortflow.testbed.scenario_real import RealScenario
from shortflow.testbed.system import TestbedError, in_ns
from shortflow.testbed.topology import Topology, stop

MTU_FRAME = 1514


class Link:
    """Started by `start()`, stopped by `stop()` (which returns the emulator's statistics)."""

    def __init__(self, topo: Topology, s: RealScenario) -> None:
        self.topo, self.s = topo, s
        self.stats_path = topo.workdir / "netem-stats.json"
        self.scenario_path = topo.workdir / "scenario.toml"
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        n: RunNames = self.topo.names
        router = n.ns("router")
        args = [*daemons.command("netem"), "--queue", "0", "--stats", str(self.stats_path), *self._scenario_args()]
        self.proc = self.topo.spawn("shortflow-netem", "router", args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            err = self.proc.stderr.read() if self.proc.stderr and self.proc.poll() is not None else ""
            raise TestbedError(f"shortflow-netem did not start: {(line + ' ' + err).strip()}")
        # Queue 0 carries client → server, queue 1 server → client (by input device).
        for dev, queue in ((n.router_client_dev, "0"), (n.router_server_dev, "1")):
            in_ns(router, "iptables", "-A", "FORWARD", "-i", dev, "-m", "comment", "--comment", n.rule_comment,
                  "-j", "NFQUEUE", "--queue-num", queue)
        if self.s.bandwidth_bps:
            for dev in (n.router_client_dev, n.router_server_dev):
                in_ns(router, "tc", "qdisc", "add", "dev", dev, "root", "tbf", *self._tbf_args())

    def _scenario_args(self) -> list[str]:
        """`--scenario FILE --set K=V ...`: the text and overrides the testbed resolved,
        the text written into the run's work directory (a shipped scenario, or one built
        from text, has no file of its own; the run keeps what its emulator read)."""
        sc = self.s.scenario
        if sc is None:
            raise TestbedError("the emulator needs the scenario's text: load it with shortflow.testbed.load")
        self.scenario_path.write_text(sc.text)
        return ["--scenario", str(self.scenario_path), *(a for o in sc.overrides for a in ("--set", o))]

    def _tbf_args(self) -> list[str]:
        rate = self.s.bandwidth_bps or 0
        # Burst: one frame. A larger bucket lets the first frames of every flight through
        # at once, which no link does (the simulator's links serialize every packet; the
        # emulator adds each packet's own serialization time before tbf).
        burst = MTU_FRAME
        # The simulator's default queue (scenario: `path.queue` absent) is 1000 packets:
        # the same here, so neither world drops what the other would carry.
        limit = (self.s.queue_packets or 1000) * MTU_FRAME
        return ["rate", f"{int(rate)}bit", "burst", str(burst), "limit", str(limit)]

    def stop(self) -> dict[str, Any]:
        """Stops the emulator and returns its statistics (delays, drops it made)."""
        if self.proc is None:
            return {}
        stop(self.proc, signal.SIGTERM)
        err = self.proc.stderr.read() if self.proc.stderr else ""
        if self.proc.returncode != 0:
            raise TestbedError(f"shortflow-netem failed ({self.proc.returncode}): {err.strip()}")
        try:
            stats: dict[str, Any] = json.loads(self.stats_path.read_text())
        except (OSError, ValueError) as e:
            raise TestbedError(f"shortflow-netem wrote no statistics: {e}") from None
        if err.strip():
            stats["warnings"] = err.strip().splitlines()
        return stats
