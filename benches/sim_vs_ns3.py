"""The simulator against ns-3 on the issue's benchmark: N sequential short transfers (300 B
request, 13,549 B response, 100 ms RTT, 10 Mbit/s links, IW 10), connections simulated per
wall-clock second, measured in the same run. ns-3 runs benches/ns3/short_transfers.cc,
built here against Debian's libns3-dev (`make bench` installs it).

    .venv/bin/python benches/sim_vs_ns3.py [--connections 100000] [--ns3-connections 5000]
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
NS3_MODULES = ["ns3-core", "ns3-network", "ns3-internet", "ns3-point-to-point", "ns3-applications"]


def build_ns3(out: Path) -> Path:
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", *NS3_MODULES], check=True, capture_output=True,
                           text=True).stdout.split()
    exe = out / "short_transfers"
    subprocess.run(["g++", "-O2", "-std=c++17", str(HERE / "ns3" / "short_transfers.cc"), "-o", str(exe), *flags],
                   check=True, capture_output=True)
    return exe


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
    args = ap.parse_args()
    if shutil.which("pkg-config") is None:
        raise SystemExit("pkg-config missing: `make bench` installs the ns-3 packages")
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
