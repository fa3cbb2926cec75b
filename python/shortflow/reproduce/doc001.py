"""Document 001: Super Fast Retransmit on PackMime-HTTP web traffic over a 5 Mbit/s
bottleneck (ns-2, Full-TCP Reno): mean connection duration with and without SFR by load
and by one-way delay, the multiplication factor compared, and today's Linux as a baseline.

Every case runs over several seeds. For each seed the Reno run calibrates the connection
rate to the load; SFR and the other variants replay that rate, so they carry the very same
arrivals and sizes. Figures are means over the seeds with a 95 % confidence interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shortflow.reproduce.rows import Row
from shortflow.scenario import Scenario
from shortflow.simulate import simulate
from shortflow.stats import mean_ci

SCENARIO = "001-sfr-web"
FILE = f"scenarios/{SCENARIO}.toml"
SFR = "mechanisms.sfr={factor=3}"
#: Today's Linux (200 ms minimum RTO on the variance term, IW 10, RACK-TLP, F-RTO). The
#: scenario file's hosts carry ns-2's agent settings, which would stay on top of the linux
#: profile: each is set back to the kernel's (a 14600 B receive window is what Linux offers
#: first, 10 segments of 1460 B; autotuning grows it as without the key).
LINUX = [f"{h}.{k}" for h in ("client", "server") for k in (
    "stack=linux", "initial_window=10", 'syn_rto="1s"', 'clock_granularity="1ms"', 'mss="1460B"',
    'receive_window="14600B"', 'delayed_ack="timer"', 'delayed_ack_timeout="40ms"', "ack_every=2")]

#: How our set-up follows ns-2's, and what stays unknown: the printed note of every row with
#: a paper value.
SETUP = ("set-up: ns-2 (2005) Full-TCP defaults the paper leaves unchanged — 536 B segments, window 20, "
         "an ACK for every full segment (segsperack_ 1) and the 100 ms delayed-ACK tick only for a short one, "
         "6 s initial RTO (rtxcur_init_ before 2006), DropTail 50 packets. The load is not where the gap comes "
         "from: PackMime's nominal offered load at our calibrated rate (rate x the response-size distribution's "
         "mean) is ~47 % in payload against our measured 50 % with headers; our Reno mean reaches the paper's "
         "297 ms only at ~70-75 % measured (its 38 % SFR gain needs far more RTO-bound connections than a "
         "50 %-utilised link gives). Not stated and so not matched: what the paper's duration spans, its "
         "PackMime release and per-flow delays (no DelayBox named)")

#: The paper's figures: mean duration at 10 ms / 50 % (s), and SFR's improvements (%).
PAPER_MEAN = {"Reno": 0.297, "SFR": 0.268}
PAPER_BY_DELAY = {"10ms": 39.0, "60ms": 8.0}  # at 25 % load
PAPER_BY_LOAD = {"25%": 23.0, "50%": 38.0, "75%": 8.0}  # at 10 ms


@dataclass
class Outcome:
    """One variant of one case over the seeds."""

    means: list[float]
    timeout_share: list[float]
    sfr_resends: list[int]
    rates: list[float]
    loss: list[float]
    #: Mean duration of the connections Reno repaired by an RTO (the same connections in
    #: every variant: the traffic is replayed), per seed.
    rto_subset: list[float]
    #: ... and of all the others.
    other_subset: list[float]
    #: Resends of data that had arrived (spurious), per seed.
    spurious: list[int]


def _mean_duration(r: Any) -> float:
    done = [float(c["complete_s"]) for c in r.connections if c["complete_s"] is not None]
    return sum(done) / len(done)


def _summarise(r: Any) -> tuple[float, float, int, float]:
    """Mean duration, share of connections with an RTO, SFR resends, drops per MB carried
    (kept instead of the run, so that a long reproduction stays small)."""
    conns = r.connections
    share = sum(1 for c in conns if c["timeouts"] > 0) / max(1, len(conns))
    carried = sum(link["bytes"] for link in r.summary["bottleneck"]) or 1
    drops = 1e6 * sum(link["drops"] for link in r.summary["bottleneck"]) / carried
    return _mean_duration(r), share, sum(c["sfr_retransmits"] for c in conns), drops


def run_case(delay: str, load: str, variants: dict[str, list[str]], seeds: int, duration: int) -> dict[str, Outcome]:
    """Reno (calibrated) and each variant, per seed."""
    base = [f'dumbbell.delay="{delay}"', f'workload.load="{load}"', f'workload.duration="{duration}s"']
    out = {k: Outcome([], [], [], [], [], [], [], []) for k in ["Reno", *variants]}
    for seed in range(1, seeds + 1):
        ov = [*base, f"seed={seed}"]
        reno = simulate(Scenario.builtin(SCENARIO, ov))
        rate = reno.summary["calibration"]["connections_per_second"]
        runs = {"Reno": reno}
        for name, extra in variants.items():
            runs[name] = simulate(Scenario.builtin(SCENARIO, [*ov, *extra]), rate=rate)
        hit = {i for i, c in enumerate(reno.connections) if c["timeouts"] > 0}
        for name, r in runs.items():
            m, share, resends, drops = _summarise(r)
            for subset, inside in ((out[name].rto_subset, True), (out[name].other_subset, False)):
                sub = [c["complete_s"] for i, c in enumerate(r.connections)
                       if (i in hit) == inside and c["complete_s"] is not None]
                subset.append(sum(sub) / len(sub) if sub else 0.0)
            o = out[name]
            o.means.append(m)
            o.timeout_share.append(share)
            o.sfr_resends.append(resends)
            o.rates.append(rate)
            o.loss.append(drops)
            o.spurious.append(sum(c["spurious_retransmits"] for c in r.connections))
        del runs, reno
    return out


def _improvement(reno: Outcome, other: Outcome) -> tuple[float, float]:
    """Per-seed relative reduction of the mean duration (%), mean and CI over seeds."""
    return mean_ci([100 * (r - o) / r for r, o in zip(reno.means, other.means)])


def _why(reno: Outcome, sfr: Outcome | None = None) -> str:
    """The computed reason our figure sits where it does: how many connections needed an
    RTO (only those SFR can speed up), the bottleneck loss rate, and what SFR resent."""
    to, _ = mean_ci(reno.timeout_share)
    loss, _ = mean_ci(reno.loss)
    text = (f"ours: {100 * to:.1f} % of Reno's connections waited for an RTO, {loss:.1f} bottleneck drops "
            f"per MB carried, rate {mean_ci(reno.rates)[0]:.1f} conn/s")
    if sfr is not None:
        text += (f"; SFR resent {mean_ci([float(x) for x in sfr.sfr_resends])[0]:.0f} segments a run and took "
                 f"those connections from {mean_ci(reno.rto_subset)[0]:.3f} s to {mean_ci(sfr.rto_subset)[0]:.3f} s "
                 "on average (SYN losses and multiple losses it cannot help), while the others went from "
                 f"{mean_ci(reno.other_subset)[0]:.4f} s to {mean_ci(sfr.other_subset)[0]:.4f} s; "
                 f"spurious resends a run {mean_ci([float(s - r) for s, r in zip(sfr.spurious, reno.spurious)])[0]:+.0f} "
                 "against Reno's (SFR fires spuriously once queueing delay passes (factor − 1) × handshake RTT: "
                 "real in the paper's set-up too at high load, where its gain was smallest)")
    return text + " (ns-2's own loss and RTO share are not in the paper). " + SETUP


def _row(figure: str, case: str, paper: float | None, ours: tuple[float, float], unit: str, ov: list[str],
         why: str, seeds: int) -> Row:
    m, ci = ours
    note = f"mean of {seeds} seeds ± {ci:.3g} (95 % CI). {why}"
    return Row("001", figure, case, paper, m, unit, FILE, ov, note)


def rows(quick: bool = False) -> list[Row]:
    seeds, duration = (2, 60) if quick else (5, 300)
    out: list[Row] = []
    sets = {"SFR": [SFR]}
    # Section 7: 10 ms, 50 %, with the factors and today's Linux beside it.
    main = run_case("10ms", "50%", {
        "SFR": [SFR],
        "SFR factor 2": ["mechanisms.sfr={factor=2}"],
        "SFR factor 4": ["mechanisms.sfr={factor=4}"],
        "Linux": LINUX,
        "Linux + SFR": [*LINUX, SFR],
        "Linux + 004 minimum RTO": [*LINUX, "mechanisms.min_rto_004={extended=\"250ms\"}"],
    }, seeds, duration)
    ov = ['dumbbell.delay="10ms"', 'workload.load="50%"', f'workload.duration="{duration}s"']
    why = _why(main["Reno"], main["SFR"])
    fig = "7: mean connection duration, 10 ms, 50 %"
    for name in ("Reno", "SFR"):
        out.append(_row(fig, name, PAPER_MEAN[name], mean_ci(main[name].means), "s",
                        ov + ([SFR] if name == "SFR" else []), why, seeds))
    # The paper states 8 % (its 297 → 268 ms would be 9.8 %).
    out.append(_row(fig, "SFR improvement", 8.0, _improvement(main["Reno"], main["SFR"]),
                    "%", ov + [SFR], why, seeds))
    fig = "7.2: multiplication factor, 10 ms, 50 %"
    for f in (2, 3, 4):
        name = "SFR" if f == 3 else f"SFR factor {f}"
        m = mean_ci(main[name].means)
        resends = mean_ci([float(x) for x in main[name].sfr_resends])[0]
        out.append(Row("001", fig, f"factor {f}: mean duration", None, m[0], "s", FILE,
                       ov + [f"mechanisms.sfr={{factor={f}}}"],
                       f"paper: factor 2 best, 4 nearly as good with fewer SFR resends (no figures given); "
                       f"ours ± {m[1]:.3g}, SFR resent {resends:.0f} segments a run"))
    fig = "modern baselines, 10 ms, 50 %"
    for name in ("Linux", "Linux + SFR", "Linux + 004 minimum RTO"):
        m = mean_ci(main[name].means)
        out.append(Row("001", fig, name, None, m[0], "s", FILE, ov + LINUX,
                       f"no document has it: Linux profile (200 ms minimum on the variance term, IW 10, "
                       f"SACK, RACK-TLP, PRR, CUBIC, F-RTO; 1460 B segments) ± {m[1]:.3g} over {seeds} seeds"))
    # Figure 4 left: by delay at 25 %; right: by load at 10 ms.
    improvements: list[tuple[float, float]] = [_improvement(main["Reno"], main["SFR"])]
    for delay, paper in PAPER_BY_DELAY.items():
        res = run_case(delay, "25%", sets, seeds, duration)
        imp = _improvement(res["Reno"], res["SFR"])
        improvements.append(imp)
        out.append(_row("4 (left): SFR improvement by one-way delay, 25 %", delay, paper, imp, "%",
                        [f'dumbbell.delay="{delay}"', 'workload.load="25%"', SFR], _why(res["Reno"], res["SFR"]), seeds))
    for load, paper in PAPER_BY_LOAD.items():
        if load == "50%":
            imp, why = improvements[0], _why(main["Reno"], main["SFR"])
        elif load == "25%":
            # The same runs as the 10 ms case of the left figure.
            imp, why = improvements[1], "the 10 ms, 25 % runs of figure 4 (left)"
        else:
            res = run_case("10ms", load, sets, seeds, duration)
            imp, why = _improvement(res["Reno"], res["SFR"]), _why(res["Reno"], res["SFR"])
            improvements.append(imp)
        out.append(_row("4 (right): SFR improvement by utilisation, 10 ms", load, paper, imp, "%",
                        ['dumbbell.delay="10ms"', f'workload.load="{load}"', SFR], why, seeds))
    never_worse = all(m + ci >= 0 for m, ci in improvements)
    out.append(Row("001", "7.3: SFR never worse than Reno", "all cases", 1.0, 1.0 if never_worse else 0.0, "yes=1",
                   FILE, [SFR], "" if never_worse else
                   "in some case SFR's mean duration is above Reno's beyond the confidence interval"))
    return out
