"""The trace analyzer's Python API: `analyze()` returns the per-connection table as a
`pyarrow.Table` and document 000's Table 1 as a summary.

The work happens in the Rust core (`shortflow._core.analyze`); this module only wraps its
column buffers as Arrow arrays and names things.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shortflow import _core

if TYPE_CHECKING:
    import pyarrow as pa

#: The summary document's sections as the core declares them: each one's fields as (key,
#: unit, meaning), in order (``summary``: what `--summary-json` writes; ``file``: each of
#: its ``files``; ``table1``, ``synack``, ``rtt_ratio``, ``vantage_counts``).
DOCUMENT_FIELDS: dict[str, list[tuple[str, str, str]]] = _core.document_fields()

#: Document 000's Table 1 (SYN rows), in the paper's order: ``Analysis.summary``'s keys.
TABLE1_KEYS: tuple[str, ...] = tuple(name for name, _, _ in DOCUMENT_FIELDS["table1"])

#: The keys of `--summary-json`, in order.
SUMMARY_KEYS: tuple[str, ...] = tuple(name for name, _, _ in DOCUMENT_FIELDS["summary"])

#: The keys of each trace's section of `--summary-json` (``files``), in order.
FILE_KEYS: tuple[str, ...] = tuple(name for name, _, _ in DOCUMENT_FIELDS["file"])

#: Time-account causes, as the table's ``time_<cause>_s`` columns name them (the core's).
CAUSES: tuple[str, ...] = tuple(_core.CAUSES)
#: The causes users wait through, from the first SYN to the last data byte; idle and
#: teardown are reported apart.
WAITED_CAUSES: tuple[str, ...] = tuple(_core.WAITED_CAUSES)

#: Each cause in words, as the command line and the report name it.
CAUSE_WORDS: dict[str, str] = dict(_core.CAUSE_WORDS)

#: Columns whose p50/p90/p99 the summary gives.
PERCENTILE_COLUMNS: tuple[str, ...] = tuple(_core.PERCENTILE_COLUMNS)

#: ``progress(bytes_done, bytes_total, packets_done)``, called every 100 ms while reading.
ProgressFn = Callable[[int, int, int], None]


@dataclass
class Analysis:
    """What `analyze()` found.

    ``table`` has one row per connection, ``exchanges`` one per request and response of
    each (the a-b-t connection vectors); ``summary`` is Table 1 with the keys of
    `TABLE1_KEYS`; ``synack`` is the same table for SYN/ACKs; ``files`` has one dict per
    trace (packets, skipped packets, ``error`` with the file and byte offset, or None).
    Unpacks as ``table, summary = shortflow.analyze(paths)``.
    """

    summary: dict[str, Any]
    synack: dict[str, Any]
    vantage: str
    vantage_counts: dict[str, int]
    files: list[dict[str, Any]]
    interrupted: bool = False
    #: What the capture point was inferred from (handshake timing, hop counts), or why
    #: it is undecided, in words.
    vantage_basis: str = ""
    #: The core's summary of all the traces: the keys of `SUMMARY_KEYS` but those made
    #: from the tables (``percentiles``, ``version``, ``files``).
    raw_summary: dict[str, Any] = field(default_factory=dict, repr=False)
    #: The table, or None until `table` makes it: an analysis made with ``table=False``
    #: builds its empty table only if asked (pyarrow and numpy are ~0.12 s of importing,
    #: most of a command that prints a small trace's summary).
    built_table: pa.Table | None = field(default=None, repr=False)
    make_table: Callable[[], pa.Table] | None = field(default=None, repr=False, compare=False)
    #: The exchanges table, or None until `exchanges` makes it.
    built_exchanges: pa.Table | None = field(default=None, repr=False)
    make_exchanges: Callable[[], pa.Table] | None = field(default=None, repr=False, compare=False)
    #: With ``table=False, worst=N``: the rows of the N connections of each trace that lost
    #: the most time to causes other than the path, in table order (None otherwise).
    worst_rows: pa.Table | None = field(default=None, repr=False)

    @property
    def table(self) -> pa.Table:
        """One row per connection (none, with every column, after ``table=False``)."""
        if self.built_table is None:
            assert self.make_table is not None, "an Analysis has its table or a way to make it"
            self.built_table = self.make_table()
        return self.built_table

    @property
    def exchanges(self) -> pa.Table:
        """One row per exchange (request and response) of the table's connections, joined to
        it by ``trace`` and ``conn_id`` (none, with every column, after ``table=False``)."""
        if self.built_exchanges is None:
            assert self.make_exchanges is not None, "an Analysis has its exchanges or a way to make them"
            self.built_exchanges = self.make_exchanges()
        return self.built_exchanges

    @property
    def rows(self) -> int:
        """The table's rows, without making an empty table to count them."""
        return 0 if self.built_table is None else int(self.built_table.num_rows)

    def __iter__(self) -> Iterator[Any]:
        return iter((self.table, self.summary))

    @property
    def errors(self) -> list[str]:
        """One message per trace that could not be read to its end."""
        return [f["error"] for f in self.files if f["error"]]


