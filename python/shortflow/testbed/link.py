"""The emulated link in the router namespace: `shortflow-netem` on NFQUEUE for delay, loss
and scripted drops (this kernel has no netem qdisc), `tbf` on the router's two egress veths
for the bottleneck rate and its drop-tail queue."""

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
#: Store-and-forward links of the simulator's path per direction (the host's access link
#: and the bottleneck, both at `bandwidth`: `path.access_bandwidth` is refused here).
SIM_HOPS = 2


def netem_args(s: RealScenario) -> list[str]:
    """Command-line of the emulator for scenario `s`: half the RTT each way."""
    delay = f"{s.one_way_delay_s * 1e6:.0f}us"
    args = ["--delay-forward", delay, "--delay-reverse", delay,
            "--loss-forward", repr(s.loss_forward), "--loss-reverse", repr(s.loss_reverse), "--seed", str(s.seed)]
    # [drop] by its own key names: the emulator decides with the simulator's loss model.
    for kind, nths in (("syn", s.drop_syn), ("synack", s.drop_synack), ("ack", s.drop_ack), ("data", s.drop_data),
                       ("client_data", s.drop_client_data)):
        args += [a for n in nths for a in ("--drop", f"{kind}:{n}")]
    if s.bandwidth_bps:
        # tbf (below) spaces packets at the rate; each link of the simulator's path also
        # takes a packet's own size/rate to send it, which tbf does not: the emulator adds it.
        args += ["--rate", f"{int(s.bandwidth_bps)}bit", "--serialize-hops", str(SIM_HOPS)]
    return args


class Link:
    """Started by `start()`, stopped by `stop()` (which returns the emulator's statistics)."""

    def __init__(self, topo: Topology, s: RealScenario) -> None:
        self.topo, self.s = topo, s
        self.stats_path = topo.workdir / "netem-stats.json"
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        n: RunNames = self.topo.names
        router = n.ns("router")
        args = [*daemons.command("netem"), "--queue", "0", "--stats", str(self.stats_path), *netem_args(self.s)]
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
