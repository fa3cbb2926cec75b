"""One scenario on the real kernel: build the namespaces, set the stacks, start the link,
nginx and the captures, run the built-in client, then read the captures with the project
analyzer (handshake) and `wire` (request, completion, retransmissions, flights)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import shortflow
from shortflow.testbed import names as N
from shortflow.testbed import stack, wire
from shortflow.testbed.capture import Captures
from shortflow.testbed.link import Link
from shortflow.testbed.realize import realize
from shortflow.testbed.scenario_real import RealScenario
from shortflow.testbed.server import Nginx, body_path
from shortflow.testbed.synopt import start_synopt
from shortflow.testbed.system import TestbedError, ns_counters
from shortflow.testbed.topology import Topology

PROBE = Path(__file__).with_name("probe.py")


def run(s: RealScenario, pcap_dir: Path | None = None, cgroup: Path | None = None,
        cgroup_roles: tuple[str, ...] = ("client", "server"),
        sysctls: dict[str, dict[str, str | int]] | None = None) -> dict[str, Any]:
    """Runs `s` once and returns the result (the keys of `shortflow simulate`). With
    `cgroup`, the processes of `cgroup_roles` run in that cgroup (unless the stack needs its
    own for a SYN RTO): where `shortflow tune`'s program is attached. `sysctls`: per role,
    set in its namespace after the stack's own."""
    from shortflow.testbed import abt_run

    if abt_run.is_abt(s):
        return abt_run.run(s, pcap_dir)
    plan = s.plan if s.plan is not None else realize(s)
    with Topology() as topo:
        stack.apply(topo, "client", plan.client)
        stack.apply(topo, "server", plan.server)
        for role, values in (sysctls or {}).items():
            for key, value in values.items():
                topo.sysctl(role, key, value)
        if cgroup is not None:
            for role in cgroup_roles:
                topo.cgroups.setdefault(role, cgroup)
        link = Link(topo, s)
        link.start()
        Nginx(topo, [s.response_bytes], s.port).start()
        synopt_daemon = start_synopt(topo, s)
        caps = Captures(topo, pcap_dir or topo.workdir / "pcap")
        caps.start()
        before = {r: ns_counters(topo.names.ns(r)) for r in ("client", "server")}
        probes = _run_client(topo, s)
        after = {r: ns_counters(topo.names.ns(r)) for r in ("client", "server")}
        pcaps = caps.stop()
        link_stats = link.stop()
        result = _result(s, pcaps, probes, link_stats, before, after, topo.names.run_id)
        if synopt_daemon is not None:
            result["synopt"] = synopt_daemon.stop()[0]
        if pcap_dir is not None:
            result["pcaps"] = {k: str(v) for k, v in pcaps.items()}
    return result


def _run_client(topo: Topology, s: RealScenario) -> list[dict[str, Any]]:
    args = [sys.executable, str(PROBE), N.SERVER_IP, str(s.port), body_path(s.response_bytes),
            str(s.request_bytes), str(s.connections), repr(s.interval_s)]
    client = topo.daemon("the client", "client", args)
    budget = s.connections * (s.interval_s + 130) + 10
    # TestbedError (the host layer's HostError) when it fails, hangs, or a daemon it needs dies.
    out, _ = client.wait(budget, check=lambda: topo.check_children(skip=client))
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _result(s: RealScenario, pcaps: dict[str, Path], probes: list[dict[str, Any]], link_stats: dict[str, Any],
            before: dict[str, dict[str, int]], after: dict[str, dict[str, int]], run_id: str) -> dict[str, Any]:
    client_side = wire.flows(pcaps["client"], s.port)
    server_side = wire.flows(pcaps["server"], s.port)
    handshake = _analyzer_rows(pcaps["client"])
    origin = min((f.first_syn for f in client_side.values() if f.first_syn is not None), default=math.nan)
    delta = {role: {k: after[role][k] - before[role].get(k, 0) for k in after[role]} for role in after}
    conns = []
    for probe in probes:
        port = probe.get("local_port")
        c = client_side.get(port) if port else None
        sv = server_side.get(port) if port else None
        hs = handshake.get(port, {}) if port else {}
        conns.append(_connection(s, probe, c, sv, hs, origin, delta if len(probes) == 1 else None))
    return {
        "scenario": s.name,
        "world": "real-kernel",
        "run_id": run_id,
        "connections": conns,
        "link": link_stats,
        "kernel_counters": {role: {k: v for k, v in d.items() if v and k.startswith("TcpExt")} for role, d in delta.items()},
    }


