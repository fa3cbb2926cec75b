"""The trace analyzer's Python API: `analyze()` returns the per-connection table as a
`pyarrow.Table` and document 000's Table 1 as a summary.

The work happens in the Rust core (`shortflow._core.analyze`); this module only wraps its
column buffers as Arrow arrays and names things.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from shortflow import _core

#: The keys of `--summary-json`, in document 000's Table 1 order.
SUMMARY_KEYS = (
    "connection_tries",
    "successful",
    "unsuccessful",
    "multiple_syns",
    "multiple_syns_successful",
    "multiple_syns_unsuccessful",
    "multiple_syns_outside_standard",
    "syns_per_successful",
    "duplicate_syn_every",
    "syn_retransmissions",
    "synack_retransmissions",
    "packets",
    "connections",
)

ProgressFn = Callable[[int, int], None]


@dataclass
class Analysis:
    """What `analyze()` found.

    ``table`` has one row per connection; ``summary`` is Table 1 with the keys of
    `SUMMARY_KEYS`; ``synack`` is the same table for SYN/ACKs; ``files`` has one dict per
    trace (packets, skipped packets, ``error`` with the file and byte offset, or None).
    Unpacks as ``table, summary = shortflow.analyze(paths)``.
    """

    table: pa.Table
    summary: dict[str, Any]
    synack: dict[str, Any]
    vantage: str
    vantage_counts: dict[str, int]
    files: list[dict[str, Any]]
    interrupted: bool = False
    raw_summary: dict[str, Any] = field(default_factory=dict, repr=False)

    def __iter__(self) -> Iterator[Any]:
        return iter((self.table, self.summary))

    @property
    def errors(self) -> list[str]:
        """One message per trace that could not be read to its end."""
        return [f["error"] for f in self.files if f["error"]]


def _strings(offsets: np.ndarray, data: np.ndarray) -> pa.Array:
    n = len(offsets) - 1
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))


def _lists(offsets: np.ndarray, values: np.ndarray) -> pa.Array:
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(values))


def _dictionary(codes: np.ndarray, names: Sequence[str]) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int8()), pa.array(list(names)))


def _class_lists(offsets: np.ndarray, codes: np.ndarray, names: Sequence[str]) -> pa.Array:
    values = pa.DictionaryArray.from_arrays(pa.array(codes, pa.int8()), pa.array(list(names)))
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values)


_NUMERIC = (
    "conn_id", "client_port", "server_port", "syn_seen", "client_isn", "first_ts_s",
    "duration_s", "syn_count", "synack_count", "established", "handshake_rtt_s",
    "synack_delay_s", "ack_delay_s", "packets_c2s", "packets_s2c", "bytes_c2s", "bytes_s2c",
)


def _table(raw: dict[str, Any], paths: Sequence[str]) -> pa.Table:
    c = raw["columns"]
    d = raw["dictionaries"]
    trace_names = pa.array([str(p) for p in paths])
    cols: dict[str, pa.Array] = {
        "trace": pa.DictionaryArray.from_arrays(pa.array(c["trace"], pa.int32()), trace_names),
        "conn_id": pa.array(c["conn_id"]),
        "client_ip": _strings(*c["client_ip"]),
        "client_port": pa.array(c["client_port"]),
        "server_ip": _strings(*c["server_ip"]),
    }
    for name in _NUMERIC[2:]:
        arr = c[name]
        # Absent times are NaN in the core; in the table they are nulls.
        cols[name] = pa.array(arr, from_pandas=True) if arr.dtype.kind == "f" else pa.array(arr)
    cols["vantage"] = _dictionary(c["vantage"], d["vantage"])
    cols["syn_gaps_s"] = _lists(*c["syn_gaps_s"])
    syn_offsets, syn_codes = c["syn_gap_class"]
    cols["syn_gap_class"] = _class_lists(syn_offsets, syn_codes, d["gap_class"])
    cols["synack_gaps_s"] = _lists(*c["synack_gaps_s"])
    synack_offsets, synack_codes = c["synack_gap_class"]
    cols["synack_gap_class"] = _class_lists(synack_offsets, synack_codes, d["gap_class"])
    cols["end"] = _dictionary(c["end"], d["end"])
    order = ["trace", "conn_id", "client_ip", "client_port", "server_ip", "server_port"]
    order += [k for k in cols if k not in order]
    return pa.table({k: cols[k] for k in order})


def _finite_or_none(x: float) -> float | None:
    return None if (math.isinf(x) or math.isnan(x)) else x


def table1(raw_summary: dict[str, Any]) -> dict[str, Any]:
    """Document 000's Table 1 (SYN rows) with the keys of `SUMMARY_KEYS`."""
    syn = raw_summary["syn"]
    return {
        "connection_tries": raw_summary["connection_tries"],
        "successful": raw_summary["successful"],
        "unsuccessful": raw_summary["unsuccessful"],
        "multiple_syns": syn["multiple"],
        "multiple_syns_successful": syn["multiple_successful"],
        "multiple_syns_unsuccessful": syn["multiple_unsuccessful"],
        "multiple_syns_outside_standard": syn["multiple_outside_standard"],
        "syns_per_successful": _finite_or_none(syn["per_successful"]),
        "duplicate_syn_every": _finite_or_none(syn["repeat_every"]),
        "syn_retransmissions": syn["retransmissions"],
        "synack_retransmissions": raw_summary["synack"]["retransmissions"],
        "packets": raw_summary["packets"],
        "connections": raw_summary["connections"],
    }


