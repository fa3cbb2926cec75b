"""The closed loop on the real kernel (root, namespaces): for each of three workloads whose
best fixes differ, the testbed replays 210 connections of an a-b-t workload over three
paths (10 to 300 ms) with seeded random loss; `shortflow advise` reads the server-side
captures; each of its top three fixes (of those the testbed can set on the kernel) is
applied in the testbed's server namespace — the fix's scenario overrides, which the testbed
sets as `tune` would (a BPF SYN RTO, a route's initcwnd or rto_min, the SYN optimizer
daemon) — and the same workload runs again. For each fix the predicted saving is within
15 % of the one measured where the users are (the client-side captures), and fixes whose
predictions differ by more than that rank in the order measured.

The emulator draws each connection's losses from a stream of its own
(`random_loss.per_connection`, keyed by the order of the connections' first SYNs), so the
run with a fix loses the packets of the same connections as the baseline did."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from shortflow.analyze import analyze

pytestmark = pytest.mark.netns

SHORTFLOW = [sys.executable, "-m", "shortflow"]
CONNECTIONS = 70
#: The predicted saving against the measured one.
TOLERANCE = 0.15


@dataclass(frozen=True)
class Workload:
    """Three paths of `CONNECTIONS` connections each, one request and its response
    (sizes in turn), and the emulator's seeded losses."""

    rtts_ms: tuple[int, ...]
    responses: tuple[int, ...]
    loss: str


#: Workloads whose best fixes differ: lost SYN/ACKs (the SYN/ACK timer, the SYN
#: optimizer), longer responses over long paths (the initial window), and data lost on
#: short paths (the minimum RTO).
WORKLOADS = {
    "synack": Workload((20, 100, 250), (4000, 12000, 30000, 60000), "synack = 0.25\ndata = 0.02"),
    "window": Workload((50, 150, 300), (40000, 80000, 150000), "data = 0.005"),
    "rto": Workload((10, 30, 60), (3000, 6000, 12000), "data = 0.1"),
}


def scenario(tmp: Path, w: Workload, rtt_ms: int) -> Path:
    d = tmp / f"rtt{rtt_ms}"
    d.mkdir()
    lines = []
    for i in range(CONNECTIONS):
        lines += [f"SEQ {i * 250_000} 1 {i} 0", "w 0 0", f"r {rtt_ms * 1000}", "l 0.000000 0.000000", "> 300", "t 0",
                  f"< {w.responses[i % len(w.responses)]}"]
    (d / "v.abt").write_text("\n".join(lines) + "\n")
    (d / "s.toml").write_text(f'seed = {rtt_ms}\n[path]\nrtt = "{rtt_ms}ms"\nbandwidth = "50Mbit"\n'
                              f"[random_loss]\nper_connection = true\n{w.loss}\n"
                              '[workload]\nkind = "abt"\nfile = "v.abt"\nclose = "client"\n')
    return d / "s.toml"


def realizable(s: Path, fix: dict[str, Any]) -> bool:
    """Whether the testbed can set the fix on the kernel (`testbed plan` refuses what it
    cannot, e.g. Super Fast Retransmit)."""
    sets = [a for o in fix["scenario_overrides"] for a in ("--set", o)]
    return subprocess.run([*SHORTFLOW, "-q", "testbed", "plan", str(s), *sets], capture_output=True).returncode == 0


