"""Simulator beside the real kernel for the shipped deterministic scenarios (the agreement
table): document 002's IW 2 and IW 10 pages through `testbed compare`, document
003's scenarios (profiles Linux cannot mimic: the reason), and, with --table4, every Table 4
case of document 000 through `reproduce 000 --real`. Prints Markdown for BENCHMARKS.md.

With --random N --seed S: N scenarios drawn at random (RTT 2-300 ms, bottleneck
1-1000 Mbit/s, response 1 kB-2 MB, request 100 B-20 kB, all log-uniform; none or one to
three scripted losses among data segments anywhere in the response including the last
ones, a retransmission lost again, pure ACKs and the SYN/ACK; client and server `linux`),
each run through `testbed compare`; prints the agreement rate and every disagreement, and
keeps each disagreement's scenario, JSON and captures under --out.

    sudo .venv/bin/python benches/sim_vs_real.py [--table4]
    sudo .venv/bin/python benches/sim_vs_real.py --random 200 --seed 1 --out /tmp/sf-agreement
    sudo .venv/bin/python benches/sim_vs_real.py --random 200 --seed 1 --only 22,175 --out /tmp/sf-22

With --knobs N: the same draw, and besides it every Linux knob the scenario model
has, on both ends, each with its own chance (route advmss, SACK off, timestamps off, window
scaling off, initcwnd, rto_min, the SYN RTO, rto_max, quickack, TLP off, F-RTO off,
Reno, tcp_reordering, slow start after idle, the receive buffer, SYN and SYN/ACK retries) and
sometimes the router's drop-tail queue; its seed is apart from the defaults suite's.

    sudo .venv/bin/python benches/sim_vs_real.py --knobs 300 --out /tmp/sf-knobs

With --cc-mix, every third draw of the knob suite (0, 3, 6, ...) sends its
response with BBR: the server's congestion control becomes "bbr", the client's too with
an even chance drawn apart from the suite's stream; every other draw, and every other key
of a BBR draw, is what the knob suite alone draws, so the non-BBR draws stay comparable.

    sudo .venv/bin/python benches/sim_vs_real.py --knobs 300 --cc-mix --out /tmp/sf-bbr

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


#: Seeds of the two random suites when --seed is not given: the defaults suite's and the
#: knob suite's, apart from it (so that neither is tuned on the other's draws).
DEFAULT_SEED = 1
KNOBS_SEED = 34

#: Payload per segment with timestamps on a 1500 B MTU, and nginx's response headers (B).
SEGMENT = 1448
HEADERS = 245


def log_uniform(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def draw_path(rng: random.Random) -> tuple[float, float, int, int]:
    """RTT (ms), bottleneck (Mbit/s), request and response (B), all log-uniform."""
    rtt_ms = round(log_uniform(rng, 2, 300), 1)
    rate = round(log_uniform(rng, 1, 1000), 1)
    response = round(log_uniform(rng, 1000, 2_000_000))
    request = round(log_uniform(rng, 100, 20_000))
    return rtt_ms, rate, request, response


def draw_drops(rng: random.Random, segments: int) -> dict[str, list[int]]:
    """None or one to three scripted losses among the response's `segments` data segments
    (anywhere, including the last ones, or a segment and its first retransmission), pure
    ACKs and the SYN/ACK."""
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
    return drops


def toml(i: int, rtt_ms: float, rate: float, request: int, response: int, drops: dict[str, list[int]],
         hosts: dict[str, list[str]] | None = None, path: list[str] | None = None) -> str:
    hosts = hosts or {}
    lines = [f'name = "random {i}"', f"seed = {i + 1}", "[path]", f'rtt = "{rtt_ms}ms"', f'bandwidth = "{rate}Mbit"',
             *(path or []), '[client]', 'stack = "linux"', *hosts.get("client", []), '[server]', 'stack = "linux"',
             *hosts.get("server", []), '[workload]', f'request = "{request}B"', f'response = "{response}B"']
    if drops:
        lines.append("[drop]")
        lines += [f"{k} = {sorted(set(v))}" for k, v in drops.items()]
    return "\n".join(lines) + "\n"


def draw(rng: random.Random, i: int) -> tuple[str, str]:
    """One random scenario (TOML) with both ends at the `linux` defaults, and a one-line
    description."""
    rtt_ms, rate, request, response = draw_path(rng)
    drops = draw_drops(rng, max(1, math.ceil((response + HEADERS) / SEGMENT)))
    desc = f"rtt {rtt_ms} ms, {rate} Mbit/s, request {request} B, response {response} B, drops {drops or 'none'}"
    return toml(i, rtt_ms, rate, request, response, drops), desc


def draw_host(rng: random.Random) -> dict[str, object]:
    """The Linux knobs of one end, each set with its own chance (else the kernel's default),
    as `[client]`/`[server]` keys: what `realize` sets as a route metric, sysctl or BPF
    timer. SACK off is written alone: the model implies what the kernel does without it
    (no RACK, no TLP)."""
    k: dict[str, object] = {}
    if rng.random() < 0.3:
        k["mss"] = rng.choice([536, 800, 1000, 1200, 1380, 1400, rng.randint(536, 1460)])
    if rng.random() < 0.25:
        k["sack"] = False
    if rng.random() < 0.25:
        k["timestamps"] = False
    if rng.random() < 0.15:
        k["window_scaling"] = False
    if rng.random() < 0.3:
        k["initial_window"] = rng.choice([1, 2, 3, 4, 6, 16, 20, 32, 40])
    if rng.random() < 0.25:
        k["rto_min"] = rng.choice([8, 20, 40, 100, 300, 500])
    if rng.random() < 0.15:
        k["syn_rto"] = rng.choice([100, 200, 400, 3000])
    if rng.random() < 0.1:
        k["rto_max"] = rng.choice([1000, 5000, 30000])
    if rng.random() < 0.25:
        k["quickack"] = True
    if k.get("sack", True):
        if rng.random() < 0.2:
            k["tlp"] = False
        # RACK off (net.ipv4.tcp_recovery = 0) is not drawn: this kernel (6.18) runs RACK
        # whatever it says, and `realize` refuses it where it could act. Its draw stays, so
        # that every other scenario is the one the first runs (2026-11-28) drew.
        rng.random()
    if rng.random() < 0.2:
        k["spurious_rto"] = "off"
    if rng.random() < 0.25:
        k["congestion_control"] = "reno"
    if rng.random() < 0.1:
        k["dupack_threshold"] = rng.choice([2, 5, 10])
    if rng.random() < 0.1:
        k["slow_start_after_idle"] = False
    if rng.random() < 0.15:
        k["receive_window"] = round(log_uniform(rng, 8_000, 1_000_000))
    if rng.random() < 0.1:
        k["syn_retries" if rng.random() < 0.5 else "synack_retries"] = rng.choice([3, 4, 8])
    return k


def host_lines(k: dict[str, object]) -> list[str]:
    out = []
    for key, v in k.items():
        if key in ("rto_min", "syn_rto", "rto_max"):
            out.append(f'{key} = "{v}ms"')
        elif key in ("mss", "receive_window"):
            out.append(f'{key} = "{v}B"')
        elif isinstance(v, bool):
            out.append(f"{key} = {str(v).lower()}")
        elif isinstance(v, str):
            out.append(f'{key} = "{v}"')
        else:
            out.append(f"{key} = {v}")
    return out


def draw_knobs(rng: random.Random, i: int) -> tuple[str, str]:
    """One random scenario drawn as `draw` does, with the Linux knobs of both ends
    (`draw_host`) and, sometimes, the router's drop-tail queue in packets."""
    rtt_ms, rate, request, response = draw_path(rng)
    hosts = {side: draw_host(rng) for side in ("client", "server")}
    c, s = hosts["client"], hosts["server"]
    # The server sends at most the client's announced MSS (its own MTU's 1460 B otherwise),
    # less the timestamps option when both ends use it (tcp_sync_mss).
    ts = 12 if c.get("timestamps", True) and s.get("timestamps", True) else 0
    payload = min(int(str(c.get("mss", 1460))), 1460) - ts
    drops = draw_drops(rng, max(1, math.ceil((response + HEADERS) / payload)))
    path = []
    if rng.random() < 0.2:
        path = ["[path.queue]", 'kind = "droptail"', f"packets = {rng.choice([8, 16, 32, 64, 128, 256])}"]
    text = toml(i, rtt_ms, rate, request, response, drops,
                {side: host_lines(h) for side, h in hosts.items()}, path).replace('"random', '"knobs', 1)
    knobs = "; ".join(f"{side} {' '.join(f'{k}={v}' for k, v in h.items()) or 'defaults'}" for side, h in hosts.items())
    queue = f", queue {path[-1].split('= ')[1]} packets" if path else ""
    desc = (f"rtt {rtt_ms} ms, {rate} Mbit/s, request {request} B, response {response} B, drops {drops or 'none'}"
            f"{queue}; {knobs}")
    return text, desc


#: Every BBR_EVERY-th draw of `--cc-mix` is a BBR draw (a third of them).
BBR_EVERY = 3


def with_bbr(text: str, desc: str, client_too: bool) -> tuple[str, str]:
    """A knob draw's scenario with the server (and, if `client_too`, the client) on BBR:
    any congestion control the draw named for that side is replaced."""
    lines = text.splitlines()
    out: list[str] = []
    side = ""
    for line in lines:
        if line.startswith("["):
            side = line.strip("[]")
        if side in ("client", "server") and line.startswith("congestion_control"):
            continue
        out.append(line)
        if line == "stack = \"linux\"" and (side == "server" or (side == "client" and client_too)):
            out.append('congestion_control = "bbr"')
    who = "server and client" if client_too else "server"
    return "\n".join(out) + "\n", f"{desc}; BBR: {who}"


def is_bbr_draw(i: int, cc_mix: bool) -> bool:
    return cc_mix and i % BBR_EVERY == 0


def random_suite(n: int, seed: int, out: Path, only: set[int] | None = None, knobs: bool = False,
                 cc_mix: bool = False) -> None:
    from shortflow.testbed.compare import COUNTS

    kind = "knobs" if knobs else "random"
    drawn = draw_knobs if knobs else draw
    rng = random.Random(seed)
    # BBR's draws come from their own stream so that the suite's own draws stay as they are.
    cc_rng = random.Random(seed * 1_000_003 + 40)
    out.mkdir(parents=True, exist_ok=True)
    agree = ran = 0
    bbr_agree = bbr_ran = 0
    disagreements: list[str] = []
    for i in range(n):
        text, desc = drawn(rng, i)
        bbr = is_bbr_draw(i, cc_mix)
        if bbr:
            text, desc = with_bbr(text, desc, cc_rng.random() < 0.5)
        if only is not None and i not in only:
            continue
        path = out / f"{kind}-{i:03d}.toml"
        path.write_text(text)
        pcaps = out / f"{kind}-{i:03d}-pcap"
        try:
            c = compare(Scenario.load(path), (), pcaps)
        except Exception as e:
            disagreements.append(f"| {i} | {desc} | run failed: {e} |")
            print(f"{i}: run failed: {e}", flush=True)
            continue
        ran += 1
        bbr_ran += bbr
        (out / f"{kind}-{i:03d}.json").write_text(json.dumps(c.as_json(), indent=1))
        if c.agree:
            agree += 1
            bbr_agree += bbr
            shutil.rmtree(pcaps, ignore_errors=True)
            print(f"{i}: agree ({desc})", flush=True)
            continue
        s, r, v = c.sim[0], (c.real or [{}])[0], c.verdicts[0] if c.verdicts else {}
        bad = [f"{k} sim {fmt(k, s.get(k))} real {fmt(k, r.get(k))}" for k in KEYS if v.get(k) is False]
        disagreements.append(f"| {i} | {desc} | {'; '.join(bad)} |")
        print(f"{i}: DISAGREE ({desc}): {'; '.join(bad)}", flush=True)
    wanted = n if only is None else len(only)
    print(f"\n{'Knob suite' if knobs else 'Defaults suite'} agreement: {agree} of {ran} scenarios run ({100 * agree / max(ran, 1):.1f} %), {wanted - ran} failed to run; "
          f"seed {seed}; counts compared: {', '.join(COUNTS)}")
    if cc_mix:
        print(f"BBR draws: {bbr_agree} of {bbr_ran} agree ({100 * bbr_agree / max(bbr_ran, 1):.1f} %)")
    print()
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
    ap.add_argument("--knobs", type=int, metavar="N", help="N random scenarios with the Linux knobs of both ends "
                    "drawn too")
    ap.add_argument("--seed", type=int, help=f"seed of the random draw (default {DEFAULT_SEED} with --random, "
                    f"{KNOBS_SEED} with --knobs)")
    ap.add_argument("--out", type=Path, default=Path("sf-agreement"), help="where scenarios, results and the "
                    "captures of disagreements go (default ./sf-agreement)")
    ap.add_argument("--cc-mix", action="store_true", help="with --knobs: every third draw sends with BBR "
                    "(the server's congestion control, the client's too half the time)")
    ap.add_argument("--only", type=only_list, metavar="I,J,...", help="with --random: run only these draws "
                    "(0-based indices among the N), e.g. earlier disagreements")
    args = ap.parse_args()
    if args.random is not None and args.knobs is not None:
        ap.error("--random and --knobs are two suites: run one at a time")
    n = args.random if args.knobs is None else args.knobs
    if args.cc_mix and args.knobs is None:
        ap.error("--cc-mix mixes BBR into the knob suite: it needs --knobs N")
    if args.only is not None and (n is None or not args.only or max(args.only) >= n):
        ap.error("--only needs --random N or --knobs N, and indices below N")
    print(f"Machine: {platform.processor() or platform.machine()}, Linux {platform.release()}, "
          f"{time.strftime('%Y-%m-%d')}\n")
    if n is not None:
        knobs = args.knobs is not None
        seed = args.seed if args.seed is not None else KNOBS_SEED if knobs else DEFAULT_SEED
        started = time.monotonic()
        random_suite(n, seed, args.out, args.only, knobs, args.cc_mix)
        print(f"\nWall time: {time.monotonic() - started:.0f} s")
        return
    scenarios()
    if args.table4:
        print()
        table4()


if __name__ == "__main__":
    main()
