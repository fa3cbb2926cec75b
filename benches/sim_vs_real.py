"""Simulator beside the real kernel for the shipped deterministic scenarios (issue 4's
agreement table): document 002's IW 2 and IW 10 pages through `testbed compare`, document
003's scenarios (profiles Linux cannot mimic: the reason), and, with --table4, every Table 4
case of document 000 through `reproduce 000 --real`. Prints Markdown for BENCHMARKS.md.

    sudo .venv/bin/python benches/sim_vs_real.py [--table4]
"""

from __future__ import annotations

import argparse
import platform
import time

from shortflow.reproduce import reproduce
from shortflow.scenario import Scenario
from shortflow.testbed.compare import KEYS, TIMES, agrees, compare

SHIPPED = [
    ("002-initial-window", ["server.initial_window=2"]),
    ("002-initial-window", ["server.initial_window=10"]),
    ("003-bsd-client", []),
    ("003-solaris", []),
]


def fmt(key: str, v: object) -> str:
    if v is None:
        return "–"
    return f"{v:.4f}" if key in TIMES else str(v)


def scenarios() -> None:
    print("| scenario | overrides | figure | simulator | real kernel | agree |")
    print("|---|---|---|---:|---:|---|")
    for name, sets in SHIPPED:
        c = compare(Scenario.builtin(name, sets))
        label = f"| `scenarios/{name}.toml` | {' '.join(f'`{x}`' for x in sets) or '–'}"
        if c.real is None:
            print(f"{label} | – | – | – | not run: {c.unavailable.split(': ', 2)[-1]} |")
            continue
        for key in KEYS:
            s, r = c.sim[0].get(key), c.real[0].get(key)
            verdict = agrees(key, s, r)
            print(f"{label} | {key} | {fmt(key, s)} | {fmt(key, r)} | "
                  f"{'–' if verdict is None else 'yes' if verdict else 'NO'} |")


def table4() -> None:
    rows = [r for r in reproduce(["000"], real=True) if r.real is not None]
    print("| figure | case | paper s | simulator s | real kernel s | real − sim | agree |")
    print("|---|---|---:|---:|---:|---:|---|")
    for r in rows:
        paper = "–" if r.paper is None else f"{r.paper:.2f}"
        ok = agrees("request_sent_s", r.ours, r.real)
        print(f"| {r.figure} | {r.case} | {paper} | {r.ours:.3f} | {r.real:.3f} | {r.real - r.ours:+.3f} | "
              f"{'yes' if ok else 'no: ' + r.real_note} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table4", action="store_true", help="also every Table 4 case (takes minutes)")
    args = ap.parse_args()
    print(f"Machine: {platform.processor() or platform.machine()}, Linux {platform.release()}, "
          f"{time.strftime('%Y-%m-%d')}\n")
    scenarios()
    if args.table4:
        print()
        table4()


if __name__ == "__main__":
    main()
