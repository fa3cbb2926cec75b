"""Document 003: a 13,549 B response from a Solaris server; tcp_slow_start_initial 1 vs 2
with a BSD-tick (IRIX) client, figures 2.1/2.2, and Solaris to Solaris, figures 3.1-3.5.

Besides the transfer times, each figure is compared packet by packet: every packet the
figure prints (the server's tcpdump, 1998) beside the same packet in the simulator's
capture at the same point, and the time between them (`packet_table`, `reproduce 003
--packets`). The IRIX client's processing time (`client.processing_time` in the scenario
file) is fitted from figure 2.2's own timestamps (`fit_processing_time`)."""

from __future__ import annotations

import re
import statistics
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from shortflow.reproduce.rows import NONE, Row, Why, row, run_case

#: 4-17 ms per flight, over the one to three flights before the last byte.
INDY = Why("the IRIX Indy took 4-17 ms to answer each flight (figure timestamps); the scenario's client takes "
           "its fitted 4.1 ms", -0.004, 0.004)
#: Round trip of the figures' LAN (SYN to SYN/ACK 0.25-0.29 ms, ACK back: about 0.3 ms).
LAN_RTT_S = 0.0003

#: Per figure: the scenario, its overrides and the transfer the paper states.
CASES: dict[str, tuple[str, list[str]]] = {
    "2.1": ("003-bsd-client", ["server.slow_start_initial=1"]),
    "2.2": ("003-bsd-client", ["server.slow_start_initial=2"]),
    "3.1": ("003-solaris", ["server.slow_start_initial=1"]),
    "3.2": ("003-solaris", ["server.slow_start_initial=1", "client.slow_start_initial=2"]),
    "3.3": ("003-solaris", ["server.slow_start_initial=2"]),
    "3.4": ("003-solaris", ["server.slow_start_initial=2", "client.slow_start_initial=2"]),
    "3.5": ("003-solaris", ["server.slow_start_initial=2", "client.ack_every=4"]),
}

_LINE = re.compile(r"(\d+):\s*(\d+\.\d+) (client|server)\.\S+ > (client|server)\.\S+: (\S+) (.*)$")
_RANGE = re.compile(r"(\d+):(\d+)\((\d+)\)")
_ACK = re.compile(r"\back (\d+)")


@dataclass(frozen=True)
class Packet:
    """One packet: when (s from the first SYN), which way, and what it is (`key`)."""

    n: int
    ts: float
    from_client: bool
    key: tuple[str, int]
    text: str


def _key(flags: str, start: int | None, length: int, ack: int | None) -> tuple[str, int]:
    if "S" in flags:
        return ("synack" if ack is not None else "syn", 0)
    if length > 0:
        return ("data", start or 0)
    if "F" in flags:
        return ("fin", start or 0)
    return ("ack", ack or 0)


def figure_text(figure: str) -> str:
    """Figure `figure` as printed (tcpdump on the server, the 1998 hosts' own timestamps),
    transcribed line for line from the document (Jens-S. Vöckler, "Scrutinizing slow start
    with Solaris servers", 1998): the package's data file ``doc003-figures/figure-N.txt``."""
    return resources.files("shortflow").joinpath("data", "doc003-figures", f"figure-{figure}.txt").read_text()


def figure_packets(figure: str) -> list[Packet]:
    """The packets figure `figure` prints (relative sequence numbers, as tcpdump shows them)."""
    out = []
    for line in figure_text(figure).splitlines():
        m = _LINE.match(line)
        if m is None:
            raise ValueError(f"document 003 figure {figure}: cannot read {line!r}")
        n, ts, src, _, flags, rest = m.groups()
        r = _RANGE.search(rest)
        a = _ACK.search(rest)
        ack = None if a is None else int(a.group(1))
        if "S" in flags and "ack" in rest:
            ack = 1
        start, length = (int(r.group(1)), int(r.group(3))) if r else (None, 0)
        out.append(Packet(int(n), float(ts), src == "client", _key(flags, start, length, ack), f"{flags} {rest}"))
    return out


def capture_packets(pcap: Path, port: int = 80) -> list[Packet]:
    """The simulator's capture in the figures' terms (sequence numbers from each side's SYN)."""
    from shortflow.tcp import ACK, FIN, PSH, SYN, read_pcap

    segs = list(read_pcap(pcap))
    isn: dict[bool, int] = {}
    for s in segs:
        if s.flags & SYN:
            isn.setdefault(s.dst_port == port, s.seq)
    t0 = segs[0].ts if segs else 0.0
    out = []
    for i, s in enumerate(segs, 1):
        c = s.dst_port == port
        rel = (s.seq - isn.get(c, s.seq)) & 0xFFFFFFFF
        ack = (s.ack - isn.get(not c, s.ack)) & 0xFFFFFFFF if s.flags & ACK else None
        flags = "".join(f for f, bit in (("S", SYN), ("F", FIN), ("P", PSH)) if s.flags & bit) or "."
        text = f"{flags} {rel}:{rel + s.payload}({s.payload})" + (f" ack {ack}" if ack is not None else "")
        out.append(Packet(i, s.ts - t0, c, _key(flags, rel, s.payload, ack), text))
    return out


