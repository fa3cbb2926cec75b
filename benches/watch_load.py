"""`shortflow watch` under load, beside `tcpdump -w /dev/null` on the same load: a capture
replayed by tcpreplay at a fixed packet rate from one namespace onto a veth whose other end
both read in the other namespace, alternated (watch, tcpdump, watch, …). Prints per run the
CPU seconds (user + system), CPU per 100,000 packets/s, packets the kernel dropped from the
capture's ring, and peak memory; then the medians.

    sudo .venv/bin/python benches/watch_load.py TRACE [--pps 100000] [--packets 1000000] [--pairs 3]
    sudo .venv/bin/python benches/watch_load.py --syn-flood 300000 [--max-connections N]

Run as root (namespaces). `tests/test_benches.py` runs it in a smoke size.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from netns import Pair, namespace_pair
from syn_flood import syn_flood_pcap


def _replay(p: Pair, trace: Path, pps: int, packets: int) -> float:
    """Replays `packets` packets of `trace` at `pps` onto the client end; returns the wall time."""
    t = time.monotonic()
    r = p.exec(p.client, "tcpreplay", "-q", f"--pps={pps}", f"--limit={packets}", "-i", p.client_dev, str(trace), check=False)
    if r.returncode != 0:
        raise SystemExit(f"tcpreplay failed: {r.stderr.strip()}")
    return time.monotonic() - t


def _start(p: Pair, args: list[str], log: Path) -> subprocess.Popen[bytes]:
    """`args` in the server namespace (`ip netns exec` execs it: the pid is the tool's own)."""
    with log.open("wb") as f:
        return subprocess.Popen(["ip", "netns", "exec", p.server, *args], stdout=f, stderr=subprocess.STDOUT)


def _stop(proc: subprocess.Popen[bytes], sig: signal.Signals) -> tuple[float, int]:
    """Stops the tool and reaps it: its CPU seconds (user + system) and peak memory (kB)."""
    proc.send_signal(sig)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{proc.args} exited {proc.returncode}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def run_watch(p: Pair, trace: Path, pps: int, packets: int, work: Path, bound: int | None) -> dict[str, float]:
    summary = work / "watch.json"
    extra = ["--max-connections", str(bound)] if bound else []
    proc = _start(p, [sys.executable, "-m", "shortflow", "-q", "watch", "-i", p.server_dev, "--no-metrics",
                      "--summary-json", str(summary), *extra], work / "watch.log")
    time.sleep(1.5)  # opened and reading
    wall = _replay(p, trace, pps, packets)
    time.sleep(0.5)
    cpu, peak = _stop(proc, signal.SIGTERM)
    cap = json.loads(summary.read_text())["capture"]
    return {"cpu_s": cpu, "wall_s": wall, "packets": cap["packets"], "ring_drops": cap["ring_drops"],
            "evicted": cap["evicted"], "peak_MiB": peak / 1024}


def run_tcpdump(p: Pair, trace: Path, pps: int, packets: int, work: Path) -> dict[str, float]:
    log = work / "tcpdump.log"
    proc = _start(p, ["tcpdump", "-i", p.server_dev, "-n", "-s", "256", "-w", "/dev/null"], log)
    time.sleep(1.5)
    wall = _replay(p, trace, pps, packets)
    time.sleep(0.5)
    cpu, peak = _stop(proc, signal.SIGINT)
    err = log.read_text()
    got = int(re.search(r"(\d+) packets captured", err).group(1))  # type: ignore[union-attr]
    dropped = int(re.search(r"(\d+) packets dropped by kernel", err).group(1))  # type: ignore[union-attr]
    return {"cpu_s": cpu, "wall_s": wall, "packets": got, "ring_drops": dropped, "evicted": 0, "peak_MiB": peak / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path, nargs="?", help="the capture to replay (default with --syn-flood: made here)")
    ap.add_argument("--syn-flood", type=int, metavar="N", help="replay N unanswered SYNs of distinct 4-tuples instead "
                    "(memory at the bound on open connections)")
    ap.add_argument("--pps", type=int, default=100_000)
    ap.add_argument("--packets", type=int, default=1_000_000)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--max-connections", type=int, default=None, help="watch's bound (default: its own default)")
    a = ap.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"watch": [], "tcpdump": []}
    with tempfile.TemporaryDirectory() as tmp, namespace_pair() as p:
        if a.syn_flood:
            a.trace = syn_flood_pcap(Path(tmp) / "syns.pcap", a.syn_flood)
            a.packets = a.syn_flood
        if a.trace is None:
            ap.error("give a TRACE or --syn-flood N")
        for _ in range(a.pairs):
            runs["watch"].append(run_watch(p, a.trace, a.pps, a.packets, Path(tmp), a.max_connections))
            runs["tcpdump"].append(run_tcpdump(p, a.trace, a.pps, a.packets, Path(tmp)))
            for tool in runs:
                r = runs[tool][-1]
                r["cpu_per_100kpps"] = r["cpu_s"] / r["wall_s"] * 100_000 / a.pps
                print(json.dumps({"tool": tool, **{k: round(v, 3) for k, v in r.items()}}), flush=True)
    for tool, rs in runs.items():
        med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        print(json.dumps({"tool": tool, "median_of": len(rs), "pps": a.pps, **{k: round(v, 3) for k, v in med.items()}}))


if __name__ == "__main__":
    main()