def synack_table(raw_summary: dict[str, Any]) -> dict[str, Any]:
    """Table 1's rows for SYN/ACKs, over connections in which a SYN/ACK was seen."""
    s = raw_summary["synack"]
    return {
        "connections_with_synack": s["with_packet"],
        "successful": s["successful"],
        "unsuccessful": s["with_packet"] - s["successful"],
        "multiple_synacks": s["multiple"],
        "multiple_synacks_successful": s["multiple_successful"],
        "multiple_synacks_unsuccessful": s["multiple_unsuccessful"],
        "multiple_synacks_outside_standard": s["multiple_outside_standard"],
        "synacks_per_successful": _finite_or_none(s["per_successful"]),
        "duplicate_synack_every": _finite_or_none(s["repeat_every"]),
        "synack_retransmissions": s["retransmissions"],
    }


def analyze(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    idle_timeout_s: float | None = None,
    close_linger_s: float | None = None,
    workers: int = 1,
    table: bool = True,
    progress: ProgressFn | None = None,
) -> Analysis:
    """Analyze pcap/pcapng traces (plain or gzip) and return their connections.

    ``idle_timeout_s`` and ``close_linger_s`` default to the core's
    (`shortflow._core.DEFAULT_IDLE_TIMEOUT_S`, `DEFAULT_CLOSE_LINGER_S`).

    With ``table=False`` only the summary is computed (``Analysis.table`` is then empty):
    faster and lighter when Table 1 is all that is wanted.

    A trace that is truncated or corrupt does not raise: what was read before the bad
    byte is analyzed, and ``Analysis.errors`` names the file and the byte offset.

    Examples
    --------
    >>> import shortflow, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "t.pcap")
    >>> truth = shortflow.generate(path, connections=50, syn_loss=0.0)
    >>> table, summary = shortflow.analyze(path)
    >>> summary["connection_tries"], table.num_rows
    (50, 50)
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    names = [os.fspath(p) for p in paths]
    raw = _core.analyze(
        [Path(p) for p in names],
        idle_timeout_s=idle_timeout_s,
        close_linger_s=close_linger_s,
        workers=workers,
        table=table,
        progress=progress,
    )
    s = raw["summary"]
    return Analysis(
        table=_table(raw, names),
        summary=table1(s),
        synack=synack_table(s),
        vantage=s["vantage"],
        vantage_counts={k: s[f"vantage_{k}"] for k in ("client", "server", "unknown")},
        files=raw["files"],
        interrupted=raw["interrupted"],
        raw_summary=s,
    )


def generate(path: str | os.PathLike[str], **options: Any) -> dict[str, int]:
    """Write a synthetic trace of interleaved short flows; returns its ground truth.

    Options are those of ``shortflow generate`` (see ``shortflow generate --help``).
    """
    return dict(_core.generate(Path(path), **options))
