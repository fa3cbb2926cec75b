"""One scenario on the real kernel: build the namespaces, set the stacks, start the link,
nginx and the captures, run the built-in client, then read the captures with the project
analyzer: each connection's handshake, request, completion, resends and round trips."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa

import shortflow
from shortflow.testbed import names as N
from shortflow.testbed import stack
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
    # What each capture point sees best: the client's side its SYNs, request, the response
    # whole and its own resends; the server's side its SYN/ACKs, resends and round trips.
    client_side = _analyzer_rows(pcaps["client"], s.port)
    server_side = _analyzer_rows(pcaps["server"], s.port)
    origin = min((r["first_seen"] for r in client_side.values() if r["syn_seen"]), default=None)
    delta = {role: {k: after[role][k] - before[role].get(k, 0) for k in after[role]} for role in after}
    conns = []
    for probe in probes:
        port = probe.get("local_port")
        c = client_side.get(port) if port else None
        sv = server_side.get(port) if port else None
        conns.append(_connection(probe, c, sv, origin, delta if len(probes) == 1 else None))
    return {
        "scenario": s.name,
        "world": "real-kernel",
        "run_id": run_id,
        "connections": conns,
        "link": link_stats,
        "kernel_counters": {role: {k: v for k, v in d.items() if v and k.startswith("TcpExt")} for role, d in delta.items()},
    }


def _connection(probe: dict[str, Any], c: dict[str, Any] | None, sv: dict[str, Any] | None,
                origin: int | None, delta: dict[str, dict[str, int]] | None) -> dict[str, Any]:
    """One row from the analyzer's rows of the two captures: times from the client-side
    capture (the first SYN relative to the run's first SYN; request and completion
    relative to the connection's own first SYN, as the simulator counts them), SYN/ACKs
    and the response's round trips from the server-side capture (what the server sent)."""
    own = c if c is not None and c["syn_seen"] else None
    return {
        "client_port": probe.get("local_port"),
        "first_syn_s": round((own["first_seen"] - origin) / 1e9, 6) if own and origin is not None else None,
        "request_sent_s": _time(own, "request_sent_s"),
        "complete_s": _time(own, "response_whole_s"),
        "syn_transmissions": c["syn_count"] if c else None,
        "synack_transmissions": sv["synack_count"] if sv else None,
        "retransmissions": c["retx_c2s"] + sv["retx_s2c"] if c and sv else None,
        # RTO expirations and the loss-recovery events, from the kernel's own counters in
        # both namespaces (nstat's TcpExt*): per connection only when the run has one
        # connection (the counters are per namespace).
        **{key: _kernel_count(delta, names) for key, names in KERNEL_COUNTERS.items()},
        "handshake_rtt_s": _time(c, "handshake_rtt_s", digits=None),
        "established": c["established"] if c else None,
        "response_flights": sv["rounds"] if sv else None,
        "response_bytes": probe.get("body_bytes"),
        # nginx's header bytes before the body (the simulator is told them: compare).
        "response_headers": probe.get("header_bytes"),
        "status": probe.get("status"),
        "error": probe.get("error"),
        # The client read at real-time priority (probe.py): reads, and with them the ACKs
        # tcp_cleanup_rbuf sends and autotuning, follow each segment as in the simulator.
        "client_realtime": probe.get("realtime"),
    }


def _time(row: dict[str, Any] | None, column: str, digits: int | None = 6) -> float | None:
    """A time column of an analyzer row; None without the row or the time (NaN)."""
    value = None if row is None else row[column]
    if value is None or math.isnan(value):
        return None
    return float(value) if digits is None else round(float(value), digits)


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


#: The analyzer's columns a testbed row is made of.
ANALYZER_COLUMNS = ("client_port", "server_port", "syn_seen", "first_seen", "syn_count", "synack_count",
                    "established", "handshake_rtt_s", "request_sent_s", "response_whole_s", "retx_c2s", "retx_s2c",
                    "rounds")


def _analyzer_rows(pcap: Path, server_port: int) -> dict[int, dict[str, Any]]:
    """The analyzer's rows of one capture's connections to `server_port`, keyed by the
    client's port (its first connection from that port); `first_seen` in ns."""
    a = shortflow.analyze(pcap)
    if a.errors:
        raise TestbedError(f"the analyzer could not read {pcap}: {'; '.join(a.errors)}")
    t = a.table.select(list(ANALYZER_COLUMNS))
    i = t.schema.get_field_index("first_seen")
    t = t.set_column(i, "first_seen", t.column(i).cast(pa.int64()))
    rows: dict[int, dict[str, Any]] = {}
    for r in t.to_pylist():
        if r["server_port"] == server_port:
            rows.setdefault(r["client_port"], r)
    return rows
