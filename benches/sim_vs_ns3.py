"""The simulator against ns-3 on the issue's benchmark: N sequential short transfers (300 B
request, 13,549 B response, 100 ms RTT, 10 Mbit/s links, IW 10), connections simulated per
wall-clock second, measured in the same run. ns-3 runs benches/ns3/short_transfers.cc,
built here against Debian's libns3-dev (`make bench` installs it).

With --web, the web benchmark instead: PackMime-HTTP at 50 % load over a dumbbell of 50
pairs (5 Mbit/s, 10 ms, DropTail), 300 s simulated; shortflow's flow list (start, pair,
request, response, server delay) is replayed in ns-3 (benches/ns3/web_replay.cc) and the
two are compared: flows per wall-clock second, mean completion, the Kolmogorov–Smirnov
distance of the completion-time CDFs, and peak memory.

    .venv/bin/python benches/sim_vs_ns3.py [--connections 100000] [--ns3-connections 5000]
    .venv/bin/python benches/sim_vs_ns3.py --web [--duration 300] [--pairs 50]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from shortflow import _core
from shortflow.scenario import Scenario

HERE = Path(__file__).resolve().parent
SCENARIO = """
name = "sequential short transfers"
time_limit = "10000000s"
[path]
rtt = "100ms"
bandwidth = "10Mbit"
[client]
stack = "linux"
[server]
stack = "linux"
[workload]
request = "300B"
response = "13549B"
connections = {n}
"""
NS3_MODULES = ["ns3-core", "ns3-network", "ns3-internet", "ns3-point-to-point", "ns3-applications",
               "ns3-traffic-control"]

WEB = """
name = "web benchmark: PackMime-HTTP over a 50-pair dumbbell"
seed = {seed}
time_limit = "{limit}s"
[dumbbell]
pairs = {pairs}
bandwidth = "5Mbit"
delay = "10ms"
queue = {{ kind = "droptail", packets = 100 }}
access_bandwidth = "100Mbit"
client_delay = "1us"
server_delay = "1us"
[workload]
kind = "packmime"
load = "50%"
duration = "{duration}s"
# As web_replay.cc's ns-3 sockets: IW 10, NewReno, a 200 ms floor on the RTO, ACK every
# second segment with a 200 ms delayed-ACK timer, no quick-ACK mode.
[client]
stack = "linux"
rto_min_on_variance = false
quick_acks = 0
delayed_ack_timeout = "200ms"
[server]
stack = "linux"
rto_min_on_variance = false
quick_acks = 0
delayed_ack_timeout = "200ms"
"""

#: Runs one simulation in a child process: prints wall seconds, peak RSS (kB) and the
#: RSS of the interpreter with shortflow imported, then the report's JSON.
CHILD = """
import json, resource, sys, time
from shortflow import _core
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
text, rate = sys.stdin.read(), float(sys.argv[1])
t = time.perf_counter()
out = _core.simulate(text, "web.toml", [], rate=rate)
wall = time.perf_counter() - t
print(wall, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, base)
print(out)
"""


def build_ns3(out: Path, name: str = "short_transfers") -> Path:
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", *NS3_MODULES], check=True, capture_output=True,
                           text=True).stdout.split()
    exe = out / name
    subprocess.run(["g++", "-O2", "-std=c++17", str(HERE / "ns3" / f"{name}.cc"), "-o", str(exe), *flags],
                   check=True, capture_output=True)
    return exe


def ks_distance(a: list[float], b: list[float]) -> float:
    """The Kolmogorov–Smirnov statistic: the largest gap between the two empirical CDFs."""
    import numpy as np

    xa, xb = np.sort(a), np.sort(b)
    grid = np.concatenate([xa, xb])
    fa = np.searchsorted(xa, grid, side="right") / len(xa)
    fb = np.searchsorted(xb, grid, side="right") / len(xb)
    return float(np.max(np.abs(fa - fb)))


def web(duration: int, pairs: int, seed: int) -> None:
    import sys

    text = WEB.format(seed=seed, limit=duration + 100, pairs=pairs, duration=duration)
    # The calibration (several runs) finds the rate; the timed run replays it.
    t = time.perf_counter()
    cal = json.loads(_core.simulate(text, "web.toml", []))
    cal_wall = time.perf_counter() - t
    c = cal["summary"]["calibration"]
    child = subprocess.run([sys.executable, "-c", CHILD, str(c["connections_per_second"])], input=text,
                           capture_output=True, text=True, check=True)
    head, body = child.stdout.split("\n", 1)
    wall, rss, base = (float(x) for x in head.split())
    report = json.loads(body)
    conns = report["connections"]
    ours = [x["complete_s"] for x in conns if x["complete_s"] is not None]
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_ns3(Path(tmp), "web_replay")
        flows = Path(tmp) / "flows.txt"
        flows.write_text("".join(f"{x['start_s']:.9f} {x['pair']} {x['request_bytes']} {x['response_bytes']} "
                                 f"{x['think_s']:.9f}\n" for x in conns))
        t = time.perf_counter()
        out = subprocess.run(["/usr/bin/time", "-f", "%M", str(exe), str(flows), str(pairs), "5", "10", "100",
                              str(duration + 100)], check=True, capture_output=True, text=True)
        ns3_wall = time.perf_counter() - t
        ns3_rss = float(out.stderr.strip().splitlines()[-1])
    theirs = [float(line.split()[1]) for line in out.stdout.splitlines() if not line.startswith("#")]
    n = len(conns)
    print(f"Machine: {platform.processor() or platform.machine()}, Linux {platform.release()}, "
          f"{time.strftime('%Y-%m-%d')}\n")
    print(f"PackMime-HTTP, {pairs} pairs, 5 Mbit/s, 10 ms, DropTail 100 packets, {duration} s of arrivals, seed {seed}; "
          f"load: target {100 * c['target']:.0f} %, measured {100 * c['measured']:.1f} % at "
          f"{c['connections_per_second']:.2f} connections/s ({c['runs']} calibration runs, {cal_wall:.2f} s)\n")
    print("| simulator | flows | completed | wall s | flows/s | mean completion s | median s | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")

    def med(xs: list[float]) -> float:
        return sorted(xs)[len(xs) // 2]

    print(f"| shortflow (replayed rate) | {n:,} | {len(ours):,} | {wall:.3f} | {n / wall:,.0f} | "
          f"{sum(ours) / len(ours):.4f} | {med(ours):.4f} | {rss / 1024:.0f} ({base / 1024:.0f} of it Python) |")
    print(f"| ns-3.37 (web_replay.cc) | {n:,} | {len(theirs):,} | {ns3_wall:.3f} | {n / ns3_wall:,.0f} | "
          f"{sum(theirs) / len(theirs):.4f} | {med(theirs):.4f} | {ns3_rss / 1024:.0f} |")
    m_ours, m_theirs = sum(ours) / len(ours), sum(theirs) / len(theirs)
    print(f"\nmean completion: shortflow / ns-3 = {m_ours / m_theirs:.3f}; KS distance of the completion-time CDFs: "
          f"{ks_distance(ours, theirs):.3f}; peak open connections (shortflow): "
          f"{report['summary']['peak_open_connections']:,}")


def ours(n: int, extra: list[str]) -> tuple[float, float, int]:
    sc = Scenario.from_text(SCENARIO.format(n=n), source="bench.toml", overrides=extra)
    best, report = float("inf"), None
    for _ in range(3):
        t = time.perf_counter()
        text = _core.simulate(sc.text, sc.source, list(sc.overrides))
        best = min(best, time.perf_counter() - t)
        report = json.loads(text)
    assert report is not None
    return best, report["summary"]["mean_complete_s"], report["summary"]["completed"]


def ns3(exe: Path, n: int) -> tuple[float, float, int]:
    t = time.perf_counter()
    out = subprocess.run([str(exe), str(n), "100", "10", "300", "13549"], check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t
    _, done, mean = out.stdout.split()
    return wall, float(mean), int(done)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connections", type=int, default=100_000)
    ap.add_argument("--ns3-connections", type=int, default=5_000, help="ns-3 is slow: fewer, rate compared")
    ap.add_argument("--web", action="store_true", help="the PackMime dumbbell benchmark instead")
    ap.add_argument("--duration", type=int, default=300, help="--web: seconds of arrivals")
    ap.add_argument("--pairs", type=int, default=50, help="--web: client-server pairs")
    ap.add_argument("--seed", type=int, default=1, help="--web: the workload's seed")
    args = ap.parse_args()
    if shutil.which("pkg-config") is None:
        raise SystemExit("pkg-config missing: `make bench` installs the ns-3 packages")
    if args.web:
        web(args.duration, args.pairs, args.seed)
        return
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_ns3(Path(tmp))
        rows = [("shortflow simulate (core, lossless)", args.connections, *ours(args.connections, [])),
                ("shortflow simulate (core, 1 % loss each way)", args.connections,
                 *ours(args.connections, ["random_loss.forward=0.01", "random_loss.reverse=0.01"])),
                ("ns-3.37 (short_transfers.cc, lossless)", args.ns3_connections, *ns3(exe, args.ns3_connections))]
    print(f"Machine: {platform.processor() or platform.machine()}, Linux {platform.release()}, {time.strftime('%Y-%m-%d')}\n")
    print("| simulator | connections | wall s | connections/s | mean completion s | completed |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, n, wall, mean, done in rows:
        print(f"| {name} | {n:,} | {wall:.3f} | {n / wall:,.0f} | {mean:.4f} | {done:,} |")
    ratio = (rows[0][1] / rows[0][2]) / (rows[2][1] / rows[2][2])
    print(f"\nshortflow / ns-3, lossless: {ratio:.0f}x connections per second")


if __name__ == "__main__":
    main()
