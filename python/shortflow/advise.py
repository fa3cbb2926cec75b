"""From a capture to the fix: each connection of a capture as a scenario of its own,
replayed unchanged (does the model hold it?) and under each start-up fix of the capture's
vantage host (`shortflow._core.advise_run`, the simulator's `advise` module).

A connection's model comes from the analyzer: its exchanges (the a-b-t vector of
`shortflow.abt`), its handshake's round trip, its server's initial window when its first
flight showed it, and its losses — the bytes each direction lost
(``lost_offsets_c2s``/``_s2c``) and the handshake packets lost, replayed as the same bytes
lost at their first transmission and the same occurrences of SYN or SYN/ACK.
"""

from __future__ import annotations

import math
import os
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shortflow import _core
from shortflow.abt import connection_vectors

if TYPE_CHECKING:
    from shortflow.analyze import Analysis

VANTAGES = ("server", "client")

#: What the replays cannot show, said beside every estimate.
CAVEATS = (
    "losses replay as the same bytes of the same direction lost at their first transmission "
    "(handshake losses as the same occurrence)",
    "each connection replays alone on its own path: a lone replay cannot show what a larger "
    "initial window does to its neighbours in a shared queue",
)

_COLUMNS = ("trace", "conn_id", "client_ip", "server_ip", "syn_count", "synack_count", "synack_gaps_s", "rtt_max_s", "iw_segments", "iw_bytes", "lost_offsets_c2s",
            "lost_offsets_s2c")


#: Server ports the SYN optimizer's command names at most (the busiest).
_MAX_PORTS = 8


class AdviseError(ValueError):
    """A request advise cannot answer: says what was wrong."""


@dataclass
class Advice:
    """The replays' verdict: ``fixes`` best first (each a dict as `_core.advise_run`
    returns it), ``baseline`` one dict per connection (with its ``trace``, ``conn_id`` and
    why the model does or does not hold it), the ``vantage`` judged from and the number of
    connection replays run."""

    vantage: str
    fixes: list[dict[str, Any]]
    baseline: list[dict[str, Any]]
    replays: int
    caveats: tuple[str, ...] = CAVEATS
    models: list[dict[str, Any]] = field(default_factory=list, repr=False)

    @property
    def faithful(self) -> int:
        return sum(1 for b in self.baseline if b["faithful"])

    @property
    def faithful_share(self) -> float:
        return self.faithful / len(self.baseline) if self.baseline else 0.0

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
                "replay": {"connections": len(self.baseline), "faithful": self.faithful, "faithful_share": self.faithful_share}}


