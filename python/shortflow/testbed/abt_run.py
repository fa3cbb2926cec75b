"""A scenario of kind "abt" on the real kernel: the testbed's namespaces, stacks, link
emulator and captures as for any scenario, with the testbed's own a-b-t client and server
(`abt_peer.py`) replaying the scenario's connection vectors instead of nginx and the
built-in client. Every exchange boundary then has a real kernel's truth (keep-alive
requests, think times, pauses; a reader that stops reading; a RST after idle).

Started the way the testbed starts its processes (`Topology.spawn`): two children in the
client and server namespaces, stopped with the topology.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

from shortflow.host import sockets
from shortflow.host.daemon import DEVNULL, PIPE, Process
from shortflow.testbed import names as N
from shortflow.testbed import stack
from shortflow.testbed.capture import Captures
from shortflow.testbed.link import Link
from shortflow.testbed.realize import realize
from shortflow.testbed.scenario_real import NS, RealScenario
from shortflow.testbed.synopt import start_synopt
from shortflow.testbed.system import TestbedError
from shortflow.testbed.topology import Topology

PEER = Path(__file__).with_name("abt_peer.py")
#: Client source ports, one per vector: how the server tells the vectors apart.
FIRST_PORT = 41000


def is_abt(s: RealScenario) -> bool:
    kind = s.resolved["workload"]["kind"]
    return isinstance(kind, dict) and "abt" in kind


def plans(s: RealScenario, options: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The peers' plan (see `abt_peer`): each vector with its client port and start time;
    `options` (``stall_ms``, ``reset``) apply to every connection."""
    vectors = sorted(s.resolved["workload"]["kind"]["abt"]["vectors"], key=lambda v: v["start_us"])
    first = vectors[0]["start_us"] if vectors else 0
    out = []
    for i, v in enumerate(vectors):
        p: dict[str, Any] = {"port": FIRST_PORT + i, "start_s": (v["start_us"] - first) / 1e6, **(options or {})}
        units = v["units"]
        if "Sequential" in units:
            p["epochs"] = [[e["request"], e["response_delay_us"], e["response"], e["interval_us"]] for e in units["Sequential"]]
        else:
            p["concurrent"] = [[[a["bytes"], a["wait_us"]] for a in side] for side in units["Concurrent"]]
        out.append(p)
    return out


def _copy_vectors_file(s: RealScenario, workdir: Path) -> None:
    """The emulator reads the scenario again from the run's directory: a vector file named
    relative to the scenario goes beside it there too."""
    assert s.scenario is not None
    name = tomllib.loads(s.scenario.text).get("workload", {}).get("file")
    if name and not Path(name).is_absolute():
        dst = workdir / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(s.scenario.source).parent / name, dst)


