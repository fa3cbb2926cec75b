"""From a capture to the fix: each connection of a capture as a scenario of its own,
replayed unchanged (does the model hold it?) and under each start-up fix of the capture's
vantage host (`shortflow._core.AdviseRanking`, the simulator's `advise` module).

A connection's model comes from the analyzer: its exchanges (the a-b-t vector of
`shortflow.abt`), its handshake's round trip, its server's initial window when its first
flight showed it, and its losses — the bytes each direction lost
(``lost_offsets_c2s``/``_s2c``) and the handshake packets lost, replayed as the same bytes
lost at their first transmission and the same occurrences of SYN or SYN/ACK.

Memory follows the connections in flight, not the capture: the analyzer hands over the
connections as they end (`_core.ConnectionStream`), a batch at a time. A model needs what
only the whole capture says (whose capture it is, each server's initial window, each
client's round trip), so the first pass keeps each connection's few facts in a spill file
and those host-wide counts in memory; the second makes the models and replays them batch by
batch, each fix keeping running sums and spilling its per-connection savings; the third
replays the faithful connections (spilled by the second) under the pairs of the best three.
"""

from __future__ import annotations

import functools
import json
import math
import os
import pickle
import random
import statistics
import struct
import tempfile
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from shortflow import _core
from shortflow.abt import connection_vectors
from shortflow.advise_shared import CAVEAT as SHARED_CAVEAT
from shortflow.advise_shared import Groups, Spans

VANTAGES = ("server", "client")

#: What the replays cannot show, said beside every estimate.
CAVEATS = (
    "losses replay as the same bytes of the same direction lost at their first transmission "
    "(handshake losses as the same occurrence)",
    "each connection's estimate is its replay alone on its own path, which cannot show what a larger "
    "initial window does to its neighbours in a shared queue: the neighbours' seconds come from the shared replay",
    SHARED_CAVEAT,
)

_COLUMNS = ("trace", "conn_id", "client_ip", "server_ip", "server_port", "syn_count", "synack_count", "synack_gaps_s",
            "syn_seen", "sack_permitted", "timestamps", "window_scaling", "mss_client", "mss_server", "rto_margin_c2s_s",
            "rto_margin_s2c_s", "ack_clock_s2c_bps", "segments_per_ack_c2s", "segments_per_ack_s2c",
            "delack_least_c2s_s", "delack_least_s2c_s",
            "rtt_min_s", "rtt_max_s", "response_complete_s", "time_delayed_ack_s", "time_zero_window_s",
            "time_receive_window_s", "iw_segments", "iw_bytes", "lost_offsets_c2s", "lost_offsets_s2c")

#: Connections the analyzer hands over at a time (and replayed at a time).
BATCH_ROWS = 2048

#: Server ports the SYN optimizer's command names at most (the busiest).
_MAX_PORTS = 8


class AdviseError(ValueError):
    """A request advise cannot answer: says what was wrong."""


@dataclass
class Advice:
    """The replays' verdict: ``fixes`` best first (each a dict as
    `_core.AdviseRanking.finish` gives it), how many connections were read and how many
    the model holds, the others counted by ``reasons``, the ``vantage`` judged from, the
    number of connection replays run, and the read ``errors`` (one per trace that could
    not be read to its end)."""

    vantage: str
    fixes: list[dict[str, Any]]
    connections: int
    faithful: int
    reasons: Counter[str]
    replays: int
    errors: list[str] = field(default_factory=list)
    caveats: tuple[str, ...] = CAVEATS
    #: The per-connection tables written (``--out``).
    written: list[Path] = field(default_factory=list)
    #: The shared replay's groups (`Groups.document`).
    shared: dict[str, Any] | None = None

    @property
    def faithful_share(self) -> float:
        return self.faithful / self.connections if self.connections else 0.0

    def document(self) -> dict[str, Any]:
        """The JSON document: ``fixes`` (best first) and ``replay``."""
        fixes = [{
            "fix": f["fix"],
            "apply": f["apply"],
            "scenario_overrides": list(f["scenario_overrides"]),
            "connections_helped": f["connections_helped"],
            "saved_s_total": f["saved_s_total"],
            "saved_s_median": f["saved_s_median"],
            "saved_s_p95": f["saved_s_p95"],
            "harm": {"extra_packets": f["extra_packets"], "spurious_retransmissions": f["spurious_retransmissions"],
                     "connections_slower": f["connections_slower"], "neighbours_s": f["neighbours_s"]},
            "shared_replay": f["shared_replay"],
        } for f in self.fixes]
        return {"fixes": fixes,
                "replay": {"connections": self.connections, "faithful": self.faithful, "faithful_share": self.faithful_share},
                "shared": self.shared}


