"""Benchmark: `shortflow analyze` end to end beside its peers, in alternated pairs.

    .venv/bin/python benches/analyze_pairs.py [--pairs 11] [--filter 'tcp port 80'] [--packets 5000000] [--data DIR]
        [--beside PKGDIR]

On a shared machine a peer's own time moves by a quarter between runs, so each figure is
taken in pairs: our command, then the peer's, in turn, whole processes, the trace read
through before each (`run.warm`); it prints the medians and the median of the pairs'
ratios. The pairs:

- `shortflow analyze TRACE --summary-json S --out DIR` (both tables written) beside
  `tcptrace -l -n TRACE`;
- with `--filter EXPR`: the same with `--filter EXPR` beside `tcpdump -r TRACE -w
  /dev/null EXPR` (libpcap reading and filtering alone, the least a filter costs), and
  the unfiltered command beside the filtered one (what a filter adds to a run);
- with `--beside PKGDIR`: the same command run by another build of the package (a
  directory holding its `shortflow/` with its extension module, put first on PYTHONPATH;
  ours runs the same way, from this checkout's `python/`) beside ours: a refactoring's
  cost, the other build as the peer. Both write their own outputs.

The trace is benches/run.py's (made once, from `--packets`, in `--data`).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import DATA, ROOT, bench_trace, run  # the script beside this one


def pairs(name: str, ours: list[str], peer: list[str], trace: Path, n: int) -> None:
    a, b = [], []
    for _ in range(n):
        a.append(run(ours, trace)[0])
        b.append(run(peer, trace)[0])
    ratios = [y / x for x, y in zip(a, b)]
    print(f"| {name} | {statistics.median(a):.3f} ({min(a):.2f}-{max(a):.2f}) | "
          f"{statistics.median(b):.3f} ({min(b):.2f}-{max(b):.2f}) | "
          f"{statistics.median(ratios):.2f}× ({min(ratios):.2f}-{max(ratios):.2f}×) |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=11)
    ap.add_argument("--filter", dest="expr", default=None, help="also time this libpcap filter expression")
    ap.add_argument("--packets", type=int, default=5_000_000)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--beside", type=Path, metavar="PKGDIR", help="time another build of the package beside this one")
    args = ap.parse_args()

    data: Path = args.data
    trace = bench_trace(data, args.packets)
    sf = [str(ROOT / ".venv" / "bin" / "shortflow"), "analyze", str(trace), "--summary-json", str(data / "s.json"),
          "--out", str(data / "bench-out")]
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"\nTrace: {trace.name}; {args.pairs} alternated pairs; load average at the start {' '.join(load)}\n")
    print("| pair | ours: median s (range) | peer: median s (range) | peer / ours: median (range) |")
    print("|---|---:|---:|---:|")
    if shutil.which("tcptrace"):
        pairs("analyze --out --summary-json / tcptrace -l -n", sf, ["tcptrace", "-l", "-n", str(trace)], trace, args.pairs)
    if args.beside is not None:
        if not (args.beside / "shortflow" / "__init__.py").is_file():
            sys.exit(f"--beside {args.beside}: no shortflow package in it")

        def build(pkg: Path, tag: str) -> list[str]:
            return ["env", f"PYTHONPATH={pkg}", sys.executable, "-m", "shortflow", "analyze", str(trace),
                    "--summary-json", str(data / f"s-{tag}.json"), "--out", str(data / f"bench-out-{tag}")]

        pairs(f"analyze --out --summary-json: this build / {args.beside}", build(ROOT / "python", "ours"),
              build(args.beside, "beside"), trace, args.pairs)
    if args.expr is not None:
        filtered = [*sf, "--filter", args.expr]
        if shutil.which("tcpdump"):
            pairs(f"analyze --filter '{args.expr}' / tcpdump -r -w /dev/null", filtered,
                  ["tcpdump", "-r", str(trace), "-w", "/dev/null", args.expr], trace, args.pairs)
        pairs("analyze unfiltered / analyze --filter (filtered / unfiltered)", sf, filtered, trace, args.pairs)


if __name__ == "__main__":
    sys.exit(main())
