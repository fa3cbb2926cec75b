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

VANTAGES = ("server", "client")

#: What the replays cannot show, said beside every estimate.
CAVEATS = (
    "losses replay as the same bytes of the same direction lost at their first transmission "
    "(handshake losses as the same occurrence)",
    "each connection replays alone on its own path: a lone replay cannot show what a larger "
    "initial window does to its neighbours in a shared queue",
)

_COLUMNS = ("trace", "conn_id", "client_ip", "server_ip", "server_port", "syn_count", "synack_count", "synack_gaps_s",
            "rtt_max_s", "iw_segments", "iw_bytes", "lost_offsets_c2s", "lost_offsets_s2c")

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
                     "connections_slower": f["connections_slower"]},
        } for f in self.fixes]
        return {"fixes": fixes,
                "replay": {"connections": self.connections, "faithful": self.faithful, "faithful_share": self.faithful_share}}


def _finite(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def _first_flight(c: dict[str, Any]) -> int | None:
    """The server's first flight in segments when it was cut by the window, not by the end
    of the response, after a handshake without loss (after one Linux starts from one
    segment: the flight then says nothing of the host's setting)."""
    iw = c["iw_segments"] or 0
    return int(iw) if _clean(c) and iw and (c["iw_bytes"] or 0) < c["first_response"] else None


def _clean(c: dict[str, Any]) -> bool:
    return (c["syn_count"] or 0) <= 1 and (c["synack_count"] or 0) <= 1


def _path_rtt(c: dict[str, Any], clients: dict[str, float]) -> float | None:
    if _clean(c) and (r := _finite(c["handshake_rtt_s"])) is not None:
        return r
    return _answered_rtt(c) or clients.get(c["client_ip"]) or _finite(c["handshake_rtt_s"])


def _model(i: int, c: dict[str, Any], vantage: str, iw: int | None, clients: dict[str, float]) -> dict[str, Any] | str:
    """Connection `c` (its facts, `_facts`) as a model, or why it cannot be one. `iw` is its
    server's initial window, `clients` each client's round trip (where the connection's own
    handshake does not say it)."""
    if c["epochs"] is None:
        return "concurrent exchanges (both sides sending at once): the simulator replays sequential ones only"
    rtt = _path_rtt(c, clients)
    if rtt is None:
        return "no round trip to replay (no complete handshake, none of its client's either)"
    if c["last_end"] is None:
        return "no response"
    # The client's first SYN to its receipt of the last response byte: near the server the
    # SYN came half a round trip after it and the last byte reaches the client half a round
    # trip after it left.
    observed = c["last_end"] + (rtt if vantage == "server" else 0.0)
    return {
        "conn_id": i,
        "rtt_s": rtt,
        # Near the server a lost SYN is never seen (`_lost_synacks` for the SYN/ACKs). Near
        # the client each SYN retry answers a loss: of the SYN/ACK when copies of it came
        # back together (the server's timer and its answer to the retry: the first SYN had
        # reached it), else of the SYN.
        "lost_syns": _client_losses(c)[0] if vantage == "client" else 0,
        "lost_synacks": _lost_synacks(c, rtt) if vantage == "server" else _client_losses(c)[1],
        "epochs": c["epochs"],
        "lost_c2s": list(c["lost_offsets_c2s"] or []),
        "lost_s2c": list(c["lost_offsets_s2c"] or []),
        # The host's initial window where its connections showed it (else the stack's).
        "server_iw": iw,
        "observed_s": observed,
    }


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
            "rtt_max_s", "ack_delay_s", "handshake_rtt_s", "iw_segments", "iw_bytes", "lost_offsets_c2s",
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


class _Batch:
    """One batch of the stream as `connection_vectors` reads an analysis."""

    def __init__(self, table: Any, exchanges: Any) -> None:
        self.table, self.exchanges = table, exchanges


@dataclass
class _Gathered:
    """The first pass: every connection's facts (spilled), the host-wide counts the models
    need, and what the analyzer said of the captures."""

    facts: _Spill
    raw: dict[str, Any]
    windows: dict[str, Counter[int]]
    rtts: dict[str, _Sample]
    ports: Counter[int]


def _gather(paths: list[str], spill_dir: str) -> _Gathered:
    from shortflow.arrow_table import exchanges as exchange_table
    from shortflow.arrow_table import table as connection_table

    stream = _core.ConnectionStream([Path(p) for p in paths], rows=BATCH_ROWS)
    dictionaries = _core.table_dictionaries()
    g = _Gathered(_Spill(spill_dir, "facts"), {}, {}, {}, Counter())
    while (batch := stream.next_batch()) is not None:
        cols, xcols = batch
        b = _Batch(connection_table({"columns": cols, "dictionaries": dictionaries}, paths),
                   exchange_table({"exchange_columns": xcols}, paths))
        facts = []
        for c, v in connection_vectors(b, _COLUMNS):  # type: ignore[arg-type]
            f = _facts(c, v)
            facts.append(f)
            g.ports[f["server_port"]] += 1
            if (iw := _first_flight(f)) is not None:
                g.windows.setdefault(f["server_ip"], Counter())[iw] += 1
            if _clean(f) and (r := _finite(f["handshake_rtt_s"])) is not None:
                g.rtts.setdefault(f["client_ip"], _Sample()).add(r)
        g.facts.append(facts)
    g.raw = stream.finish()
    return g


def _vantage(raw: dict[str, Any], vantage: str | None) -> str:
    if vantage is not None:
        if vantage not in VANTAGES:
            raise AdviseError(f"--vantage {vantage!r}: expected server or client")
        return vantage
    s = raw["summary"]
    if s["vantage"] not in VANTAGES:
        raise AdviseError(f"the capture point is undecided ({s['vantage_basis'] or 'no complete handshake'}): "
                          "say whose host to fix with --vantage server or --vantage client")
    return str(s["vantage"])


def _errors(raw: dict[str, Any]) -> list[str]:
    return [f["error"] for f in raw["files"] if f["error"]]


def _models(g: _Gathered, side: str) -> Iterator[list[tuple[dict[str, Any], dict[str, Any] | str]]]:
    """The spilled connections batch by batch, each with its model or why it has none;
    a model's ``conn_id`` is its connection's place in the stream (the row's own
    ``conn_id`` is per trace)."""
    windows = {server: counts.most_common(1)[0][0] for server, counts in g.windows.items()}
    clients = {ip: statistics.median(rs.values) for ip, rs in g.rtts.items()}
    i = 0
    for facts in g.facts:
        out = []
        for f in facts:
            out.append((f, _model(i, f, side, windows.get(f["server_ip"]), clients)))
            i += 1
        yield out


class _Tables:
    """``--out``'s per-connection tables, written batch by batch."""

    def __init__(self, out: Path, trace_names: list[str]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        out.mkdir(parents=True, exist_ok=True)
        self.paths = [out / "connections.parquet", out / "savings.parquet"]
        self.names = trace_names
        self.conn_schema = pa.schema([("trace", pa.string()), ("conn_id", pa.uint64()), ("observed_s", pa.float64()),
                                      ("replay_s", pa.float64()), ("faithful", pa.bool_()), ("reason", pa.string())])
        self.saving_schema = pa.schema([("fix", pa.string()), ("trace", pa.string()), ("conn_id", pa.uint64()),
                                        ("saved_s", pa.float64())])
        self.conns = pq.ParquetWriter(self.paths[0], self.conn_schema)
        self.savings = pq.ParquetWriter(self.paths[1], self.saving_schema)

    def connections(self, rows: list[dict[str, Any]]) -> None:
        import pyarrow as pa

        self.conns.write_table(pa.Table.from_pylist(rows, schema=self.conn_schema))

    def saved(self, fixes: list[dict[str, Any]], rows: list[dict[str, Any]], saved: list[list[float]]) -> None:
        import pyarrow as pa

        out = [{"fix": f["fix"], "trace": r["trace"], "conn_id": r["conn_id"], "saved_s": s}
               for f, per in zip(fixes, saved) for r, s in zip(rows, per)]
        self.savings.write_table(pa.Table.from_pylist(out, schema=self.saving_schema))

    def close(self) -> None:
        self.conns.close()
        self.savings.close()


def advise(paths: list[str], vantage: str | None = None, threads: int | None = None,
           out: Path | None = None) -> Advice:
    """Replays every connection of the captures `paths` unchanged and under the vantage
    host's fixes; with `out`, writes ``connections.parquet`` (observed and replayed
    durations, faithful or why not) and ``savings.parquet`` (seconds each fix saves each
    faithful connection) there."""
    threads = threads or (os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(prefix="sf-advise-") as spill_dir:
        g = _gather(paths, spill_dir)
        side = _vantage(g.raw, vantage)
        ranking = _core.AdviseRanking(side, spill_dir)
        singles = ranking.fixes()
        tables = _Tables(out, paths) if out is not None else None
        kept = _Spill(spill_dir, "faithful")
        connections = faithful = 0
        reasons: Counter[str] = Counter()
        try:
            for batch in _models(g, side):
                models = [m for _, m in batch if not isinstance(m, str)]
                rows = [f for f, m in batch if not isinstance(m, str)]
                result = ranking.replay_batch(models, threads)
                by_row: list[dict[str, Any]] = []
                for f, m in batch:
                    row = {"trace": f["trace"], "conn_id": f["conn_id"]}
                    if isinstance(m, str):
                        by_row.append({**row, "observed_s": None, "replay_s": None, "faithful": False, "reason": m})
                        reasons[m] += 1
                for r, b in zip(rows, result["baseline"]):
                    by_row.append({"trace": r["trace"], "conn_id": r["conn_id"], **{k: b[k] for k in
                                   ("observed_s", "replay_s", "faithful", "reason")}})
                    if not b["faithful"]:
                        # The reason's kind, without the connection's own figures.
                        why = b["reason"]
                        reasons[why.split(": ", 1)[1] if why.startswith("observed ") else why] += 1
                connections += len(batch)
                faithful += len(result["faithful"])
                held = [(models[i], rows[i], o) for i, o in result["faithful"]]
                kept.append([(m, {"trace": r["trace"], "conn_id": r["conn_id"]}, o) for m, r, o in held])
                if tables is not None:
                    tables.connections(by_row)
                    tables.saved(singles, [r for _, r, _ in held], result["saved_s"])
            pairs = ranking.pairs()
            if pairs:
                for held in kept:
                    saved = ranking.replay_pairs([m for m, _, _ in held], [o for _, _, o in held], threads)
                    if tables is not None:
                        tables.saved(pairs, [r for _, r, _ in held], saved)
            replays = ranking.replays()
            fixes = ranking.finish()
        finally:
            if tables is not None:
                tables.close()
    # The SYN optimizer watches the server's ports: those the capture's connections went to.
    port_list = ",".join(str(p) for p, _ in sorted(g.ports.most_common(_MAX_PORTS))) or "PORT"
    for f in fixes:
        f["apply"] = f["apply"].replace("--port PORT", f"--port {port_list}")
    return Advice(vantage=side, fixes=fixes, connections=connections, faithful=faithful, reasons=reasons,
                  replays=replays, errors=_errors(g.raw), written=tables.paths if tables is not None else [])


def explain(paths: list[str], conn: int, vantage: str | None = None) -> str:
    """Connection `conn`'s model as a scenario file (TOML) that `shortflow simulate` runs."""
    with tempfile.TemporaryDirectory(prefix="sf-advise-") as spill_dir:
        g = _gather(paths, spill_dir)
        side = _vantage(g.raw, vantage)
        found = [(f, m) for batch in _models(g, side) for f, m in batch if f["conn_id"] == conn]
    if not found:
        raise AdviseError(f"--explain {conn}: no connection {conn} with data in the capture")
    if len(found) > 1:
        raise AdviseError(f"--explain {conn}: {len(found)} traces have a connection {conn}; give one trace")
    f, m = found[0]
    if isinstance(m, str):
        raise AdviseError(f"--explain {conn}: not replayable: {m}")
    text: str = _core.advise_scenario({**m, "conn_id": conn})
    return f"# connection {conn} of {f['trace']}, as seen near the {side}; `shortflow simulate FILE` replays it\n" + text