def run(scenario: Path, name: str, overrides: list[str]) -> Path:
    pcaps = scenario.parent / name
    sets = [a for o in overrides for a in ("--set", o)]
    r = subprocess.run([*SHORTFLOW, "-q", "testbed", "run", str(scenario), *sets, "--pcap-dir", str(pcaps)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return pcaps


def completed(pcap: Path) -> dict[int, float]:
    """What each user waited, by the client's port (the a-b-t client binds the same port
    for a vector in every run; connection ids may not line up when a run sees one try
    more), from the client-side capture: its first SYN to the last response byte's arrival."""
    a = analyze(str(pcap))
    port = _ports(a.table)
    done: dict[int, float] = {}
    for x in a.exchanges.to_pylist():
        end = x["response_end_s"]
        if end is not None and not math.isnan(end):
            p = port[x["conn_id"]]
            done[p] = max(done.get(p, 0.0), end)
    return done


def _ports(table: Any) -> dict[int, int]:
    return dict(zip(table.column("conn_id").to_pylist(), table.column("client_port").to_pylist()))


def client_ports(pcap: Path) -> dict[int, int]:
    """Each connection's client port, by the conn_id `advise` gave it in `pcap`."""
    return _ports(analyze(str(pcap)).table)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_the_top_three_fixes_save_what_advise_predicted(tmp_path: Path, name: str) -> None:
    w = WORKLOADS[name]
    scenarios = [scenario(tmp_path, w, rtt) for rtt in w.rtts_ms]
    base = [run(s, "base", []) / "server-side.pcap" for s in scenarios]
    advice = tmp_path / "advice.json"
    out = tmp_path / "advice"
    r = subprocess.run([*SHORTFLOW, "advise", *map(str, base), "--vantage", "server", "--json", str(advice),
                        "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    print(r.stdout)
    doc = json.loads(advice.read_text())
    assert doc["replay"]["connections"] == len(w.rtts_ms) * CONNECTIONS
    import pyarrow.parquet as pq

    savings = pq.read_table(out / "savings.parquet").to_pylist()
    before = [completed(p.with_name("client-side.pcap")) for p in base]
    ports = [client_ports(p) for p in base]
    results: list[dict[str, Any]] = []
    # A fix predicted to save nothing has no saving to check here (tests/test_advise.py ranks
    # one that cannot help at zero).
    top = [f for f in doc["fixes"] if f["saved_s_total"] > 0 and realizable(scenarios[0], f)][:3]
    assert top, doc["fixes"]
    for fix in top:
        after = [completed(run(s, f"fix{len(results)}", fix["scenario_overrides"]) / "client-side.pcap") for s in scenarios]
        predicted, measured = 0.0, 0.0
        for s in savings:
            if s["fix"] != fix["fix"]:
                continue
            k = [str(p) for p in base].index(s["trace"])
            predicted += s["saved_s"]
            port = ports[k][s["conn_id"]]
            measured += before[k][port] - after[k][port]
        results.append({"fix": fix["fix"], "predicted": predicted, "measured": measured})
    print(json.dumps(results, indent=1))
    for x in results:
        assert x["measured"] > 0, x
        assert abs(x["predicted"] - x["measured"]) <= TOLERANCE * x["measured"], x
    for a, b in zip(results, results[1:]):
        # Ranked best first by prediction; where the predictions differ by more than the
        # tolerance, the measurements rank them the same way.
        if a["predicted"] - b["predicted"] > TOLERANCE * a["predicted"]:
            assert a["measured"] > b["measured"], (a, b)


def test_a_larger_window_costs_the_kernels_neighbours_as_the_shared_replay_says(tmp_path: Path) -> None:
    """Twelve 60 kB fetches started every 150 ms through one 4 Mbit/s netem bottleneck
    (64 packets): three or four in flight at once. With the server's initial window at 32
    the kernel's connections gain far less than their lone replays promise (each first
    flight queues behind the others'); the shared dumbbell's replay says so: its
    prediction is nearer the kernel's gain than the lone one, and the neighbours' seconds
    are counted as harm. Ten runs, over the 6 or 7 connections the group's replay held:
    lone 0.66 or 0.77 s, together 0.28-0.38 s, the kernel 0.33-0.38 s."""
    d = tmp_path / "shared"
    d.mkdir()
    lines = []
    for i in range(12):
        lines += [f"SEQ {i * 150_000} 1 {i} 0", "w 0 0", "r 100000", "l 0.000000 0.000000", "> 300", "t 0", "< 60000"]
    (d / "v.abt").write_text("\n".join(lines) + "\n")
    sc = d / "s.toml"
    sc.write_text('seed = 5\n[path]\nrtt = "100ms"\nbandwidth = "4Mbit"\nqueue = { kind = "droptail", packets = 64 }\n'
                  '[workload]\nkind = "abt"\nfile = "v.abt"\nclose = "client"\n')
    base = run(sc, "base", [])
    out = d / "advice"
    r = subprocess.run([*SHORTFLOW, "advise", str(base / "server-side.pcap"), "--vantage", "server", "--json", "-",
                        "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["shared"]["groups"] == 1 and doc["shared"]["replayed"], doc["shared"]
    fix = next(f for f in doc["fixes"] if f["fix"] == "server IW 32")
    assert fix["harm"]["neighbours_s"] > 0.2, fix["harm"]
    import pyarrow.parquet as pq

    rows = [x for x in pq.read_table(out / "shared.parquet").to_pylist() if x["fix"] == fix["fix"]]
    assert len(rows) >= 6, rows
    before = completed(base / "client-side.pcap")
    after = completed(run(sc, "iw32", fix["scenario_overrides"]) / "client-side.pcap")
    ports = client_ports(base / "server-side.pcap")
    measured = sum(before[ports[x["conn_id"]]] - after[ports[x["conn_id"]]] for x in rows)
    alone = sum(x["saved_s_alone"] for x in rows)
    together = sum(x["saved_s_together"] for x in rows)
    print(json.dumps({"alone": alone, "together": together, "measured": measured}))
    # The kernel's neighbours lose time: the connections gain well under their lone promise.
    assert alone - measured > 0.3, (alone, together, measured)
    # The shared replay sees it: nearer the kernel than the lone replays, with a loss of
    # the same sign.
    assert abs(together - measured) < abs(alone - measured), (alone, together, measured)
    assert together < alone - 0.2, (alone, together, measured)
    # And near what the kernel's connections gained (runs differ in which connections
    # the group's replay holds: 0.3-19 % apart in ten runs).
    assert abs(together - measured) <= 0.25 * measured, (alone, together, measured)