def schema_rows() -> list[tuple[str, str, str, str]]:
    """The connection table's columns as the Rust core defines them: (name, Arrow type,
    unit, meaning)."""
    return [tuple(r) for r in _core.table_schema()]  # type: ignore[misc]


def exchange_schema_rows() -> list[tuple[str, str, str, str]]:
    """The exchanges table's columns as the Rust core defines them: (name, Arrow type,
    unit, meaning)."""
    return [tuple(r) for r in _core.exchange_schema()]  # type: ignore[misc]


def table1(summary: dict[str, Any]) -> dict[str, Any]:
    """Document 000's Table 1 (SYN rows) with the keys of `TABLE1_KEYS`, from one of the
    core's summaries."""
    return {k: summary[k] for k in TABLE1_KEYS}


def share_not_the_paths(section: dict[str, Any]) -> float | None:
    """Of the connection-seconds users waited in a summary (or a file section), the share
    some cause other than the path itself took (None without any)."""
    if not section["waited_s"] > 0:
        return None
    return 1 - float(section["time_waited_share"].get("network") or 0)


def summary_document(a: Analysis) -> dict[str, Any]:
    """Everything `--summary-json` writes, in `SUMMARY_KEYS` order: the core's summary with
    what is made here from the tables (``percentiles``), the version, and ``files``: one
    section per trace with its own Table 1, diagnosis and percentiles (`FILE_KEYS`)."""
    from shortflow import __version__

    percentiles = _percentiles_of(a, a.files)
    files = []
    for f in a.files:
        section: dict[str, Any] = dict(f["summary"])
        section["path"] = str(f["path"])  # as the user named it
        if len(a.files) == 1:
            section["percentiles"] = percentiles
        elif "percentile_values" in f:
            section["percentiles"] = _percentiles_of(a, [f])
        elif a.rows:
            import pyarrow as pa
            import pyarrow.compute as pc

            # Only the columns the percentiles need: filtering the whole table would copy it.
            cols = [c for c in PERCENTILE_COLUMNS if c in a.table.column_names]
            mine = a.table.select(["trace", *cols])
            mine = mine.filter(pc.equal(mine.column("trace").cast(pa.string()), str(f["path"])))
            section["percentiles"] = _percentiles(mine)
        files.append({k: section[k] for k in FILE_KEYS if k in section})
    made = {"percentiles": percentiles, "version": __version__, "files": files}
    return {k: made[k] if k in made else a.raw_summary[k] for k in SUMMARY_KEYS}


