"""`shortflow advise` end to end from the shell: connection replays per second.

Makes a server-side capture once with the simulator (`--connections` short connections,
seeded loss of SYN/ACKs and data, each connection's draws its own; kept gzip-compressed:
100,000 connections are 2.4 GB plain), then times `shortflow advise CAPTURE --json FILE`
`--repeat` times: the whole command (start-up, analysis, every replay, ranking, output).
Prints the replays the command reports, the wall time (median and best), replays per
second and the command's peak RSS (its own, from wait4). No other tool replays a
capture's connections under start-up fixes: there is no peer to time beside it.

    .venv/bin/python benches/advise_speed.py --connections 20000 --repeat 3
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

SHORTFLOW = [sys.executable, "-m", "shortflow"]

SCENARIO = """\
seed = 7
[path]
rtt = "80ms"
bandwidth = "1Gbit"
[client]
stack = "linux"
[server]
stack = "linux"
[random_loss]
per_connection = true
synack = 0.1
data = 0.02
[workload]
request = "300B"
response = "20kB"
connections = {connections}
interval = "10ms"
parallel = true
"""


def capture(data: Path, connections: int) -> Path:
    pcap = data / f"advise-{connections}.pcap.gz"
    if not pcap.exists():
        sc, plain = data / f"advise-{connections}.toml", data / f"advise-{connections}.pcap"
        sc.write_text(SCENARIO.format(connections=connections))
        subprocess.run([*SHORTFLOW, "simulate", str(sc), "--set", 'capture.point="server"', "--pcap", str(plain), "-q"],
                       check=True)
        with plain.open("rb") as src, gzip.open(pcap, "wb", compresslevel=1) as dst:
            shutil.copyfileobj(src, dst)
        plain.unlink()
    return pcap


def timed(cmd: list[str]) -> tuple[float, str, float]:
    """Runs `cmd`: wall time (s), standard output, and its peak RSS (MiB, from wait4: its
    own, not this process's)."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    out = p.stdout.read() if p.stdout else ""
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit status {os.waitstatus_to_exitcode(status)}")
    return wall, out, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--connections", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", type=Path, default=Path("bench-data"))
    a = ap.parse_args()
    a.data.mkdir(parents=True, exist_ok=True)
    pcap = capture(a.data, a.connections)
    walls, peaks, replays = [], [], 0
    for _ in range(a.repeat):
        wall, out, peak = timed([*SHORTFLOW, "advise", str(pcap), "--json", str(a.data / "advice.json")])
        walls.append(wall)
        peaks.append(peak)
        m = re.search(r"([\d,]+) connection replays", out)
        assert m, out
        replays = int(m.group(1).replace(",", ""))
    best, median = min(walls), statistics.median(walls)
    print("| command | connections | replays | wall s (median) | replays/s (median) | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|---:|")
    print(f"| `shortflow advise {pcap.name}` | {a.connections:,} | {replays:,} | {best:.2f} ({median:.2f}) | "
          f"{replays / best:,.0f} ({replays / median:,.0f}) | {max(peaks):.0f} |")


if __name__ == "__main__":
    main()