def _rel(t: float | None, origin: float) -> float | None:
    return None if t is None or math.isnan(origin) else round(t - origin, 6)


def _connection(s: RealScenario, probe: dict[str, Any], c: wire.Flow | None, sv: wire.Flow | None,
                hs: dict[str, Any], origin: float, delta: dict[str, dict[str, int]] | None) -> dict[str, Any]:
    """One row: times from the client-side capture (the first SYN relative to the run's
    first SYN; request and completion relative to the connection's own first SYN, as the
    simulator counts them), SYN/ACKs and the response's flights from the server-side
    capture (what the server sent)."""
    gap = max(s.rtt_s / 2, 0.002)
    own = c.first_syn if c and c.first_syn is not None else math.nan
    return {
        "client_port": probe.get("local_port"),
        "first_syn_s": _rel(c.first_syn if c else None, origin),
        "request_sent_s": _rel(c.request_sent if c else None, own),
        "complete_s": _rel(c.complete if c else None, own),
        "syn_transmissions": hs.get("syn_count", c.syns if c else None),
        "synack_transmissions": sv.synacks if sv else None,
        "retransmissions": sum(c.retransmissions[:1]) + sum(sv.retransmissions[1:]) if c and sv else None,
        # RTO expirations and the loss-recovery events, from the kernel's own counters in
        # both namespaces (nstat's TcpExt*): per connection only when the run has one
        # connection (the counters are per namespace).
        **{key: _kernel_count(delta, names) for key, names in KERNEL_COUNTERS.items()},
        "handshake_rtt_s": hs.get("handshake_rtt_s"),
        "established": hs.get("established"),
        "response_flights": wire.flights(sv.data_times[1], gap) if sv else None,
        "response_bytes": probe.get("body_bytes"),
        # nginx's header bytes before the body (the simulator is told them: compare).
        "response_headers": probe.get("header_bytes"),
        "status": probe.get("status"),
        "error": probe.get("error"),
        # The client read at real-time priority (probe.py): reads, and with them the ACKs
        # tcp_cleanup_rbuf sends and autotuning, follow each segment as in the simulator.
        "client_realtime": probe.get("realtime"),
    }


#: Per-connection keys of `shortflow simulate` and the kernel counters that count the same,
#: summed over both namespaces.
KERNEL_COUNTERS = {
    "timeouts": ("TcpExtTCPTimeouts",),
    "fast_retransmits": ("TcpExtTCPSackRecovery", "TcpExtTCPRenoRecovery"),
    "tlp_probes": ("TcpExtTCPLossProbes",),
    "spurious_timeouts": ("TcpExtTCPSpuriousRTOs",),
    "dsacks": ("TcpExtTCPDSACKRecv",),
}


def _kernel_count(delta: dict[str, dict[str, int]] | None, names: tuple[str, ...]) -> int | None:
    if delta is None:
        return None
    return sum(delta[role].get(n, 0) for role in ("client", "server") for n in names)


def _analyzer_rows(pcap: Path) -> dict[int, dict[str, Any]]:
    """The analyzer's handshake columns of one capture, keyed by the client's port."""
    a = shortflow.analyze(pcap)
    if a.errors:
        raise TestbedError(f"the analyzer could not read {pcap}: {'; '.join(a.errors)}")
    cols = ("client_port", "syn_count", "synack_count", "handshake_rtt_s", "established")
    t = a.table.select(list(cols)).to_pylist()
    rows: dict[int, dict[str, Any]] = {}
    for r in t:
        if r["handshake_rtt_s"] is not None and math.isnan(r["handshake_rtt_s"]):
            r["handshake_rtt_s"] = None
        rows.setdefault(r["client_port"], r)
    return rows
