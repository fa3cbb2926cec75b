"""Benchmark: shortflow analyze vs tcptrace and tshark on the same trace, same run.

    .venv/bin/python benches/run.py [--packets 5000000] [--skip-tshark] [--repeat 3] [--data DIR]

Makes (once) a trace of interleaved short flows with the project's generator, then times
each tool on it and reports packets/s and peak memory (max RSS of the process, from
wait4). Prints a Markdown table to paste into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench-data"


def warm(path: Path) -> None:
    """Reads `path` through so that all of it is in the page cache. This VM's page cache
    loses pages of an idle file within seconds with no memory pressure (`fincore`: 452 MB
    of the trace resident after a run, 424 MB 25 s later; the kernel's reclaim counters
    stay at 0), so a tool timed after another's 10 s run would read part of the trace from
    disk: every tool is timed from a file just read through, as in a warm cache."""
    buf = bytearray(8 << 20)
    with path.open("rb", buffering=0) as f:
        while f.readinto(buf):
            pass


def run(cmd: list[str], trace: Path | None = None) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system, all threads) and peak RSS (MiB) of `cmd`,
    output discarded, with `trace` read through first (`warm`, not timed). On a shared
    machine the CPU time is the steadier figure."""
    if trace is not None:
        warm(trace)
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[0]} failed: {' '.join(cmd)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")), "?")
    mem = int(Path("/proc/meminfo").read_text().split()[1]) // (1024 * 1024)
    return f"{cpu}, {os.cpu_count()} cores, {mem} GiB, Linux {platform.release()}"


def bench_trace(data: Path, packets: int) -> Path:
    """The benchmark's trace of about `packets` packets in `data`, generated the first time
    (interleaved short flows with SYN, SYN/ACK and ACK losses; the same seed each time)."""
    import shortflow

    data.mkdir(exist_ok=True)
    # ~28 packets per connection with the generator's defaults (the simulator's linux stacks).
    conns = max(1, packets // 28)
    trace = data / f"bench-{conns}.pcap"
    if not trace.exists():
        truth = shortflow.generate(trace, connections=conns, snaplen=96, arrivals_per_s=3000, seed=7, syn_loss=0.01,
                                   synack_loss=0.005, ack_loss=0.002)
        print(f"generated {trace} ({truth['packets']:,} packets)")
    return trace


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--packets", type=int, default=5_000_000)
    ap.add_argument("--skip-tshark", action="store_true", help="tshark takes minutes on 5 M packets")
    ap.add_argument("--repeat", type=int, default=3, help="runs of shortflow (best is reported)")
    ap.add_argument("--data", type=Path, default=DATA, help="where the generated trace is kept (default bench-data/)")
    args = ap.parse_args()

    import shortflow

    data: Path = args.data
    trace = bench_trace(data, args.packets)
    # The package's bytecode, as a user's Python caches it on the first run (pip compiles
    # a wheel's at install): where PYTHONDONTWRITEBYTECODE is set (CI sandboxes), every run
    # would otherwise compile the CLI's modules again, 20-30 ms of each end-to-end figure.
    import compileall

    compileall.compile_dir(Path(shortflow.__file__).parent, quiet=1)
    # Counted in a child process: a large parent would inflate every child's peak RSS
    # (a forked child starts with the parent's pages until it execs).
    summary_file = data / "bench-summary.json"
    subprocess.run([str(ROOT / ".venv" / "bin" / "shortflow"), "analyze", str(trace), "-q", "--summary-json", str(summary_file)], check=True)
    packets = json.loads(summary_file.read_text())["packets"]
    size_mb = trace.stat().st_size / 1e6
    core = ROOT / "target" / "release" / "examples" / "analyze_file"
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "shortflow-trace", "--example", "analyze_file"], cwd=ROOT, check=True)

    # name, command, wall s, CPU s and peak RSS of the best run, median wall s of all runs
    rows: list[tuple[str, str, float, float, int, float]] = []
    out_dir = data / "bench-out"

    def best(cmd: list[str]) -> tuple[float, float, int, float]:
        """The fastest of `--repeat` runs, and the median wall time beside it: on a shared
        VM the spread between runs is often larger than a change being measured."""
        runs = sorted((run(cmd, trace) for _ in range(args.repeat)), key=lambda r: r[0])
        return (*runs[0], statistics.median(r[0] for r in runs))

    def once(cmd: list[str]) -> tuple[float, float, int, float]:
        wall, cpu, rss = run(cmd, trace)
        return wall, cpu, rss, wall

    # End to end as the user runs it (Python start-up, the table's trip and the
    # Parquet write included): every core (the default), then one thread.
    sf = [str(ROOT / ".venv" / "bin" / "shortflow"), "analyze", str(trace), "--summary-json", str(data / "s.json"), "--out", str(out_dir)]
    shown = f"shortflow analyze {trace.name} --summary-json s.json --out DIR"
    rows.append((f"shortflow analyze (CLI, end to end, {os.cpu_count()} cores)", shown, *best(sf)))
    rows.append(("shortflow analyze (CLI, end to end, one thread)", shown + " --workers 1", *best([*sf, "--workers", "1"])))
    name = f"target/release/examples/analyze_file {trace.name}"
    cores = str(os.cpu_count() or 1)
    rows.append((f"shortflow core, summary + table, as the CLI runs it on {cores} cores", name + f" --workers {cores}",
                 *best([str(core), str(trace), "--workers", cores])))
    rows.append(("shortflow core, summary + table, one thread", name, *best([str(core), str(trace)])))
    rows.append(("shortflow core, summary only, one thread", name + " --summary-only", *best([str(core), str(trace), "--summary-only"])))
    if shutil.which("tcptrace"):
        rows.append(("tcptrace -l -n", f"tcptrace -l -n {trace.name}", *once(["tcptrace", "-l", "-n", str(trace)])))
    if shutil.which("tshark") and not args.skip_tshark:
        flt = "tcp.flags.syn==1 && tcp.analysis.retransmission"
        rows.append(("tshark (SYN retransmissions)", f'tshark -n -r {trace.name} -Y "{flt}" -T fields -e frame.number',
                     *once(["tshark", "-n", "-r", str(trace), "-Y", flt, "-T", "fields", "-e", "frame.number"])))

    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"\nTrace: {trace.name}, {packets:,} packets, {size_mb:,.0f} MB. Machine: {machine()}; "
          f"load average at the end {' '.join(load)}; best of {args.repeat} for shortflow (median beside it), "
          "one run of the peers\n")
    print("| tool | command | wall s | median wall s | CPU s | packets/s | peak RSS MiB | vs tcptrace (wall) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    tcptrace = next((r[2] for r in rows if r[0].startswith("tcptrace")), None)
    for name, cmd, wall, cpu, rss, median in rows:
        speedup = f"{tcptrace / wall:.1f}×" if tcptrace else "–"
        print(f"| {name} | `{cmd}` | {wall:.2f} | {median:.2f} | {cpu:.2f} | {packets / wall / 1e6:.2f} M | {rss} | {speedup} |")


if __name__ == "__main__":
    sys.exit(main())
