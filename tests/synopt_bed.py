"""The testbed's namespaces (client ─ router ─ server, emulated link, nginx, router captures)
with a `shortflow synopt` daemon started in one of them. Everything goes with the
`Topology` (namespaces, their rules, the daemon)."""

from __future__ import annotations

import contextlib
import subprocess
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import shortflow
from shortflow import testbed
from shortflow.tcp import ACK, SYN, read_pcap
from shortflow.testbed import names as N
from shortflow.testbed import stack
from shortflow.testbed.capture import Captures
from shortflow.testbed.clean import synopt_rules
from shortflow.testbed.link import Link
from shortflow.testbed.server import Nginx, body_path
from shortflow.testbed.synopt import SynoptDaemon
from shortflow.testbed.system import in_ns
from shortflow.testbed.topology import Topology

RESPONSE = 1000


@dataclass
class Handshake:
    """One connection read from the router's client-side capture."""

    syns: int
    synacks: int
    first_syn: float
    #: The client's ACK of the SYN/ACK: the handshake completed at the client.
    established: float
    #: The analyzer's handshake RTT (last SYN → ACK at this capture point).
    handshake_rtt: float


class Bed:
    def __init__(self, topo: Topology, caps: Captures) -> None:
        self.topo, self.caps = topo, caps
        self.daemons: dict[int, SynoptDaemon] = {}
        self.stats_path = topo.workdir / "synopt-stats.json"

    def ns(self, role: str) -> str:
        return self.topo.names.ns(role)

    def start_synopt(self, role: str, *args: str) -> subprocess.Popen[str]:
        """`shortflow synopt ARGS` in namespace `role`, through the CLI (which execs the
        daemon, so the process is the daemon); returns once its rules are in."""
        d = SynoptDaemon(self.topo, role, cli_args=list(args))
        d.start()
        assert d.proc is not None
        self.daemons[d.proc.pid] = d
        self.stats_path = d.stats_path
        return d.proc

    def stop_synopt(self, p: subprocess.Popen[str]) -> tuple[dict[str, Any], str]:
        return self.daemons[p.pid].stop()

    def synopt_rules(self, role: str) -> list[str]:
        """The rules of the synopt tables in `role`'s namespace (`nft list` text)."""
        return synopt_rules(self.ns(role))

    def nft_ruleset(self, role: str) -> str:
        """Everything nftables holds in `role`'s namespace."""
        return in_ns(self.ns(role), "nft", "list", "ruleset").stdout

    def fetch(self, timeout_s: float = 10) -> float:
        """One HTTP GET from the client namespace; returns curl's connect time (s)."""
        r = in_ns(self.ns("client"), "curl", "-s", "-o", "/dev/null", "--max-time", str(timeout_s),
                  "-w", "%{http_code} %{time_connect}", f"http://{N.SERVER_IP}{body_path(RESPONSE)}", check=False)
        code, connect = r.stdout.split()
        assert code == "200", f"curl: {r.stdout} {r.stderr}"
        return float(connect)

    def handshakes(self) -> list[Handshake]:
        """Every connection of the client-side capture (stops the captures)."""
        pcap = self.caps.stop()["client"]
        a = shortflow.analyze(pcap)
        assert not a.errors, a.errors
        segments = list(read_pcap(pcap))
        out = []
        for r in a.table.to_pylist():
            if r["server_port"] != N.HTTP_PORT:
                continue
            port = r["client_port"]
            syns = [s.ts for s in segments if s.src_port == port and s.flags == SYN]
            acks = [s.ts for s in segments if s.src_port == port and s.flags == ACK]
            assert syns and acks and r["established"], (port, r)
            out.append(Handshake(r["syn_count"], r["synack_count"], syns[0], acks[0], r["handshake_rtt_s"]))
        return out


@contextlib.contextmanager
def bed(tmp_path: Path, *, rtt: str = "20ms", drop: str = "") -> Iterator[Bed]:
    """Namespaces, link (RTT `rtt`, `[drop]` body `drop`), nginx and captures running."""
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(textwrap.dedent(f"""
        name = "synopt test"
        [path]
        rtt = "{rtt}"
        [drop]
        {drop}
        [workload]
        response = "{RESPONSE}B"
    """))
    s = testbed.load(scenario)
    with Topology() as topo:
        stack.apply(topo, "client", s.plan.client)
        stack.apply(topo, "server", s.plan.server)
        Link(topo, s).start()
        Nginx(topo, [RESPONSE]).start()
        caps = Captures(topo, tmp_path / "pcap")
        caps.start()
        yield Bed(topo, caps)


def wait_for(pred: Any, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return bool(pred())