def _percentiles_of(a: Analysis, files: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """The summary's percentiles over the connections of `files`: from the table, or from
    the values a digest kept (`analyze(..., worst=N)`)."""
    if a.rows:
        return _percentiles(a.table)
    kept = [f["percentile_values"] for f in files if "percentile_values" in f]
    if not kept or not any(len(v[PERCENTILE_COLUMNS[0]]) for v in kept):
        return {}
    import numpy as np

    from shortflow.arrow_table import percentile_summary

    return {name: percentile_summary(np.concatenate([v[name] for v in kept])) for name in PERCENTILE_COLUMNS}


def _percentiles(table: pa.Table) -> dict[str, dict[str, float | None]]:
    from shortflow.arrow_table import percentiles  # numpy and pyarrow: only with a table

    return percentiles(table, PERCENTILE_COLUMNS)


def analyze(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    idle_timeout_s: float | None = None,
    close_linger_s: float | None = None,
    workers: int = 1,
    table: bool = True,
    worst: int | None = None,
    progress: ProgressFn | None = None,
    scheduler: str | None = None,
    filter: str | None = None,
) -> Analysis:
    """Analyze pcap/pcapng traces (plain or gzip) and return their connections.

    ``idle_timeout_s`` and ``close_linger_s`` default to the core's
    (`shortflow._core.DEFAULT_IDLE_TIMEOUT_S`, `DEFAULT_CLOSE_LINGER_S`).

    With ``table=False`` only the summary is computed: faster and lighter when Table 1
    is all that is wanted; ``Analysis.table`` is then an empty table with every column,
    made only if asked for, so numpy and pyarrow are not imported until then. With
    ``table=False`` and ``worst=N`` the core keeps a digest instead of the table, in
    ~40 bytes a connection: ``Analysis.worst_rows`` holds the rows of each trace's N
    connections that lost the most time, and `summary_document` its percentiles, as the
    whole table would give them (on a cluster, the whole table is made).

    With ``scheduler`` (a Dask scheduler's address) each trace is one task on that
    cluster, analysed with ``workers`` threads, and the results are merged into the same
    table and summary a local run gives; the workers must see the traces at the same paths
    (absolute paths are sent).

    With ``filter`` (a libpcap expression, ``"tcp port 443"``) only the packets it selects
    are analyzed, as ``tcpdump -r TRACE -w - EXPR`` would select them; libpcap compiles it
    for each link type the traces hold. It sees the frames as captured: in a tunnelled
    packet, ``host`` and ``port`` match the outer headers. An expression libpcap refuses,
    or libpcap missing, raises `FilterError`.

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
    options: dict[str, Any] = {"idle_timeout_s": idle_timeout_s, "close_linger_s": close_linger_s,
                               "workers": workers, "table": table, "filter": filter}
    if filter is not None:
        _core.check_filter(filter)  # a bad expression is refused before the cluster or the files
    if scheduler is not None:
        if worst is not None:
            options["table"] = True  # each worker's table comes back whole: no digest to merge
        return _analyze_on_cluster(names, options, scheduler, progress)
    if not table and worst is not None:
        loading = import_in_background("shortflow.arrow_table")
        raw = _core.analyze([Path(p) for p in names], progress=progress, worst=worst, **options)
        loading.join()
        digest = _analysis(lambda: _arrow_table(raw, names), raw["summary"], raw["files"], raw["interrupted"],
                           lambda: _exchanges_table(raw, names))
        digest.worst_rows = _arrow_table({**raw, "columns": raw["worst_columns"]}, names)
        return digest
    if not table:
        # Nothing made of numpy or pyarrow is needed: the (empty) table waits until asked.
        raw = _core.analyze([Path(p) for p in names], progress=progress, **options)
        return _analysis(lambda: _arrow_table(raw, names), raw["summary"], raw["files"], raw["interrupted"],
                         lambda: _exchanges_table(raw, names))
    # numpy and pyarrow load (~0.13 s) while the core reads, which runs without the GIL.
    loading = import_in_background("shortflow.arrow_table")
    raw = _core.analyze([Path(p) for p in names], progress=progress, **options)
    loading.join()
    return _analysis(_arrow_table(raw, names), raw["summary"], raw["files"], raw["interrupted"],
                     lambda: _exchanges_table(raw, names))


def _arrow_table(raw: dict[str, Any], names: list[str]) -> pa.Table:
    from shortflow.arrow_table import table as arrow_table

    return arrow_table(raw, names)


def _exchanges_table(raw: dict[str, Any], names: list[str]) -> pa.Table:
    from shortflow.arrow_table import exchanges

    return exchanges(raw, names)


_BACKGROUND_IMPORTS = threading.Lock()


def import_in_background(*modules: str) -> threading.Thread:
    """Starts importing `modules` on a thread and returns it: the caller does GIL-free
    work meanwhile (the Rust core), joins, then imports them itself — at no cost if the
    thread got there, with the import's own error if it failed (the thread keeps quiet)."""

    def load() -> None:
        # One background import at a time: two threads importing modules that import each
        # other can meet in importlib's deadlock check.
        with _BACKGROUND_IMPORTS:
            for name in modules:
                try:
                    importlib.import_module(name)
                except Exception:  # the caller's own import reports it
                    return

    t = threading.Thread(target=load, name="shortflow-imports", daemon=True)
    t.start()
    return t


def _analysis(table: pa.Table | Callable[[], pa.Table], s: dict[str, Any], files: list[dict[str, Any]],
              interrupted: bool, exchanges: pa.Table | Callable[[], pa.Table]) -> Analysis:
    """`table` and `exchanges` are the tables, or what makes each when first asked for."""
    built, make = (None, table) if callable(table) else (table, None)
    built_x, make_x = (None, exchanges) if callable(exchanges) else (exchanges, None)
    return Analysis(
        built_table=built,
        make_table=make,
        built_exchanges=built_x,
        make_exchanges=make_x,
        summary=table1(s),
        synack=s["synack"],
        vantage=s["vantage"],
        vantage_counts=s["vantage_counts"],
        vantage_basis=s["vantage_basis"],
        files=files,
        interrupted=interrupted,
        raw_summary=s,
    )


def _analyze_one(path: str, options: dict[str, Any]) -> tuple[pa.Table, pa.Table, list[dict[str, Any]]]:
    """One trace on a Dask worker: its tables (trace column as if it were the only file) and
    its file record (with the core's summary state, merged by the client)."""
    from shortflow.arrow_table import exchanges
    from shortflow.arrow_table import table as arrow_table

    raw = _core.analyze([Path(path)], **options)
    return arrow_table(raw, [path]), exchanges(raw, [path]), raw["files"]


def _analyze_on_cluster(names: list[str], options: dict[str, Any], scheduler: str,
                        progress: ProgressFn | None) -> Analysis:
    """One task per trace on the cluster at `scheduler`; the tables are concatenated in the
    traces' order and the summaries added up by the core (`_core.merge_summaries`)."""
    if "-" in names:
        raise ValueError("standard input ('-') cannot be sent to a Dask cluster: give a file")
    import numpy as np
    import pyarrow as pa
    from distributed import as_completed

    from shortflow.arrow_table import buffer_array, string_array
    from shortflow.cluster import dask_client

    sizes = [os.path.getsize(p) if os.path.isfile(p) else 0 for p in names]
    total = sum(sizes)
    parts: list[tuple[pa.Table, pa.Table, list[dict[str, Any]]] | None] = [None] * len(names)
    with dask_client(scheduler, None) as client:
        futures: dict[Any, int] = {}
        try:
            futures = {client.submit(_analyze_one, os.path.abspath(p), options, pure=False): i
                       for i, p in enumerate(names)}
            done_bytes = done_packets = 0
            for fut in as_completed(futures):
                i = futures[fut]
                part = fut.result()
                parts[i] = part
                done_bytes += sizes[i]
                done_packets += sum(f["packets"] for f in part[2])
                if progress is not None:
                    progress(done_bytes, total, done_packets)
        finally:
            # On Ctrl-C or an error the tasks still queued are taken back from the cluster.
            client.cancel([f for f in futures if not f.done()])
    trace_names = string_array(names)
    tables, exchange_tables, files = [], [], []

    def retrace(t: pa.Table, i: int) -> pa.Table:
        # The row's trace is its index among all the traces, as in a local run.
        col = t.schema.get_field_index("trace")
        codes = buffer_array(np.full(t.num_rows, i, np.int32), pa.int32())
        return t.set_column(col, t.schema.field(col), pa.DictionaryArray.from_arrays(codes, trace_names))

    for i, part in enumerate(parts):
        assert part is not None, "every task's result was gathered"
        t, x, fs = part
        tables.append(retrace(t, i))
        exchange_tables.append(retrace(x, i))
        for f in fs:
            f["path"] = names[i]  # as the user named it (the worker was sent the absolute path)
            files.append(f)
    s = _core.merge_summaries([f["summary_state"] for f in files])
    return _analysis(pa.concat_tables(tables), s, files, False, pa.concat_tables(exchange_tables))


def generate(path: str | os.PathLike[str], **options: Any) -> dict[str, int]:
    """Write a synthetic trace of interleaved short flows, run through the simulator;
    returns its ground truth (counted by the simulator at its capture point).

    Options are those of ``shortflow generate`` (see ``shortflow generate --help``).
    """
    from shortflow._interrupt import interruptible

    return dict(interruptible(lambda: _core.generate(Path(path), **options)))


def _fmt(x: Any) -> str:
    """A Table 1 cell: thousands separated, ratios to three decimals, absent as a dash."""
    if x is None:
        return "–"
    if isinstance(x, str):
        return x
    if isinstance(x, float):
        return f"{x:,.3f}" if x < 100 else f"{x:,.0f}"
    return f"{x:,}"


def table1_rows(a: Analysis) -> list[tuple[str, str, str]]:
    """Document 000's Table 1 as (row, SYN, SYN/ACK) strings."""
    s, k = a.summary, a.synack
    rows = [
        ("connection tries total", s["connection_tries"], k["connections_with_synack"]),
        ("  successful", s["successful"], k["successful"]),
        ("  not successful", s["unsuccessful"], k["unsuccessful"]),
        ("multiple SYNs (SYN/ACKs)", s["multiple_syns"], k["multiple_synacks"]),
        ("  for successful conn.", s["multiple_syns_successful"], k["multiple_synacks_successful"]),
        ("  for unsuccessful conn.", s["multiple_syns_unsuccessful"], k["multiple_synacks_unsuccessful"]),
        ("  outside standard interval", s["multiple_syns_outside_standard"], k["multiple_synacks_outside_standard"]),
        ("packets per successful conn.", s["syns_per_successful"], k["synacks_per_successful"]),
        ("duplicate every X connections", s["duplicate_syn_every"], k["duplicate_synack_every"]),
        ("retransmissions", s["syn_retransmissions"], k["synack_retransmissions"]),
        ("open at the end of the capture", a.raw_summary.get("open_tries", 0), None),
    ]
    return [(name, _fmt(x), _fmt(y)) for name, x, y in rows]
