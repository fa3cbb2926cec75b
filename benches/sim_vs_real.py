"""Simulator beside the real kernel for the shipped deterministic scenarios (issue 4's
agreement table): document 002's IW 2 and IW 10 pages through `testbed compare`, document
003's scenarios (profiles Linux cannot mimic: the reason), and, with --table4, every Table 4
case of document 000 through `reproduce 000 --real`. Prints Markdown for BENCHMARKS.md.

With --random N --seed S (issue 14): N scenarios drawn at random (RTT 2-300 ms, bottleneck
1-1000 Mbit/s, response 1 kB-2 MB, request 100 B-20 kB, all log-uniform; none or one to
three scripted losses among data segments anywhere in the response including the last
ones, a retransmission lost again, pure ACKs and the SYN/ACK; client and server `linux`),
each run through `testbed compare`; prints the agreement rate and every disagreement, and
keeps each disagreement's scenario, JSON and captures under --out.

    sudo .venv/bin/python benches/sim_vs_real.py [--table4]
    sudo .venv/bin/python benches/sim_vs_real.py --random 200 --seed 1 --out /tmp/sf-agreement
    sudo .venv/bin/python benches/sim_vs_real.py --random 200 --seed 1 --only 22,175 --out /tmp/sf-22

--only runs only the listed draws of the same N and seed (every scenario is still drawn, so
scenario 22 is the same with or without it): a quick re-check of earlier disagreements.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import random
import shutil
import time
from pathlib import Path

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


#: Payload per segment with timestamps on a 1500 B MTU, and nginx's response headers (B).
SEGMENT = 1448
HEADERS = 245


def log_uniform(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def draw(rng: random.Random, i: int) -> tuple[str, str]:
    """One random scenario (TOML) and a one-line description."""
    rtt_ms = round(log_uniform(rng, 2, 300), 1)
    rate = round(log_uniform(rng, 1, 1000), 1)
    response = round(log_uniform(rng, 1000, 2_000_000))
    request = round(log_uniform(rng, 100, 20_000))
    segments = max(1, math.ceil((response + HEADERS) / SEGMENT))
    drops: dict[str, list[int]] = {}
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
        kind = rng.choice(["data", "data_tail", "data_again", "ack", "synack"])
        if kind == "data":
            drops.setdefault("data", []).append(rng.randint(1, segments))
        elif kind == "data_tail":
            drops.setdefault("data", []).append(max(1, segments - rng.randint(0, 2)))
        elif kind == "data_again":
            # The k-th segment and its first retransmission (the next data segment sent
            # after all `segments` originals, when nothing else was resent before it).
            k = rng.randint(1, segments)
            drops.setdefault("data", []).extend([k, segments + 1])
        elif kind == "ack":
            drops.setdefault("ack", []).append(rng.randint(2, 2 + min(segments, 20)))
        else:
            drops["synack"] = [1]
    lines = [f'name = "random {i}"', f"seed = {i + 1}", "[path]", f'rtt = "{rtt_ms}ms"', f'bandwidth = "{rate}Mbit"',
             '[client]', 'stack = "linux"', '[server]', 'stack = "linux"', '[workload]', f'request = "{request}B"',
             f'response = "{response}B"']
    if drops:
        lines.append("[drop]")
        lines += [f"{k} = {sorted(set(v))}" for k, v in drops.items()]
    desc = f"rtt {rtt_ms} ms, {rate} Mbit/s, request {request} B, response {response} B, drops {drops or 'none'}"
    return "\n".join(lines) + "\n", desc


def random_suite(n: int, seed: int, out: Path, only: set[int] | None = None) -> None:
    from shortflow.testbed.compare import COUNTS

    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    agree = ran = 0
    disagreements: list[str] = []
    for i in range(n):
        text, desc = draw(rng, i)
        if only is not None and i not in only:
            continue
        path = out / f"random-{i:03d}.toml"
        path.write_text(text)
        pcaps = out / f"random-{i:03d}-pcap"
        try:
            c = compare(Scenario.load(path), (), pcaps)
        except Exception as e:
            disagreements.append(f"| {i} | {desc} | run failed: {e} |")
            print(f"{i}: run failed: {e}", flush=True)
            continue
        ran += 1
        (out / f"random-{i:03d}.json").write_text(json.dumps(c.as_json(), indent=1))
        if c.agree:
            agree += 1
            shutil.rmtree(pcaps, ignore_errors=True)
            print(f"{i}: agree ({desc})", flush=True)
            continue
        s, r, v = c.sim[0], (c.real or [{}])[0], c.verdicts[0] if c.verdicts else {}
        bad = [f"{k} sim {fmt(k, s.get(k))} real {fmt(k, r.get(k))}" for k in KEYS if v.get(k) is False]
        disagreements.append(f"| {i} | {desc} | {'; '.join(bad)} |")
        print(f"{i}: DISAGREE ({desc}): {'; '.join(bad)}", flush=True)
    wanted = n if only is None else len(only)
    print(f"\nAgreement: {agree} of {ran} scenarios run ({100 * agree / max(ran, 1):.1f} %), {wanted - ran} failed to run; "
          f"seed {seed}; counts compared: {', '.join(COUNTS)}\n")
    if disagreements:
        print("| # | scenario | what differs |")
        print("|---|---|---|")
        print("\n".join(disagreements))


def only_list(text: str) -> set[int]:
    try:
        return {int(x) for x in text.split(",") if x.strip()}
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated scenario numbers, got {text!r}") from None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table4", action="store_true", help="also every Table 4 case (takes minutes)")
    ap.add_argument("--random", type=int, metavar="N", help="N random scenarios instead of the shipped ones")
    ap.add_argument("--seed", type=int, default=1, help="seed of the random draw (default 1)")
    ap.add_argument("--out", type=Path, default=Path("sf-agreement"), help="where scenarios, results and the "
                    "captures of disagreements go (default ./sf-agreement)")
    ap.add_argument("--only", type=only_list, metavar="I,J,...", help="with --random: run only these draws "
                    "(0-based indices among the N), e.g. earlier disagreements")
    args = ap.parse_args()
    if args.only is not None and (args.random is None or not args.only or max(args.only) >= args.random):
        ap.error("--only needs --random N and indices below N")
    print(f"Machine: {platform.processor() or platform.machine()}, Linux {platform.release()}, "
          f"{time.strftime('%Y-%m-%d')}\n")
    if args.random is not None:
        random_suite(args.random, args.seed, args.out, args.only)
        return
    scenarios()
    if args.table4:
        print()
        table4()


if __name__ == "__main__":
    main()