def packet_table(figure: str) -> list[dict[str, object]]:
    """Each packet of the figure beside the simulator's same packet (same direction, kind
    and sequence or acknowledgement number), with ours − paper in seconds; None where the
    simulator sent no such packet."""
    name, overrides = CASES[figure]
    with tempfile.TemporaryDirectory(prefix="sf-003-") as d:
        pcap = Path(d) / "sim.pcap"
        from shortflow.scenario import Scenario
        from shortflow.simulate import simulate

        simulate(Scenario.builtin(name, overrides), pcap=pcap)
        ours = capture_packets(pcap)
    used: set[int] = set()
    rows: list[dict[str, object]] = []
    for p in figure_packets(figure):
        match = next((q for q in ours if q.n not in used and q.from_client == p.from_client and q.key == p.key), None)
        if match is not None:
            used.add(match.n)
        rows.append({"n": p.n, "paper_s": p.ts, "paper": p.text, "ours_s": None if match is None else round(match.ts, 6),
                     "ours": None if match is None else match.text,
                     "delta_s": None if match is None else round(match.ts - p.ts, 6)})
    return rows


def fit_processing_time() -> float:
    """The IRIX client's time to answer data, from figure 2.2's timestamps: for each ACK the
    client sent, its time after the newest server segment it acknowledges, less the LAN
    round trip; the median (the paper: "four to five milliseconds processing time")."""
    pkts = figure_packets("2.2")
    answers = []
    for a in (p for p in pkts if p.from_client and p.key[0] == "ack" and p.key[1] > 1):
        acked = [p for p in pkts if not p.from_client and p.key[0] == "data" and p.ts < a.ts
                 and p.key[1] < a.key[1]]
        if acked:
            answers.append(a.ts - max(p.ts for p in acked) - LAN_RTT_S)
    return statistics.median(answers)


def _packet_row(figure: str, scenario: str, overrides: list[str]) -> Row:
    """How many of the figure's packets the simulator also sent, with the median and largest
    time between the paper's and ours in the case text; the packets it did not send are
    named in the explanation (its ACKs acknowledge other segment counts there)."""
    table = packet_table(figure)
    matched = [r for r in table if r["delta_s"] is not None]
    deltas = [abs(float(r["delta_s"])) for r in matched]  # type: ignore[arg-type]
    timing = ""
    if deltas:
        worst = max(matched, key=lambda r: abs(float(r["delta_s"])))  # type: ignore[arg-type]
        timing = (f" (|ours − paper| median {1000 * statistics.median(deltas):.1f} ms, largest "
                  f"{1000 * max(deltas):.1f} ms at packet {worst['n']}; --packets lists them)")
    missing = [str(r["n"]) for r in table if r["delta_s"] is None]
    why = Why(f"the simulator's ACKs acknowledge other segment counts at packet {', '.join(missing) or '–'} "
              "(the paper's hosts acknowledged as their 1998 timing fell)", 0.0, float(len(missing)))
    return row("003", f"figure-{figure}", f"packet by packet: the figure's packets the simulator also sent{timing}",
               float(len(table)), float(len(matched)), "packets", f"scenarios/{scenario}.toml", overrides, why)


def rows() -> list[Row]:
    out: list[Row] = []
    for iw, figure, paper in ((1, "2.1", 0.250), (2, "2.2", 0.021)):
        name, ov = CASES[figure]
        result, scenario, ov = run_case(name, ov)
        c = result.connections[0]
        out.append(row("003", f"figure-{figure}", f"IW {iw}, BSD-tick client, transfer time", paper, c["complete_s"], "s",
                       scenario, ov, INDY))
        out.append(_packet_row(figure, name, ov))
    delays = Why("the paper's figure is read as whole delayed-ACK intervals (200 ms each); "
                 "ours adds the transfer itself (~6 ms, as in figure 3.5)", -0.010, -0.002)
    lucky_why = Why("the paper's 1998 hosts took ~1.5 ms longer to process the segments; ours take none", 0.0005, 0.0025)
    solaris: tuple[tuple[int, str, float, int, Why], ...] = (
        (1, "3.1", 0.40, 2, delays),
        (2, "3.3", 0.20, 1, delays),
        (2, "3.5", 0.0075, 0, lucky_why),
    )
    for iw, figure, paper, acks, why in solaris:
        name, ov = CASES[figure]
        result, scenario, ov = run_case(name, ov)
        c = result.connections[0]
        lucky = ", the lucky run (client ACKs every 4th segment)" if figure == "3.5" else ""
        label = {"3.1": "3.1/3.2", "3.3": "3.3/3.4"}.get(figure, figure)
        out.append(row("003", f"figure-{label}", f"IW {iw}, Solaris client{lucky}, transfer time", paper, c["complete_s"], "s",
                       scenario, ov, why))
        out.append(row("003", f"figure-{label}", f"IW {iw}, Solaris client{lucky}, delayed ACKs", acks, c["delayed_acks"], "ACKs",
                       scenario, ov, NONE))
    for figure in ("3.1", "3.2", "3.3", "3.4", "3.5"):
        name, ov = CASES[figure]
        out.append(_packet_row(figure, name, ov))
    return out
