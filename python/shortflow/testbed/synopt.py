"""A `shortflow synopt` daemon inside one of a run's namespaces (client, server or router),
started like the link emulator: `start()` returns once its rules are in, `stop()` (SIGTERM)
returns its counters. The topology stops it on every exit path; its rules go with the
namespace in any case.

    d = SynoptDaemon(topo, "client", synopt.Options(200, 3, "client", [80]))
    d.start(); ...; counters, _ = d.stop()

With `cli_args` instead of options, it runs the `shortflow synopt` command itself (which
execs the daemon: the process is the daemon either way).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from shortflow import synopt
from shortflow.host.daemon import Daemon, Process
from shortflow.testbed.clean import synopt_rules
from shortflow.testbed.system import TestbedError
from shortflow.testbed.topology import Topology

if TYPE_CHECKING:
    from shortflow.testbed.scenario_real import RealScenario


class SynoptDaemon:
    def __init__(self, topo: Topology, role: str, options: synopt.Options | None = None,
                 cli_args: list[str] | None = None) -> None:
        self.topo, self.role = topo, role
        self.stats_path = topo.workdir / f"synopt-{role}-stats.json"
        if options is not None:
            options.json_stats = self.stats_path
            self.command = synopt.command(options)
        elif cli_args is not None:
            self.command = [sys.executable, "-m", "shortflow", "synopt", *cli_args, "--json-stats", str(self.stats_path)]
        else:
            raise TypeError("SynoptDaemon needs options or cli_args")
        self.daemon: Daemon | None = None

    @property
    def proc(self) -> Process[str] | None:
        return self.daemon.proc if self.daemon else None

    def start(self) -> str:
        """Starts the daemon; returns its run id once its rules are installed."""
        self.daemon = self.topo.daemon(f"shortflow-synopt ({self.role})", self.role, self.command)
        return self.daemon.ready_line("ready ").split()[1]

    def rules(self) -> list[str]:
        """The rules of the synopt tables in the daemon's namespace, as `nft list` prints them."""
        return synopt_rules(self.topo.names.ns(self.role))

    def kill(self) -> None:
        """SIGKILL: the daemon cannot remove its rules; the kernel deletes its table when it
        owns it, else they stay (copying to nobody) until the next start or `testbed clean`."""
        if self.daemon is not None:
            self.daemon.kill()

    def stop(self) -> tuple[dict[str, Any], str]:
        """SIGTERM; returns (counters, what the daemon printed on stderr)."""
        if self.daemon is None:
            raise TestbedError("shortflow-synopt was not started")
        err = self.daemon.stop()
        return self.daemon.stats(self.stats_path), err


def start_synopt(topo: Topology, s: RealScenario) -> SynoptDaemon | None:
    """`[mechanisms] syn_optimizer`: the daemon in the namespace of its side (nginx's runs
    and the a-b-t peers' alike)."""
    o = s.syn_optimizer
    if o is None:
        return None
    d = SynoptDaemon(topo, o.side, synopt.Options(delay_ms=round(o.delay_s * 1000), retries=o.retries,
                                                   mode=o.side, ports=list(o.ports)))
    d.start()
    return d