def _wait_listening(topo: Topology, proc: Process[str], port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else ""
            raise TestbedError(f"the a-b-t server exited at start ({proc.returncode}): {err.strip()}")
        if sockets.listening(port, topo.names.ns("server")):
            return
        time.sleep(0.05)
    raise TestbedError(f"the a-b-t server did not listen on {N.SERVER_IP}:{port} within {timeout:g} s")


def _budget_s(ps: list[dict[str, Any]]) -> float:
    """How long the client may take: every start, wait and think time, plus room for the
    transfers and their repairs."""
    def own(p: dict[str, Any]) -> float:
        if "epochs" in p:
            waits = float(sum(e[1] + e[3] for e in p["epochs"])) / 1e6
            n = len(p["epochs"])
        else:
            waits = float(sum(w for side in p["concurrent"] for _, w in side)) / 1e6
            n = sum(len(side) for side in p["concurrent"])
        return float(p["start_s"]) + waits + n * (float(p.get("stall_ms", 0)) / 1e3 + 30)

    return max((own(p) for p in ps), default=0.0) + 30


def _longest_rtt_s(s: RealScenario) -> float:
    """The longest round trip of the run: the path's, or a vector's own where longer."""
    vectors = s.resolved["workload"]["kind"]["abt"]["vectors"]
    return float(max([s.rtt_s, *(v["min_rtt_us"] / 1e6 for v in vectors)]))


def _wait_closed(topo: Topology, port: int, timeout: float) -> None:
    """Waits until the server holds no established connection on `port`: each has read
    its client's close (or reset), so every byte the client sent has arrived."""
    deadline = time.monotonic() + timeout
    while sockets.tcp("established", topo.names.ns("server"), sport=port):
        if time.monotonic() > deadline:
            raise TestbedError(f"the a-b-t server still held connections on port {port} {timeout:g} s after the "
                               "client finished")
        time.sleep(0.05)


def _connection(c: dict[str, Any]) -> dict[str, Any]:
    """What the client saw of one connection, with the keys `testbed run` shows: its first
    request and its last response, counted from its connect()."""
    steps = c.get("exchanges") or []
    start = c.get("start")
    if start is not None and steps:
        # A concurrent vector's one step says when both sides were done.
        first, last = steps[0].get("request_sent"), steps[-1].get("response_received", steps[-1].get("done"))
        c["request_sent_s"] = None if first is None else round(first - start, 6)
        c["complete_s"] = None if last is None else round(last - start, 6)
    return c


def run(s: RealScenario, pcap_dir: Path | None = None, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Runs `s` (kind "abt") once; returns what the client saw per connection and where
    the captures are."""
    plan = s.plan if s.plan is not None else realize(s)
    ps = plans(s, options)
    with Topology() as topo:
        stack.apply(topo, "client", plan.client)
        stack.apply(topo, "server", plan.server)
        _copy_vectors_file(s, topo.workdir)
        link = Link(topo, s, abt_first_port=FIRST_PORT)
        link.start()
        plan_path = topo.workdir / "abt-plan.json"
        plan_path.write_text(json.dumps(ps))
        server = topo.spawn("abt-server", "server", [sys.executable, str(PEER), "server", N.SERVER_IP, str(s.port),
                                                     str(plan_path)], stdout=DEVNULL, stderr=PIPE)
        _wait_listening(topo, server, s.port)
        synopt_daemon = start_synopt(topo, s)
        caps = Captures(topo, pcap_dir or topo.workdir / "pcap")
        caps.start()
        client = topo.spawn("abt-client", "client", [sys.executable, str(PEER), "client", N.SERVER_IP, str(s.port),
                                                     str(plan_path)], stdout=PIPE, stderr=PIPE)
        budget = _budget_s(ps)
        deadline = time.monotonic() + budget
        while client.poll() is None:
            if time.monotonic() > deadline:
                raise TestbedError(f"the a-b-t client did not finish within {budget:g} s")
            topo.check_children(skip=client)
            time.sleep(0.05)
        out, err = client.communicate()
        if client.returncode != 0:
            raise TestbedError(f"the a-b-t client failed ({client.returncode}): {err.strip()}")
        # The client is done once its last bytes have left: over a vector's own long path
        # they, and its close, reach the server a one-way trip later (more through
        # repairs). The captures stop once the server has taken every close, and the
        # last ACKs and FINs are back.
        _wait_closed(topo, s.port, timeout=budget)
        time.sleep(max(0.2, 2 * _longest_rtt_s(s)))
        pcaps = caps.stop()
        link_stats = link.stop()
        synopt_stats = synopt_daemon.stop()[0] if synopt_daemon is not None else None
    return {
        "scenario": s.name,
        "world": "real-kernel",
        "run_id": topo.names.run_id,
        "rtt_s": float(s.resolved["path"]["rtt"]) / NS,
        "connections": [_connection(json.loads(line)) for line in out.splitlines() if line.strip()],
        "link": link_stats,
        **({"synopt": synopt_stats} if synopt_stats is not None else {}),
        **({"pcaps": {k: str(v) for k, v in pcaps.items()}} if pcap_dir is not None else {}),
    }