def _finite(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def _first_flight(c: dict[str, Any]) -> int | None:
    """The server's first flight in segments when it was cut by the window, not by the end
    of the response, after a handshake without loss (after one Linux starts from one
    segment: the flight then says nothing of the host's setting)."""
    first_response = next((x["response_bytes"] for x in c["exchanges"] if x["response_bytes"]), 0)
    iw = c["iw_segments"] or 0
    return int(iw) if _clean(c) and iw and (c["iw_bytes"] or 0) < first_response else None


def _initial_windows(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, int]:
    """Each server's initial window, the one most of its connections' first flights show
    (a host setting: every connection to it starts from it)."""
    seen: dict[str, Counter[int]] = {}
    for c, _ in pairs:
        if (iw := _first_flight(c)) is not None:
            seen.setdefault(c["server_ip"], Counter())[iw] += 1
    return {server: counts.most_common(1)[0][0] for server, counts in seen.items()}


def _clean(c: dict[str, Any]) -> bool:
    return (c["syn_count"] or 0) <= 1 and (c["synack_count"] or 0) <= 1


def _path_rtts(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, float]:
    """Each client's round trip: the median handshake of its connections without a resent
    SYN or SYN/ACK. After a resend the handshake's gaps count from the last copy, which may
    have left after the one the client answered: too short a round trip."""
    seen: dict[str, list[float]] = {}
    for c, _ in pairs:
        if _clean(c) and (r := _finite(c["handshake_rtt_s"])) is not None:
            seen.setdefault(c["client_ip"], []).append(r)
    return {ip: statistics.median(rs) for ip, rs in seen.items()}


def _path_rtt(c: dict[str, Any], clients: dict[str, float]) -> float | None:
    if _clean(c) and (r := _finite(c["handshake_rtt_s"])) is not None:
        return r
    return _answered_rtt(c) or clients.get(c["client_ip"]) or _finite(c["handshake_rtt_s"])


def _model(i: int, c: dict[str, Any], v: dict[str, Any], vantage: str, iw: int | None,
           clients: dict[str, float]) -> dict[str, Any] | str:
    """Connection row `c` with its vector `v` as a model, or why it cannot be one."""
    if "concurrent" in v:
        return "concurrent exchanges (both sides sending at once): the simulator replays sequential ones only"
    rtt = _path_rtt(c, clients)
    if rtt is None:
        return "no round trip to replay (no complete handshake, none of its client's either)"
    ends = [e for x in c["exchanges"] if (e := _finite(x["response_end_s"])) is not None]
    if not ends:
        return "no response"
    # The client's first SYN to its receipt of the last response byte: near the server the
    # SYN came half a round trip after it and the last byte reaches the client half a round
    # trip after it left.
    observed = max(ends) + (rtt if vantage == "server" else 0.0)
    return {
        "conn_id": i,
        "rtt_s": rtt,
        # Near the server a lost SYN is never seen (`_lost_synacks` for the SYN/ACKs). Near
        # the client each SYN retry answers a loss: of the SYN/ACK when copies of it came
        # back together (the server's timer and its answer to the retry: the first SYN had
        # reached it), else of the SYN.
        "lost_syns": _client_losses(c)[0] if vantage == "client" else 0,
        "lost_synacks": _lost_synacks(c, rtt) if vantage == "server" else _client_losses(c)[1],
        "epochs": [tuple(int(x) for x in e) for e in v["epochs"]],
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


def models(a: Analysis, vantage: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each connection that carried data as a model (``conn_id`` its index in the second
    list), and one row per such connection: ``trace``, ``conn_id`` and, for one that
    cannot be modelled, ``reason``."""
    out: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    pairs = connection_vectors(a, _COLUMNS)
    windows = _initial_windows(pairs)
    clients = _path_rtts(pairs)
    for c, v in pairs:
        m = _model(len(rows), c, v, vantage, windows.get(c["server_ip"]), clients)
        row: dict[str, Any] = {"trace": c["trace"], "conn_id": c["conn_id"]}
        if isinstance(m, str):
            row["reason"] = m
        else:
            out.append(m)
        rows.append(row)
    return out, rows


def decide_vantage(a: Analysis, vantage: str | None) -> str:
    if vantage is not None:
        if vantage not in VANTAGES:
            raise AdviseError(f"--vantage {vantage!r}: expected server or client")
        return vantage
    if a.vantage not in VANTAGES:
        raise AdviseError(f"the capture point is undecided ({a.vantage_basis or 'no complete handshake'}): "
                          "say whose host to fix with --vantage server or --vantage client")
    return a.vantage


def advise(a: Analysis, vantage: str | None = None, threads: int | None = None) -> Advice:
    """Replays every connection of `a` unchanged and under the vantage host's fixes."""
    side = decide_vantage(a, vantage)
    ms, rows = models(a, side)
    result = _core.advise_run(ms, side, threads or (os.cpu_count() or 1))
    by_model = {b["conn_id"]: b for b in result["baseline"]}
    baseline = []
    for i, row in enumerate(rows):
        b = by_model.get(i)
        if b is None:
            baseline.append({**row, "observed_s": None, "replay_s": None, "faithful": False})
        else:
            baseline.append({**row, "observed_s": b["observed_s"], "replay_s": b["replay_s"], "faithful": b["faithful"],
                             "reason": b["reason"]})
    fixes = result["fixes"]
    # The SYN optimizer watches the server's ports: those the capture's connections went to.
    ports = Counter(a.table.column("server_port").to_pylist()).most_common(_MAX_PORTS)
    port_list = ",".join(str(p) for p, _ in sorted(ports)) or "PORT"
    for f in fixes:
        f["apply"] = f["apply"].replace("--port PORT", f"--port {port_list}")
    faithful_rows = [rows[i] for i in result["faithful_ids"]]
    for f in fixes:
        f["saved_by_connection"] = [(r["trace"], r["conn_id"], s) for r, s in zip(faithful_rows, f.pop("saved_s"))]
    return Advice(vantage=side, fixes=fixes, baseline=baseline, replays=int(result["replays"]), models=ms)


def explain(a: Analysis, conn: int, vantage: str | None = None) -> str:
    """Connection `conn`'s model as a scenario file (TOML) that `shortflow simulate` runs."""
    side = decide_vantage(a, vantage)
    ms, rows = models(a, side)
    found = [i for i, r in enumerate(rows) if r["conn_id"] == conn]
    if not found:
        raise AdviseError(f"--explain {conn}: no connection {conn} with data in the capture")
    if len(found) > 1:
        raise AdviseError(f"--explain {conn}: {len(found)} traces have a connection {conn}; give one trace")
    row = rows[found[0]]
    if "reason" in row:
        raise AdviseError(f"--explain {conn}: not replayable: {row['reason']}")
    m = next(m for m in ms if m["conn_id"] == found[0])
    text: str = _core.advise_scenario({**m, "conn_id": conn})
    return f"# connection {conn} of {row['trace']}, as seen near the {side}; `shortflow simulate FILE` replays it\n" + text


def write_parquet(adv: Advice, out: Path) -> list[Path]:
    """Per-connection tables in `out`: ``connections.parquet`` (observed and replayed
    durations, faithful or why not) and ``savings.parquet`` (seconds each fix saves each
    faithful connection)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    conns = pa.table({
        "trace": [b["trace"] for b in adv.baseline],
        "conn_id": pa.array([b["conn_id"] for b in adv.baseline], pa.uint64()),
        "observed_s": pa.array([b["observed_s"] for b in adv.baseline], pa.float64()),
        "replay_s": pa.array([b["replay_s"] for b in adv.baseline], pa.float64()),
        "faithful": [b["faithful"] for b in adv.baseline],
        "reason": [b.get("reason", "") for b in adv.baseline],
    })
    fix, trace, conn, saved = [], [], [], []
    for f in adv.fixes:
        for t, c, s in f["saved_by_connection"]:
            fix.append(f["fix"])
            trace.append(t)
            conn.append(c)
            saved.append(s)
    savings = pa.table({"fix": fix, "trace": trace, "conn_id": pa.array(conn, pa.uint64()),
                        "saved_s": pa.array(saved, pa.float64())})
    paths = [out / "connections.parquet", out / "savings.parquet"]
    pq.write_table(conns, paths[0])
    pq.write_table(savings, paths[1])
    return paths