def _finite(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def _first_flight(c: dict[str, Any]) -> int | None:
    """The server's first flight in segments when it was cut by the window, not by the end
    of the response, after a handshake without loss (after one Linux starts from one
    segment: the flight then says nothing of the host's setting)."""
    iw = c["iw_segments"] or 0
    return int(iw) if _clean(c) and iw and (c["iw_bytes"] or 0) < c["first_response"] else None


def _spread_out(iw: int, segment: float, rtt: float, rate: float | None) -> bool:
    """Whether a first flight of `iw` segments of `segment` bytes may have been cut by its
    serialization, not by the server's window. Near the client the analyzer ends a first
    flight at what arrives half the server's leg after the client's first ACK, which the
    first segment sent: a flight whose segments, one more, take half the round trip `rtt`
    to cross the bottleneck (`rate`, payload bits per second) reached that cut (at 3 Mbit/s
    over 40 ms, ten segments read as five)."""
    return rate is not None and rate > 0 and (iw + 1) * segment * 8 / rate >= rtt / 2


def _clean(c: dict[str, Any]) -> bool:
    return (c["syn_count"] or 0) <= 1 and (c["synack_count"] or 0) <= 1


def _path_rtt(c: dict[str, Any], clients: dict[str, float]) -> float | None:
    if _clean(c) and (r := _finite(c["handshake_rtt_s"])) is not None:
        return r
    return _answered_rtt(c) or clients.get(c["client_ip"]) or _finite(c["handshake_rtt_s"])


def _model(i: int, c: dict[str, Any], vantage: str, iw: int | None, clients: dict[str, float],
           rto_min: tuple[float | None, float | None] = (None, None),
           bottleneck_bps: float | None = None) -> dict[str, Any] | str:
    """Connection `c` (its facts, `_facts`) as a model, or why it cannot be one. `iw` is its
    server's initial window, `clients` each client's round trip (where the connection's own
    handshake does not say it), `rto_min` its client's and server's minimum RTO where
    their timeouts bound it below the stack's, `bottleneck_bps` its path's rate (its own
    ACK clock's, else its path's other connections')."""
    if c["epochs"] is None:
        return "concurrent exchanges (both sides sending at once): the simulator replays sequential ones only"
    rtt = _path_rtt(c, clients)
    if rtt is None:
        return "no round trip to replay (no complete handshake, none of its client's either)"
    if c["last_end"] is None:
        return "no response"
    # The client's first SYN to its receipt of the last response byte: near the server the
    # SYN came half a round trip after it and the last byte reaches the client half a round
    # trip after it left, and after any queue it waited in: the client's ACK of it tells,
    # where it came later by no more than the queueing the round trips showed (later
    # still, the ACK was delayed).
    observed = c["last_end"] + (rtt if vantage == "server" else 0.0)
    if vantage == "server" and (acked := _finite(c["response_complete_s"])) is not None and acked > observed:
        observed += min(acked - observed, _queueing(c) or 0.0)
    return {
        "conn_id": i,
        "rtt_s": rtt,
        # Near the server a lost SYN is never seen (`_lost_synacks` for the SYN/ACKs). Near
        # the client each SYN retry answers a loss: of the SYN/ACK when copies of it came
        # back together (the server's timer and its answer to the retry: the first SYN had
        # reached it), else of the SYN.
        "lost_syns": _client_losses(c)[0] if vantage == "client" else 0,
        "lost_synacks": _lost_synacks(c, rtt) if vantage == "server" else _client_losses(c)[1],
        "epochs": _server_waits(c, vantage, bottleneck_bps),
        "lost_c2s": list(c["lost_offsets_c2s"] or []),
        "lost_s2c": list(c["lost_offsets_s2c"] or []),
        # The host's initial window where its connections showed it (else the stack's).
        "server_iw": iw,
        # The options as both SYNs offered them (a SYN/ACK answers the SYN's offer).
        "options": ((bool(c["sack_permitted"]), bool(c["timestamps"]), bool(c["window_scaling"]))
                    if c["syn_seen"] and (c["synack_count"] or 0) > 0 else None),
        # The MSS each SYN announced: the segments' size.
        "client_mss": c["mss_client"] or None,
        "server_mss": c["mss_server"] or None,
        "client_rto_min_s": rto_min[0],
        "server_rto_min_s": rto_min[1],
        # The path: the bottleneck's rate from the client's ACK clock, and its queue from
        # the round trips' growth.
        "bottleneck_bps": bottleneck_bps,
        "queueing_s": _queueing(c),
        # Each receiver's ACKs: every segment or every other, and its delayed-ACK timer.
        "client_ack_every_segment": _every_segment(c["segments_per_ack_s2c"]),
        "server_ack_every_segment": _every_segment(c["segments_per_ack_c2s"]),
        "client_delack_s": _delack(c["delack_least_s2c_s"]),
        "server_delack_s": _delack(c["delack_least_c2s_s"]),
        "observed_s": observed,
    }


def _server_waits(c: dict[str, Any], vantage: str, bottleneck_bps: float | None) -> list[tuple[int, int, int, int]]:
    """The connection's epochs, each server's wait as the server had it. Near the client
    the wait is read from the request's end to the response's first byte less the round
    trip: it holds the request's last segment's serialization at the bottleneck and the
    response's first segment's, which the replay's path (one rate both ways) adds again:
    that much less."""
    epochs: list[tuple[int, int, int, int]] = c["epochs"]
    if vantage != "client" or not bottleneck_bps:
        return epochs
    mss = [c["mss_client"] or 1460, c["mss_server"] or 1460]

    def on_the_wire_us(payload: int, segment: int) -> int:
        last = payload - segment * ((payload - 1) // segment) if payload else 0
        return round(last * 8 / bottleneck_bps * 1e6)

    return [(req, max(0, wait - on_the_wire_us(req, mss[0]) - on_the_wire_us(min(resp, mss[1]), mss[1])), resp, gap)
            for req, wait, resp, gap in epochs]


def _queueing(c: dict[str, Any]) -> float | None:
    """The most queueing the connection's round trips showed: the longest less the least."""
    lo, hi = _finite(c["rtt_min_s"]), _finite(c["rtt_max_s"])
    return hi - lo if lo is not None and hi is not None and hi > lo else None


def _every_segment(segments_per_ack: float | None) -> bool | None:
    """Whether a receiver acknowledges every segment (one segment an ACK past its quick
    ACKs, short segments aside) or every other (about two); None when it did not show
    which. Linux's own reads between: while its window grows it stays in quick-ACK mode
    (tcp_grow_window), about 1.2-1.5 segments an ACK on short responses."""
    x = _finite(segments_per_ack)
    if x is None:
        return None
    return True if x <= 1.05 else False if x >= 1.6 else None


def _delack(least_s: float | None) -> float | None:
    """A receiver's delayed-ACK timer, from the least delay of its delayed ACKs, where it
    is longer than the replays' stack's own (Linux's 40 ms, give or take a timer tick of
    4 ms): Windows's 200 ms, a longer Linux `ato`. A shorter least delay is no timer the
    replay's Linux receiver can take (its floor is 40 ms): an ACK the receiving
    application's read sent, or a BSD tick's phase. Half a second or more is no
    delayed-ACK timer's (RFC 1122 4.2.3.2): the receiver's application, or a capture gap."""
    x = _finite(least_s)
    return x if x is not None and _linux_delack_s() + 0.004 < x < 0.5 else None


def _synack_times(c: dict[str, Any]) -> list[float]:
    """When each SYN/ACK left, from the first."""
    sent = [0.0]
    for g in c["synack_gaps_s"] or []:
        if g is not None:
            sent.append(sent[-1] + g)
    return sent


def _answered_rtt(c: dict[str, Any]) -> float | None:
    """After a resent SYN/ACK, the round trip from the copy the client's ACK answered: of
    the ACK's delays after each copy, the longest no longer than the data's longest round
    trip (a later copy's delay is too short, an earlier one's too long)."""
    ack_delay, longest = _finite(c["ack_delay_s"]), _finite(c["rtt_max_s"])
    if ack_delay is None or longest is None:
        return None
    sent = _synack_times(c)
    ack_at = sent[-1] + ack_delay
    fits = [ack_at - t for t in sent if ack_at - t <= longest * 1.1 + 0.001]
    return max(fits) if fits else None


def _lost_synacks(c: dict[str, Any], path: float) -> int:
    """The SYN/ACKs lost, seen near the server: those sent before the one the client's ACK
    answered, which left a round trip before it. A copy sent after it (the server's timer
    and its answer to the client's SYN retry at once) was a spare."""
    ack_delay = _finite(c["ack_delay_s"])
    sent = _synack_times(c)
    if len(sent) < 2 or ack_delay is None:
        return 0
    answered = sent[-1] + ack_delay - path
    return sum(1 for t in sent if t < answered - 0.001)


def _client_losses(c: dict[str, Any]) -> tuple[int, int]:
    """SYNs and SYN/ACKs lost, seen near the client."""
    retries = max(0, (c["syn_count"] or 0) - 1)
    synacks = min(retries, max(0, (c["synack_count"] or 0) - 1))
    return retries - synacks, synacks



def _facts(c: dict[str, Any], v: dict[str, Any]) -> dict[str, Any]:
    """What a connection's model is made of, of its row `c` and vector `v`: the spill
    keeps this, not the row."""
    ends = [e for x in c["exchanges"] if (e := _finite(x["response_end_s"])) is not None]
    keep = ("trace", "conn_id", "client_ip", "server_ip", "server_port", "syn_count", "synack_count", "synack_gaps_s",
            "syn_seen", "sack_permitted", "timestamps", "window_scaling", "mss_client", "mss_server", "rto_margin_c2s_s",
            "rto_margin_s2c_s", "ack_clock_s2c_bps", "segments_per_ack_c2s", "segments_per_ack_s2c",
            "delack_least_c2s_s", "delack_least_s2c_s",
            "rtt_min_s", "rtt_max_s", "response_complete_s", "time_delayed_ack_s", "time_zero_window_s",
            "time_receive_window_s", "ack_delay_s", "handshake_rtt_s", "first_seen", "iw_segments", "iw_bytes", "lost_offsets_c2s",
            "lost_offsets_s2c")
    return {**{k: c[k] for k in keep},
            "first_response": next((x["response_bytes"] for x in c["exchanges"] if x["response_bytes"]), 0),
            "last_end": max(ends) if ends else None,
            "epochs": None if "concurrent" in v else [tuple(int(x) for x in e) for e in v["epochs"]]}


class _Spill:
    """Batches written to a file one after another (pickled, compressed) and read back in
    the same order: what a pass keeps for the next without holding it."""

    def __init__(self, directory: str, name: str) -> None:
        self.path = Path(directory) / name
        self._out: IO[bytes] | None = self.path.open("wb")

    def append(self, batch: Any) -> None:
        assert self._out is not None, "appended before reading back"
        blob = zlib.compress(pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL), 1)
        self._out.write(struct.pack("<Q", len(blob)))
        self._out.write(blob)

    def __iter__(self) -> Iterator[Any]:
        if self._out is not None:
            self._out.close()
            self._out = None
        with self.path.open("rb") as f:
            while head := f.read(8):
                (n,) = struct.unpack("<Q", head)
                yield pickle.loads(zlib.decompress(f.read(n)))


class _Sample:
    """A seeded uniform sample of at most `SAMPLE` values (all of them, when fewer came):
    a client's round trips, whose median stands for the client's path. A client of a
    million connections keeps a few thousand, not a million."""

    SAMPLE = 4096

    def __init__(self) -> None:
        self.values: list[float] = []
        self.seen = 0
        self._rng = random.Random(41)

    def add(self, x: float) -> None:
        self.seen += 1
        if len(self.values) < self.SAMPLE:
            self.values.append(x)
        elif (k := self._rng.randrange(self.seen)) < self.SAMPLE:
            self.values[k] = x

    def merge(self, other: _Sample) -> None:
        """Adds another trace's sample: all of both while they fit, else a seeded draw
        weighted by what each saw."""
        if len(self.values) + len(other.values) <= self.SAMPLE:
            self.values += other.values
        else:
            pool = [(x, self.seen) for x in self.values] + [(x, other.seen) for x in other.values]
            keys = [self._rng.random() ** (1.0 / w) for _, w in pool]
            best = sorted(range(len(pool)), key=lambda k: keys[k], reverse=True)[:self.SAMPLE]
            self.values = [pool[k][0] for k in sorted(best)]
        self.seen += other.seen


@dataclass
class _Counts:
    """What only the whole capture says, counted connection by connection: each server's
    first flights (its initial window), each client's round trips, the servers' ports.
    Bounded by the hosts and ports, not the connections."""

    #: Each server's first flights: (segments, client, round trip in 0.1 ms, segment size
    #: in bytes), for `_spread_out` on the client's path once its rate is known.
    windows: dict[str, Counter[tuple[int, str, int, int]]] = field(default_factory=dict)
    #: Each host's smallest margin of a first retransmission timeout over its SRTT:
    #: clients' (their data's) and servers'.
    rto_margins: dict[str, float] = field(default_factory=dict)
    rtts: dict[str, _Sample] = field(default_factory=dict)
    #: Each path's (client's and server's) bottleneck rates, as its connections' ACK
    #: clocks read them.
    rates: dict[tuple[str, str], _Sample] = field(default_factory=dict)
    ports: Counter[int] = field(default_factory=Counter)

    def add(self, f: dict[str, Any]) -> None:
        self.ports[f["server_port"]] += 1
        if (iw := _first_flight(f)) is not None:
            rtt = round((_finite(f["handshake_rtt_s"]) or 0.0) * 1e4)
            segment = round((f["iw_bytes"] or 0) / iw)
            self.windows.setdefault(f["server_ip"], Counter())[iw, f["client_ip"], rtt, segment] += 1
        if _clean(f) and (r := _finite(f["handshake_rtt_s"])) is not None:
            self.rtts.setdefault(f["client_ip"], _Sample()).add(r)
        if (rate := _finite(f["ack_clock_s2c_bps"])) is not None:
            self.rates.setdefault((f["client_ip"], f["server_ip"]), _Sample()).add(rate)
        for host, margin in ((f["client_ip"], f["rto_margin_c2s_s"]), (f["server_ip"], f["rto_margin_s2c_s"])):
            if (m := _finite(margin)) is not None:
                self.rto_margins[host] = min(m, self.rto_margins.get(host, m))

    def merge(self, o: _Counts) -> None:
        self.ports.update(o.ports)
        for server, c in o.windows.items():
            self.windows.setdefault(server, Counter()).update(c)
        for client, sample in o.rtts.items():
            self.rtts.setdefault(client, _Sample()).merge(sample)
        for path, sample in o.rates.items():
            self.rates.setdefault(path, _Sample()).merge(sample)
        for host, m in o.rto_margins.items():
            self.rto_margins[host] = min(m, self.rto_margins.get(host, m))

    def rto_min(self, host: str) -> float | None:
        """The host's minimum RTO where its timeouts bound it below Linux's (200 ms, less
        a tolerance for the timer's tick): its smallest margin of a first timeout over
        SRTT, an upper bound (RTO = SRTT + max(rto_min, 4·RTTVAR)). None: the stack's."""
        m = self.rto_margins.get(host)
        return m if m is not None and m < _linux_rto_min_s() * 0.95 else None

    def bottleneck(self, f: dict[str, Any]) -> float | None:
        """Connection `f`'s path rate: its own ACK clock's, else the median of the other
        connections' between the same client and server (one path; a client's paths to
        other servers may have other bottlenecks)."""
        own = _finite(f["ack_clock_s2c_bps"])
        return own if own is not None else self.path_rate(f["client_ip"], f["server_ip"])

    def path_rate(self, client: str, server: str) -> float | None:
        """The median of the rates the connections between `client` and `server` showed."""
        sample = self.rates.get((client, server))
        return statistics.median(sample.values) if sample else None

    def hosts(self, vantage: str) -> tuple[dict[str, int], dict[str, float]]:
        """Each server's initial window (the one most of its first flights show: a host
        setting; near the client, of the flights not cut by their serialization) and
        each client's round trip (the median of its clean handshakes)."""
        windows: dict[str, int] = {}
        for server, c in self.windows.items():
            kept: Counter[int] = Counter()
            for (iw, client, rtt, segment), n in c.items():
                rate = self.path_rate(client, server)
                if not (vantage == "client" and _spread_out(iw, segment, rtt / 1e4, rate)):
                    kept[iw] += n
            if kept:
                windows[server] = kept.most_common(1)[0][0]
        return windows, {ip: statistics.median(rs.values) for ip, rs in self.rtts.items()}


@functools.cache
def _linux_delack_s() -> float:
    """The delayed-ACK timer's floor of the replays' stacks (the Linux profile's ATO_MIN)."""
    return float(json.loads(_core.stack_profiles())["linux"]["config"]["ack"]["delayed"]["timer"]) / 1e9


@functools.cache
def _linux_rto_min_s() -> float:
    """The minimum RTO of the replays' stacks (the simulator's Linux profile)."""
    return float(json.loads(_core.stack_profiles())["linux"]["config"]["rto"]["min"]) / 1e9


class _Batch:
    """One batch of the stream as `connection_vectors` reads an analysis."""

    def __init__(self, table: Any, exchanges: Any) -> None:
        self.table, self.exchanges = table, exchanges


class _Stream:
    """The connections of `paths` (named `names` in the tables) as facts, batch by batch
    (`facts()`); `raw` is the analyzer's answer without tables once they are all read."""

    def __init__(self, paths: list[str], names: list[str]) -> None:
        self.paths, self.names = paths, names
        self.raw: dict[str, Any] = {}

    def facts(self) -> Iterator[list[dict[str, Any]]]:
        from shortflow.arrow_table import exchanges as exchange_table
        from shortflow.arrow_table import table as connection_table

        stream = _core.ConnectionStream([Path(p) for p in self.paths], rows=BATCH_ROWS)
        dictionaries = _core.table_dictionaries()
        while (batch := stream.next_batch()) is not None:
            cols, xcols = batch
            b = _Batch(connection_table({"columns": cols, "dictionaries": dictionaries}, self.names),
                       exchange_table({"exchange_columns": xcols}, self.names))
            yield [_facts(c, v) for c, v in connection_vectors(b, _COLUMNS)]  # type: ignore[arg-type]
        self.raw = stream.finish()


def _vantage(raw: dict[str, Any], vantage: str | None) -> str:
    if vantage is not None:
        if vantage not in VANTAGES:
            raise AdviseError(f"--vantage {vantage!r}: expected server or client")
        return vantage
    s = raw["summary"]
    if s["vantage"] not in VANTAGES and (errors := _errors(raw)):
        # A trace that could not be read is the answer, not the capture point.
        raise AdviseError("; ".join(errors))
    if s["vantage"] not in VANTAGES:
        raise AdviseError(f"the capture point is undecided ({s['vantage_basis'] or 'no complete handshake'}): "
                          "say whose host to fix with --vantage server or --vantage client")
    return str(s["vantage"])


def _errors(raw: dict[str, Any]) -> list[str]:
    return [f["error"] for f in raw["files"] if f["error"]]


Modelled = list[tuple[dict[str, Any], "dict[str, Any] | str"]]


def _models(batches: Iterator[list[dict[str, Any]]], side: str, counts: _Counts) -> Iterator[Modelled]:
    """Each batch of facts with each connection's model or why it has none; a model's
    ``conn_id`` is its connection's place in the batches (the row's own ``conn_id`` is per
    trace)."""
    windows, clients = counts.hosts(side)
    i = 0
    for facts in batches:
        out: Modelled = []
        for f in facts:
            rto_min = (counts.rto_min(f["client_ip"]), counts.rto_min(f["server_ip"]))
            out.append((f, _model(i, f, side, windows.get(f["server_ip"]), clients, rto_min, counts.bottleneck(f))))
            i += 1
        yield out


#: What a connection that replays faster than it ran waited on, where its own time account
#: says (`_refined`): the analyzer's time column, and the reason.
_WAITS = (
    ("time_delayed_ack_s", "the capture waited on the receiver's delayed ACKs longer than the replay's Linux "
                           "receiver does (a receiver that delays from its first segment, or a longer timer)"),
    ("time_zero_window_s", "the capture waited on a zero window (the receiving application stopped reading)"),
    ("time_receive_window_s", "the capture waited on the receiver's window (a smaller buffer than the replay's "
                              "Linux receiver)"),
)
#: Round trips that grew by this much more than the replay's queue explains: a queue others
#: filled.
_QUEUE_GROWTH = 1.5


def _refined(b: dict[str, Any], f: dict[str, Any]) -> str:
    """The baseline replay's reason, made precise for a connection that replays faster
    than it ran: the cause in its own time account that holds at least half the
    difference, else round trips that grew by half again (a queue others filled: the
    replay's queue fills only with the connection's own data), else the reason as it is."""
    why, observed, replay = b["reason"], b["observed_s"], b["replay_s"]
    if b["faithful"] or replay is None or observed is None or replay >= observed:
        return str(why)
    gap = observed - replay
    for column, kind in _WAITS:
        if (_finite(f[column]) or 0.0) >= gap / 2:
            return f"observed {observed:.3f} s, replay {replay:.3f} s: {kind}"
    lo, hi = _finite(f["rtt_min_s"]), _finite(f["rtt_max_s"])
    if lo and hi and hi >= _QUEUE_GROWTH * lo:
        return (f"observed {observed:.3f} s, replay {replay:.3f} s: the round trips grew more than the connection's "
                "own data explains (a queue others filled)")
    return str(why)


def _row(f: dict[str, Any]) -> dict[str, Any]:
    return {"trace": f["trace"], "conn_id": f["conn_id"]}


@dataclass
class _Replays:
    """The second pass over batches of models: the ranking fed, the per-connection rows
    (for ``--out``) handed to `rows`, the faithful connections to `keep`."""

    ranking: Any
    threads: int
    rows: Any = None
    keep: Any = None
    #: The known groups, whose members' models the shared replay needs.
    groups: Groups | None = None
    connections: int = 0
    faithful: int = 0
    reasons: Counter[str] = field(default_factory=Counter)

    def batch(self, batch: Modelled) -> None:
        models = [m for _, m in batch if not isinstance(m, str)]
        facts = [f for f, m in batch if not isinstance(m, str)]
        result = self.ranking.replay_batch(models, self.threads)
        by_row: list[dict[str, Any]] = []
        for f, m in batch:
            if isinstance(m, str):
                by_row.append({**_row(f), "observed_s": None, "replay_s": None, "faithful": False, "reason": m})
                self.reasons[m] += 1
        for f, m, b in zip(facts, models, result["baseline"]):
            if self.groups is not None:
                self.groups.keep(f, m)
            b = {**b, "reason": _refined(b, f)}
            by_row.append({**_row(f), **{k: b[k] for k in ("observed_s", "replay_s", "faithful", "reason")}})
            if not b["faithful"]:
                # The reason's kind, without the connection's own figures.
                why = b["reason"]
                self.reasons[why.split(": ", 1)[1] if why.startswith("observed ") else why] += 1
        self.connections += len(batch)
        self.faithful += len(result["faithful"])
        held = [(models[i], _row(facts[i]), o) for i, o in result["faithful"]]
        if self.keep is not None:
            self.keep(held)
        if self.rows is not None:
            self.rows(by_row, [r for _, r, _ in held], result["saved_s"])


class _Tables:
    """``--out``'s per-connection tables, written batch by batch."""

    def __init__(self, out: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        out.mkdir(parents=True, exist_ok=True)
        self.paths = [out / "connections.parquet", out / "savings.parquet", out / "shared.parquet"]
        self.conn_schema = pa.schema([("trace", pa.string()), ("conn_id", pa.uint64()), ("observed_s", pa.float64()),
                                      ("replay_s", pa.float64()), ("faithful", pa.bool_()), ("reason", pa.string())])
        self.saving_schema = pa.schema([("fix", pa.string()), ("trace", pa.string()), ("conn_id", pa.uint64()),
                                        ("saved_s", pa.float64())])
        self.shared_schema = pa.schema([("fix", pa.string()), ("trace", pa.string()), ("conn_id", pa.uint64()),
                                        ("group", pa.uint64()), ("saved_s_alone", pa.float64()),
                                        ("saved_s_together", pa.float64()), ("neighbours_s", pa.float64())])
        self.conns = pq.ParquetWriter(self.paths[0], self.conn_schema)
        self.savings = pq.ParquetWriter(self.paths[1], self.saving_schema)
        self.together = pq.ParquetWriter(self.paths[2], self.shared_schema)

    def connections(self, rows: list[dict[str, Any]]) -> None:
        import pyarrow as pa

        self.conns.write_table(pa.Table.from_pylist(rows, schema=self.conn_schema))

    def saved(self, fixes: list[dict[str, Any]], rows: list[dict[str, Any]], saved: list[list[float]]) -> None:
        import pyarrow as pa

        out = [{"fix": f["fix"], "trace": r["trace"], "conn_id": r["conn_id"], "saved_s": s}
               for f, per in zip(fixes, saved) for r, s in zip(rows, per)]
        self.savings.write_table(pa.Table.from_pylist(out, schema=self.saving_schema))

    def shared(self, rows: list[dict[str, Any]]) -> None:
        import pyarrow as pa

        self.together.write_table(pa.Table.from_pylist(rows, schema=self.shared_schema))

    def close(self) -> None:
        self.conns.close()
        self.savings.close()
        self.together.close()


def _finish(ranking: Any, side: str, counts: _Counts, replays: _Replays, raw: dict[str, Any],
            tables: _Tables | None, groups: Groups | None = None) -> Advice:
    # The fixes that reach the neighbours, replayed on the known groups (before `finish`
    # takes the ranking's accounts).
    shared = (groups.replay(ranking.fixes(), side, replays.threads, tables.shared if tables is not None else None)
              if groups is not None else {})
    fixes: list[dict[str, Any]] = ranking.finish()
    for f in fixes:
        # None: not replayed together (a fix that leaves the flights alone, or no group).
        f["neighbours_s"], f["shared_replay"] = None, None
        if (s := shared.get(f["fix"])) is not None and s["connections"]:
            f["neighbours_s"] = s["neighbours_s"]
            f["connections_slower"] += s["slower"]
            f["shared_replay"] = {k: s[k] for k in ("connections", "saved_s_lone", "saved_s_shared")}
    # The SYN optimizer watches the server's ports: those the capture's connections went to.
    port_list = ",".join(str(p) for p, _ in sorted(counts.ports.most_common(_MAX_PORTS))) or "PORT"
    for f in fixes:
        f["apply"] = f["apply"].replace("--port PORT", f"--port {port_list}")
    return Advice(vantage=side, fixes=fixes, connections=replays.connections, faithful=replays.faithful,
                  reasons=replays.reasons, replays=0, errors=_errors(raw), written=tables.paths if tables else [],
                  shared=groups.document() if groups is not None else None)


def advise(paths: list[str], vantage: str | None = None, threads: int | None = None,
           out: Path | None = None, scheduler: str | None = None) -> Advice:
    """Replays every connection of the captures `paths` unchanged and under the vantage
    host's fixes; with `out`, writes ``connections.parquet`` (observed and replayed
    durations, faithful or why not) and ``savings.parquet`` (seconds each fix saves each
    faithful connection) there. With `scheduler` (a Dask scheduler's address) each
    trace's passes are tasks on that cluster, replaying on `threads` threads each (default
    1), with the advice a local run gives (see `_advise_on_cluster`)."""
    if scheduler is not None:
        return _advise_on_cluster(paths, vantage, out, scheduler, threads or 1)
    threads = threads or (os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(prefix="sf-advise-") as spill_dir:
        stream, counts, facts, spans = _Stream(paths, paths), _Counts(), _Spill(spill_dir, "facts"), Spans()
        i = 0
        for batch in stream.facts():
            for f in batch:
                counts.add(f)
                spans.add(i, f)
                i += 1
            facts.append(batch)
        side = _vantage(stream.raw, vantage)
        groups = spans.groups(lambda path: path in counts.rates)
        del spans
        ranking = _core.AdviseRanking(side, spill_dir)
        singles = ranking.fixes()
        tables = _Tables(out) if out is not None else None
        kept = _Spill(spill_dir, "faithful")

        def rows(conns: list[dict[str, Any]], held: list[dict[str, Any]], saved: list[list[float]]) -> None:
            assert tables is not None
            tables.connections(conns)
            tables.saved(singles, held, saved)

        replays = _Replays(ranking, threads, rows if tables else None, kept.append, groups)
        try:
            for modelled in _models(iter(facts), side, counts):
                replays.batch(modelled)
            pairs = ranking.pairs()
            if pairs:
                for held in kept:
                    saved = ranking.replay_pairs([m for m, _, _ in held], [o for _, _, o in held], threads)
                    if tables is not None:
                        tables.saved(pairs, [r for _, r, _ in held], saved)
            n = ranking.replays()
            adv = _finish(ranking, side, counts, replays, stream.raw, tables, groups)
        finally:
            if tables is not None:
                tables.close()
    adv.replays = n + groups.replays
    return adv


def _gather_task(path: str, name: str) -> tuple[_Counts, dict[str, Any], Spans]:
    """A cluster's first pass over one trace: its host-wide counts, the analyzer's record
    of the file (its summary state among it) and its connections' spans."""
    stream, counts, spans = _Stream([path], [name]), _Counts(), Spans()
    i = 0
    for batch in stream.facts():
        for f in batch:
            counts.add(f)
            spans.add(i, f)
            i += 1
    return counts, stream.raw["files"][0], spans


def _replay_task(path: str, name: str, side: str, counts: _Counts, threads: int, rows: bool,
                 groups: Groups) -> tuple[list[dict[str, Any]], list[int], Counter[str], list[Any], Groups]:
    """A cluster's second pass over one trace: its models replayed unchanged and under the
    single fixes; the accounts' parts and counts (`AdviseRanking.take_parts`), the reasons
    of the unfaithful, with `rows` the per-connection rows for ``--out``, and the models of
    its connections in `groups` (the trace's part of the known groups)."""
    ranking = _core.AdviseRanking(side)
    written: list[Any] = []
    replays = _Replays(ranking, threads, (lambda *r: written.append(r)) if rows else None, groups=groups)
    for batch in _models(_Stream([path], [name]).facts(), side, counts):
        replays.batch(batch)
    parts, n = ranking.take_parts(0)
    return parts, [n[0], n[1], n[2]], replays.reasons, written, groups


def _pairs_task(path: str, name: str, side: str, counts: _Counts, pairs: list[dict[str, Any]], threads: int,
                rows: bool) -> tuple[list[dict[str, Any]], list[int], list[Any]]:
    """A cluster's third pass over one trace: its faithful models (found again by their
    baseline replays) replayed under the pairs; the pairs' parts and counts, and with
    `rows` their savings per connection."""
    ranking = _core.AdviseRanking(side)
    ranking.add_pairs(pairs)
    written: list[Any] = []
    for batch in _models(_Stream([path], [name]).facts(), side, counts):
        modelled = [(f, m) for f, m in batch if not isinstance(m, str)]
        found = _core.advise_faithful([m for _, m in modelled], threads)
        saved = ranking.replay_pairs([modelled[i][1] for i, _ in found], [o for _, o in found], threads)
        if rows:
            written.append(([_row(modelled[i][0]) for i, _ in found], saved))
    parts, n = ranking.take_parts(ranking.singles())
    return parts, [n[0], n[1], n[2]], written


def _advise_on_cluster(paths: list[str], vantage: str | None, out: Path | None, scheduler: str,
                       threads: int) -> Advice:
    """Each trace's three passes as tasks on the cluster at `scheduler`, the results
    absorbed in the traces' order: the advice a local run gives. The
    workers must see the traces at the same paths (absolute paths are sent); each pass
    reads its trace again, where the local run keeps the first pass's facts in a spill.

    The ranking, its spill and ``--out``'s tables stay here; a worker hands back sums, one
    trace's savings and, for ``--out``, that trace's rows."""
    if "-" in paths:
        raise AdviseError("standard input ('-') cannot be sent to a Dask cluster: give a file")
    from shortflow.cluster import dask_client

    absolute = [os.path.abspath(p) for p in paths]
    with dask_client(scheduler, None) as client:
        gathered = client.gather(client.map(_gather_task, absolute, paths, pure=False))
        counts, spans, firsts = _Counts(), Spans(), []
        for c, _, sp in gathered:
            counts.merge(c)
            firsts.append(spans.count)
            spans.merge(sp)
        files = [f for _, f, _ in gathered]
        for f, p in zip(files, paths):
            f["path"] = p
        raw = {"summary": _core.merge_summaries([f["summary_state"] for f in files]), "files": files}
        side = _vantage(raw, vantage)
        groups = spans.groups(lambda path: path in counts.rates)
        parts_of = [groups.part(first, sp.count) for first, (_, _, sp) in zip(firsts, gathered)]
        del spans, gathered
        with tempfile.TemporaryDirectory(prefix="sf-advise-") as spill_dir:
            ranking = _core.AdviseRanking(side, spill_dir)
            singles = ranking.fixes()
            tables = _Tables(out) if out is not None else None
            replays = _Replays(ranking, threads)
            try:
                futures = client.map(_replay_task, absolute, paths, [side] * len(paths), [counts] * len(paths),
                                     [threads] * len(paths), [tables is not None] * len(paths), parts_of, pure=False)
                # In the traces' order (each waited for in turn): the savings go in the
                # order a local run gives them, the groups' members too.
                for fut in futures:
                    parts, n, reasons, written, members = fut.result()
                    groups.absorb(members)
                    ranking.absorb(0, parts, n)
                    replays.connections += n[0]
                    replays.faithful += n[1]
                    replays.reasons.update(reasons)
                    for conns, held, saved in written:
                        assert tables is not None
                        tables.connections(conns)
                        tables.saved(singles, held, saved)
                pairs = ranking.pairs()
                if pairs:
                    futures = client.map(_pairs_task, absolute, paths, [side] * len(paths), [counts] * len(paths),
                                         [pairs] * len(paths), [threads] * len(paths), [tables is not None] * len(paths),
                                         pure=False)
                    for fut in futures:
                        parts, n, written = fut.result()
                        ranking.absorb(ranking.singles(), parts, n)
                        for held, saved in written:
                            assert tables is not None
                            tables.saved(pairs, held, saved)
                n_replays = ranking.replays()
                adv = _finish(ranking, side, counts, replays, raw, tables, groups)
            finally:
                if tables is not None:
                    tables.close()
    adv.replays = n_replays + groups.replays
    return adv


def explain(paths: list[str], conn: int, vantage: str | None = None) -> str:
    """Connection `conn`'s model as a scenario file (TOML) that `shortflow simulate` runs."""
    with tempfile.TemporaryDirectory(prefix="sf-advise-") as spill_dir:
        stream, counts, facts = _Stream(paths, paths), _Counts(), _Spill(spill_dir, "facts")
        for batch in stream.facts():
            for f in batch:
                counts.add(f)
            facts.append([f for f in batch if f["conn_id"] == conn])
        side = _vantage(stream.raw, vantage)
        found = [(f, m) for batch in _models(iter(facts), side, counts) for f, m in batch]
    if not found:
        raise AdviseError(f"--explain {conn}: no connection {conn} with data in the capture")
    if len(found) > 1:
        raise AdviseError(f"--explain {conn}: {len(found)} traces have a connection {conn}; give one trace")
    f, m = found[0]
    if isinstance(m, str):
        raise AdviseError(f"--explain {conn}: not replayable: {m}")
    text: str = _core.advise_scenario({**m, "conn_id": conn})
    return f"# connection {conn} of {f['trace']}, as seen near the {side}; `shortflow simulate FILE` replays it\n" + text
