"""The emulated link in the router namespace: `shortflow-netem` on NFQUEUE (this kernel has
no netem qdisc) for the whole path: delay, rate, drop-tail queue, loss and scripted drops.

The emulator is handed the scenario itself (`--scenario`, the same text and overrides the
testbed resolved) and resolves it through the same model as the simulator: it offers each
packet to the simulator's own ports (the sender's link, the router's egress with the
scenario's queue) and releases it when its last bit would arrive there; its scripted drops
and random loss (Bernoulli or Gilbert-Elliott) are the simulator's, and nothing here
translates them. There is no tbf: with a one-frame bucket (a larger one lets flights
through at once, which no link does) every late dequeue lost its lateness, about 18 µs a
packet on a loaded machine, and the path ran at 80 % of its rate (BENCHMARKS.md, "the
testbed side"); the emulator's releases are computed from the ports, so a late one does
not delay the next."""

from __future__ import annotations

from typing import Any

from shortflow.host import daemons, nft
from shortflow.host.daemon import Daemon
from shortflow.testbed.names import RunNames
from shortflow.testbed.scenario_real import RealScenario
from shortflow.testbed.system import TestbedError
from shortflow.testbed.topology import Topology

#: How long before a release the emulator stops sleeping and busy-waits. Its own default
#: (300 µs) releases within a µs but, once packets are due every few tens of µs (a path
#: above ~100 Mbit/s), spins without pause and keeps one of this machine's two cores from
#: the endpoints, whose late reads then change the ACKs the kernel sends. At 20 µs a
#: release is ~30 µs late at low rates (the wake-up), which the path's timing absorbs (each
#: release is computed from the simulator's ports, not from the previous one), and the
#: random suite's high-rate scenarios agreed 16 times in 20 against 12 (BENCHMARKS.md).
SPIN = "20us"


class Link:
    """Started by `start()`, stopped by `stop()` (which returns the emulator's statistics)."""

    def __init__(self, topo: Topology, s: RealScenario, abt_first_port: int | None = None) -> None:
        """`abt_first_port`: the a-b-t client's port of the first connection vector (in
        start order, each next one a port higher), so the emulator gives each connection
        its vector's own RTT."""
        self.topo, self.s, self.abt_first_port = topo, s, abt_first_port
        self.stats_path = topo.workdir / "netem-stats.json"
        self.scenario_path = topo.workdir / "scenario.toml"
        self.daemon: Daemon | None = None

    def start(self) -> None:
        n: RunNames = self.topo.names
        args = [*daemons.command("netem"), "--queue", "0", "--spin", SPIN, "--stats", str(self.stats_path),
                *self._scenario_args()]
        self.daemon = self.topo.daemon("shortflow-netem", "router", args)
        self.daemon.ready_line("ready")
        # Queue 0 carries client → server, queue 1 server → client (by input device).
        for dev, queue in ((n.router_client_dev, "0"), (n.router_server_dev, "1")):
            nft.iptables_add("FORWARD", ["-i", dev, "-m", "comment", "--comment", n.rule_comment,
                                         "-j", "NFQUEUE", "--queue-num", queue], n.ns("router"))

    def _scenario_args(self) -> list[str]:
        """`--scenario FILE --set K=V ...`: the text and overrides the testbed resolved,
        the text written into the run's work directory (a shipped scenario, or one built
        from text, has no file of its own; the run keeps what its emulator read)."""
        sc = self.s.scenario
        if sc is None:
            raise TestbedError("the emulator needs the scenario's text: load it with shortflow.testbed.load")
        self.scenario_path.write_text(sc.text)
        flows = [] if self.abt_first_port is None else ["--abt-first-port", str(self.abt_first_port)]
        return ["--scenario", str(self.scenario_path), *(a for o in sc.overrides for a in ("--set", o)), *flows]

    def stop(self) -> dict[str, Any]:
        """Stops the emulator and returns its statistics (delays, drops it made)."""
        if self.daemon is None:
            return {}
        err = self.daemon.stop()
        stats = self.daemon.stats(self.stats_path)
        if err.strip():
            stats["warnings"] = err.strip().splitlines()
        return stats
