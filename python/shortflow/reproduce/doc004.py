"""Document 004: the delayed-ACK-aware minimum RTO against fixed minima (RFC 2988 1 s,
Solaris 400 ms, Linux 200 ms): spurious timeouts of a 200 ms floor against a 200 ms
delayed-ACK client (Figure 5), and the goodput of long FTP flows over BDP-sized RED queues
by packet error rate, number of flows and bottleneck bandwidth (Figure 7).

The document gives its figures as plots without numbers; its stated result is "up to 50 %
better" goodput and spurious timeouts avoided, and those are the rows with a paper value.
Goodput = original data / connection time, per flow; means over seeds with a 95 % CI.

The set-up is the paper's "Reno, SACK, timestamps, spurious response enabled": ns-2's
Agent/TCP "spurious response" is F-RTO detection (`frto_enabled_`/`sfrto_enabled_`) with
`spurious_response_ 1` (cwnd back to the flight size, ssthresh to its value before the
timeout), which is our `spurious_rto = "frto"` (RFC 5682 with the RFC 4015 response).
"""

from __future__ import annotations

from typing import Any

from shortflow.reproduce.rows import Row
from shortflow.scenario import Scenario
from shortflow.simulate import simulate
from shortflow.stats import mean_ci

FTP = "004-min-rto"
DELACK = "004-delack"

#: The minimum-RTO variants: the document's three baselines and its mechanism (R = 250 ms:
#: above the client's 200 ms delayed-ACK timer plus the path).
VARIANTS: dict[str, list[str]] = {
    "RFC 2988 (1 s)": ['server.rto_min="1s"'],
    "Solaris (400 ms)": ['server.rto_min="400ms"'],
    "Linux (200 ms)": ['server.rto_min="200ms"'],
    "delayed-ACK-aware": ['server.rto_min="0ms"', 'mechanisms.min_rto_004={extended="250ms"}'],
}


def _goodput(r: Any, span: float) -> float:
    """Mean per-flow goodput (bit/s): data delivered in order over the connection time."""
    return float(sum(8 * c["bytes_received"] / span for c in r.connections) / len(r.connections))


def _point(extra: list[str], seeds: int, span: float) -> dict[str, tuple[float, float, float, float]]:
    """Per variant: goodput mean and CI over seeds, timeouts per flow, and of those the
    ones F-RTO found spurious per flow."""
    out = {}
    for name, ov in VARIANTS.items():
        g, t, s = [], [], []
        for seed in range(1, seeds + 1):
            r = simulate(Scenario.builtin(FTP, [*extra, *ov, f"seed={seed}", f'time_limit="{span:g}s"']))
            g.append(_goodput(r, span))
            t.append(sum(c["timeouts"] for c in r.connections) / len(r.connections))
            s.append(sum(c["spurious_timeouts"] for c in r.connections) / len(r.connections))
        m, ci = mean_ci(g)
        out[name] = (m, ci, sum(t) / len(t), sum(s) / len(s))
    return out


def _rows_for(figure: str, axis: str, values: list[tuple[str, list[str], float]], seeds: int,
              span: float) -> list[Row]:
    """`values`: (label, overrides, fair share in bit/s) per point of the figure."""
    rows = []
    best_gain = 0.0
    for label, extra, fair in values:
        pt = _point(extra, seeds, span)
        base = pt["RFC 2988 (1 s)"][0]
        for name, (m, ci, to, sp) in pt.items():
            gain = 100 * (m - base) / base if base else 0.0
            # A gain over a baseline that starves (under 5 % of the fair share) is a ratio
            # of near-zeros, not an improvement: the best-gain row leaves those points out.
            if name == "delayed-ACK-aware" and base >= 0.05 * fair:
                best_gain = max(best_gain, gain)
            rows.append(Row("004", figure, f"{axis} {label}: {name}", None, m / 1e6, "Mbit/s", f"scenarios/{FTP}.toml",
                            [*extra, *VARIANTS[name]],
                            f"figure given as a plot only; ours ± {ci / 1e6:.3g} over {seeds} seeds, "
                            f"{to:.1f} RTOs a flow ({sp:.1f} found spurious by F-RTO), "
                            f"{gain:+.0f} % against RFC 2988's 1 s"))
    rows.append(Row("004", figure, f"best gain of the delayed-ACK-aware minimum over 1 s ({axis})", 50.0, best_gain,
                    "%", f"scenarios/{FTP}.toml", [],
                    "the paper's 'up to 50 %' is its best case over all three figures; ours is this figure's best "
                    "(points where the 1 s baseline gets under 5 % of the fair share left out): the gain is the "
                    "RTO waits a 1 s floor adds, so it grows with the error rate and shrinks as queueing delay "
                    "lengthens RTO_current"))
    return rows


def rows(quick: bool = False) -> list[Row]:
    seeds, span = (2, 10.0) if quick else (5, 60.0)
    out: list[Row] = []
    # Figure 5: spurious timeouts with D = 1 and a delayed ACK.
    fig5 = "5: spurious timeouts, 50 one-segment responses"
    for name, ov, paper in (("Linux server, 200 ms floor", ['server.rto_min="200ms"'], None),
                            ("modified server (delayed-ACK-aware)", ['server.rto_min="0ms"',
                                                                     'mechanisms.min_rto_004={extended="250ms"}'], 0.0)):
        r = simulate(Scenario.builtin(DELACK, ov))
        c = r.connections[0]
        out.append(Row("004", fig5, name, paper,
                       float(c["spurious_retransmits"]), "resends", f"scenarios/{DELACK}.toml", ov,
                       f"paper: a spurious timeout every time the ACK is delayed and D = 1 (plotted, not counted); "
                       f"ours: {c['timeouts']} timeouts, every one resending a segment that had arrived; with "
                       "timestamps every ACK gives an RTT sample (the one after a timeout echoes the retransmission, "
                       "so SRTT never takes in the 200 ms delay) and RTO_current stays under the floor"
                       if paper is None else ""))
        out.append(Row("004", fig5, f"{name}: timeouts F-RTO found spurious", None,
                       float(c["spurious_timeouts"]), "timeouts", f"scenarios/{DELACK}.toml", ov,
                       "the paper's spurious response (ns-2 F-RTO) cannot see these: with one segment outstanding "
                       "the first ACK after the retransmission acknowledges everything (RFC 5682 step 2a) and there is "
                       "no new data to test with; only timestamp-based detection (Eifel, RFC 3522) would"))
    pers = ["1%", "3%"] if quick else ["0.5%", "1%", "3%", "5%"]
    out += _rows_for("7(a): goodput by packet error rate, 3 flows, 6 Mbit/s", "PER",
                     [(p, [f"random_loss.reverse={float(p[:-1]) / 100}"], 6e6 / 3) for p in pers], seeds, span)
    flows = [5, 20] if quick else [10, 50, 100]
    out += _rows_for("7(b): goodput by number of flows, PER 3 %, 100 Mbit/s", "flows",
                     [(str(n), ["random_loss.reverse=0.03", 'dumbbell.bandwidth="100Mbit"', f"workload.flows={n}",
                                f"dumbbell.pairs={n}"], 100e6 / n) for n in flows], seeds, span)
    bws = ["10Mbit", "50Mbit"] if quick else ["10Mbit", "50Mbit", "100Mbit"]
    n = 50 if quick else 500
    out += _rows_for(f"7(c): goodput by bottleneck bandwidth, PER 3 %, {n} flows", "bandwidth",
                     [(b, ["random_loss.reverse=0.03", f'dumbbell.bandwidth="{b}"', f"workload.flows={n}",
                           f"dumbbell.pairs={n}"], float(b[:-4]) * 1e6 / n) for b in bws], seeds, span)
    return out
