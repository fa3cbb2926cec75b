"""`shortflow analyze`: where each connection lost its time, the per-connection table and
document 000's Table 1 for traces."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from shortflow import _core
from shortflow.cli import common
from shortflow.cli.answer import VANTAGE_WORDS
from shortflow.cli.common import (
    FAILURE,
    USAGE,
    check_output_dir,
    check_output_file,
    clip,
    duration_option,
    emit_table,
    error,
    examples,
    fail,
    is_stdout,
    progress,
    say,
    warn,
    write_json,
)
from shortflow.output import FORMATS

if TYPE_CHECKING:
    from shortflow.analyze import Analysis
    from shortflow.worst import Connection


def print_table1(a: Analysis) -> None:
    from shortflow.analyze import table1_rows

    emit_table("Document 000, Table 1: connection tries and duplicate SYNs", ["row", "SYN", "SYN/ACK"],
               [list(r) for r in table1_rows(a)], right=[False, True, True])
    where = {
        "client": "near the client, every SYN the client sent is seen; a duplicate SYN/ACK only if it arrived",
        "server": "near the server, every SYN/ACK the server sent is seen; a duplicate SYN only if it arrived",
        "unknown": "from an undecided capture point, what was seen of either side",
    }[a.vantage]
    say(f"Table 1 counts {where}")


def print_diagnosis(doc: dict[str, Any]) -> None:
    """The data phase in a few lines: repairs, stalls, refused tries, document 001's predictor."""
    say(f"data retransmissions: {doc['timeout_retransmissions']:,} after a timeout ({doc['rto_events']:,} expiries), "
        f"{doc['fast_retransmissions']:,} fast, {doc['tlp_probes']:,} tail loss probes, "
        + (f"{pmtu:,} resent smaller for the path's MTU, " if (pmtu := doc["path_mtu_retransmissions"]) else "")
        + (f"{early:,} resent before anything could ask (no loss repair), "
           if (early := doc["unprompted_retransmissions"]) else "")
        + f"{doc['spurious_retransmissions']:,} spurious, {doc['out_of_order_segments']:,} segments out of order "
        f"(not retransmissions) · delayed-ACK stalls {doc['delayed_ack_stalls']:,} · "
        f"zero-window stalls {doc['zero_window_stalls']:,} · capture duplicates {doc['capture_duplicates']:,} · "
        f"SYN retries after RST {doc['syn_retries_after_rst']:,}")
    say(f"tries refused: {doc['refused_rst']:,} by RST, {doc['refused_icmp']:,} by ICMP · "
        f"late packets after the close linger {doc['late_packets']:,} · "
        f"connections seen in one direction only {doc['one_directional']:,}")
    r = doc["rtt_ratio"]
    if r["connections"]:
        say(f"document 001's predictor: mean data RTT within 10 % of the handshake RTT for "
            f"{r['within_10pct_share']:.0%} of {r['connections']:,} connections, largest ≤ 3× for "
            f"{r['max_within_3x_share']:.0%}")


def print_files(doc: dict[str, Any]) -> None:
    """With several traces, a line per trace after the total's account: its `--summary-json`
    section's main counts, which file lost what and where it was captured."""
    from shortflow.analyze import share_not_the_paths
    from shortflow.units import format_seconds

    files = doc["files"]
    if len(files) < 2:
        return
    say(f"each of the {len(files)} files (the total above):")
    for f in files:
        total, share = f["waited_s"], share_not_the_paths(f)
        lost = "" if share is None else f"{share:.0%} of the {format_seconds(total)} its users waited not the path's · "
        tries = f"{f['connection_tries']:,} connection {'try' if f['connection_tries'] == 1 else 'tries'}"
        say(f"  {f['path']}: {f['packets']:,} packets · {tries}, "
            f"{f['successful']:,} successful, {f['unsuccessful']:,} not · SYN retransmissions {f['syn_retransmissions']:,} · "
            f"data retransmissions {f['timeout_retransmissions']:,} after a timeout, {f['fast_retransmissions']:,} fast, "
            f"{f['tlp_probes']:,} tail loss probes · delayed-ACK stalls {f['delayed_ack_stalls']:,} · {lost}"
            f"capture point: {VANTAGE_WORDS[f['vantage']]}")


def print_answer(result: Analysis, doc: dict[str, Any], *, worst: list[Connection], asked: int, table1: bool,
                 filter_expr: str | None, tracking: list[str]) -> None:
    """The answer first: what was read, the time account, the `asked` worst connections
    (`worst`, ranked); then each file, the data phase's counts, and Table 1 when asked for
    or when handshake losses lead."""
    from shortflow.cli.answer import main_lost_cause, print_headline, print_time_account, print_worst

    print_headline(doc, filter_expr=filter_expr, packets_read=sum(f["packets"] for f in result.files))
    print_time_account(doc)
    print_worst(worst, asked=asked, filter_expr=filter_expr, tracking=tracking)
    print_files(doc)
    print_diagnosis(doc)
    if table1 or main_lost_cause(doc) == "handshake":
        print_table1(result)
    elif doc["multiple_syns"] or doc["unsuccessful"]:
        say(f"document 000's Table 1 (--table1): {doc['multiple_syns']:,} connections with repeated SYNs, "
            f"{doc['unsuccessful']:,} tries without a completed handshake")


def _tracking(timeouts: dict[str, float]) -> list[str]:
    """The analysis' timeouts given other than their defaults, as `graph`'s options: they
    decide where a connection ends, and so the ids its command names."""
    out = []
    for flag, key, default in (("--idle-timeout", "idle_timeout_s", _core.DEFAULT_IDLE_TIMEOUT_S),
                               ("--close-linger", "close_linger_s", _core.DEFAULT_CLOSE_LINGER_S)):
        if timeouts[key] != default:
            out += [flag, f"{timeouts[key]:g}s"]
    return out


def print_columns() -> None:
    from shortflow.analyze import DOCUMENT_FIELDS, exchange_schema_rows, schema_rows

    emit_table("Connection table columns (Arrow types, defined in crates/trace/src/diag/table.rs)",
               ["column", "Arrow type", "unit", "meaning"], [list(r) for r in schema_rows()])
    emit_table("Exchanges table columns (defined in crates/trace/src/diag/exchanges.rs)",
               ["column", "Arrow type", "unit", "meaning"], [list(r) for r in exchange_schema_rows()])
    emit_table("--summary-json keys, in order (defined in crates/trace/src/diag/document.rs; each of `files` has "
               "its trace's Table 1, diagnosis, vantage and percentiles)",
               ["key", "unit", "meaning"], [list(r) for r in DOCUMENT_FIELDS["summary"]])


def reading_progress(step: common.Step) -> Callable[[int, int, int], None]:
    """The core's progress callback (bytes read, bytes in all, packets), shown as the bar's
    bytes and a text of the packets read so far and their rate since the reading began."""
    start = time.monotonic()

    def report(done: int, total: int, packets: int) -> None:
        elapsed = time.monotonic() - start
        rate = f", {packets / elapsed / 1e6:.1f} M packets/s" if elapsed > 0 and packets else ""
        step(done, total or None, f"{packets:,} packets{rate}")

    return report


def _check_traces(traces: list[Path]) -> None:
    if sum(1 for p in traces if is_stdout(p)) > 1:
        fail("'-' (standard input) can be given once", USAGE)
    for p in traces:
        if is_stdout(p):
            continue
        if p.is_dir():
            fail(f"{clip(p)}: is a directory, not a trace", USAGE)
        if not p.exists():
            fail(f"{clip(p)}: no such file", USAGE)


def _metadata(result: Analysis, traces: list[Path]) -> dict[str, str]:
    """Parquet key-value metadata: who wrote the table, from what, seen from where."""
    from shortflow import __version__

    return {
        "shortflow_version": __version__,
        "command": " ".join(["shortflow", *sys.argv[1:]]),
        "vantage": result.vantage,
        "files": json.dumps([str(p) for p in traces]),
    }


def write_exchanges(result: Analysis, out_dir: Path, fmt: str, metadata: dict[str, str]) -> str:
    """The exchanges table beside the connections table in `out_dir`; says what was written."""
    from shortflow.output import write_table

    x = result.exchanges
    return f"exchanges: {write_table(x, out_dir, fmt, metadata=metadata, name='exchanges')} ({x.num_rows:,} exchanges)"


def check_abt(path: Path | None) -> None:
    if path is not None and not is_stdout(path):
        check_output_file(path, "--abt")


def write_abt(result: Analysis, path: Path) -> str:
    """The connection vectors in tmix's text (`shortflow.abt`); says what was written."""
    from shortflow.abt import write_abt as write

    n = write(result, path)
    return f"connection vectors: {path} ({n:,} connections, tmix's ns-2 format)"


def register(app: typer.Typer) -> None:
    @app.command("analyze", epilog=examples(
        "shortflow analyze capture.pcap",
        "shortflow analyze capture.pcap --filter 'tcp port 443' -l",
        "shortflow analyze a.pcap b.pcapng.gz --out results --summary-json summary.json",
        "shortflow analyze capture.pcap --out - --format jsonl | head",
        "tcpdump -w - -i eth0 port 80 | shortflow analyze -"))
    def analyze_cmd(
        traces: Annotated[Optional[list[Path]], typer.Argument(help="pcap or pcapng files, plain or gzip; - reads standard input")] = None,
        out_dir: Annotated[Optional[Path], typer.Option("--out", metavar="DIR", help="write the per-connection table (connections.FORMAT) and the per-exchange table (exchanges.FORMAT: each request and response) into this directory (created if missing); - writes the connections table to standard output (--format csv or jsonl)")] = None,
        abt: Annotated[Optional[Path], typer.Option("--abt", metavar="FILE", help="write each connection's requests, responses and quiet times as tmix connection vectors (ns-2's text format: SEQ/CONC, w, r, l, >, <, t lines), for `simulate` (workload kind = \"abt\"), the testbed or ns-2/ns-3's tmix; - for standard output")] = None,
        fmt: Annotated[str, typer.Option("--format", help="table format: parquet, csv or jsonl")] = "parquet",
        summary_json: Annotated[Optional[Path], typer.Option("--summary-json", help="write Table 1 and the diagnosis as JSON to this file (- for standard output)")] = None,
        plot: Annotated[Optional[Path], typer.Option("--plot", help="draw the histogram of duplicate-SYN gaps (PNG)")] = None,
        workers: Annotated[Optional[int], typer.Option("--workers", min=1, max=1024, help="cores: files read in parallel; with fewer files than cores, the rest track each file's connections in parallel (two threads a core) [default: all]")] = None,
        idle_timeout: Annotated[str, typer.Option("--idle-timeout", help="end a connection after this long without packets")] = f"{_core.DEFAULT_IDLE_TIMEOUT_S:g}s",
        close_linger: Annotated[str, typer.Option("--close-linger", help="after both FINs or a RST, late packets still count this long (longer while an unacknowledged FIN is resent: twice its last back-off more)")] = f"{_core.DEFAULT_CLOSE_LINGER_S:g}s",
        scheduler: Annotated[Optional[str], typer.Option("--scheduler", help="address of a running Dask scheduler: one task per trace on its workers (which must see the traces at the same paths), results merged into one table; --workers is then the cores per trace [default: 1]")] = None,
        report: Annotated[Optional[Path], typer.Option("--report", help="write a self-contained HTML report (report.html) into this directory")] = None,
        columns: Annotated[bool, typer.Option("--columns", help="print the tables' columns (name, Arrow type, unit, meaning) and the --summary-json keys, and exit")] = False,
        listing: Annotated[bool, typer.Option("--list", "-l", help="list the connections, one a line, as tcptrace -l does (in a pipe: a tab-separated table; with --format csv or jsonl: that) instead of the time account")] = False,
        filter_expr: Annotated[Optional[str], typer.Option("--filter", metavar="EXPR", help="analyze only the packets this libpcap filter expression selects (tcpdump's syntax: 'tcp port 443', 'host 10.0.0.1'); it matches the outer headers of tunnelled packets (GRE, VXLAN, GTP-U); needs libpcap")] = None,
        worst: Annotated[int, typer.Option("--worst", metavar="N", min=0, max=1000, help="show the N connections that lost the most time to something other than the path (0: none)")] = 5,
        table1: Annotated[bool, typer.Option("--table1", help="print document 000's Table 1 (connection tries and duplicate SYNs) even when handshake losses do not lead")] = False,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="print nothing but errors and warnings")] = False,
    ) -> None:
        """Say where the connections lost their time, and which lost the most.

        The time account (handshake, slow start, loss repair, delayed ACKs, windows,
        application), the worst connections with the command that graphs each, and
        document 000's Table 1 when handshake losses lead (or --table1)."""
        quiet = quiet or common.is_quiet()  # -q before the sub-command means the same
        if quiet:
            common.quiet()
        if columns:
            print_columns()
            return
        if not traces:
            fail("no trace given (or --columns)", USAGE)
        if fmt not in FORMATS:
            fail(f"--format {clip(fmt)!r}: choose one of {', '.join(FORMATS)}", USAGE)
        if filter_expr is not None:
            from shortflow.exceptions import FilterError

            try:
                _core.check_filter(filter_expr)
            except FilterError as e:
                fail(f"--filter {clip(filter_expr)!r}: {e}", USAGE)
        _check_traces(traces)
        if scheduler is not None and any(is_stdout(p) for p in traces):
            fail("--scheduler: standard input ('-') cannot be sent to the cluster's workers; give files", USAGE)
        timeouts = {
            "idle_timeout_s": duration_option(idle_timeout, "--idle-timeout", zero_ok=False),
            "close_linger_s": duration_option(close_linger, "--close-linger"),
        }
        table_to_stdout = is_stdout(out_dir)
        if table_to_stdout:
            if fmt == "parquet":
                fail("--out -: Parquet is not written to standard output; add --format csv or --format jsonl", USAGE)
            if is_stdout(summary_json):
                fail("--out - and --summary-json -: one of them can have standard output", USAGE)
            if listing:
                fail("--out - and --list: one of them can have standard output", USAGE)
        elif out_dir is not None:
            check_output_dir(out_dir, "--out")
        if listing and is_stdout(summary_json):
            fail("--list and --summary-json -: one of them can have standard output", USAGE)
        if report is not None:
            check_output_dir(report, "--report")
        check_abt(abt)
        if is_stdout(abt) and (table_to_stdout or is_stdout(summary_json) or listing):
            fail("--abt -: standard output is already given to another output", USAGE)
        if summary_json is not None:
            check_output_file(summary_json, "--summary-json")
        if plot is not None:
            if is_stdout(plot):
                fail("--plot -: a PNG is not written to standard output; give a file name", USAGE)
            check_output_file(plot, "--plot")
        # JSON, the table or the listing on standard output is the whole output: the text
        # stays away from it.
        show = not quiet and not is_stdout(summary_json) and not table_to_stdout and not listing and not is_stdout(abt)
        # The per-connection table is built only when something uses it (the written tables,
        # the listing, the plot, the report and the connection vectors do); the summary's
        # percentiles and the worst connections take a digest of it, ~40 bytes a connection.
        need_table = out_dir is not None or plot is not None or report is not None or listing or abt is not None
        digest = not need_table and (summary_json is not None or worst > 0)
        from concurrent.futures import ThreadPoolExecutor

        from shortflow.analyze import analyze, import_in_background, summary_document
        from shortflow.output import write_table
        from shortflow.worst import worst_connections

        if out_dir is not None and not table_to_stdout and fmt == "parquet":
            import_in_background("pyarrow.parquet")  # while the core reads
        threads = workers or (1 if scheduler else common.cores())
        with progress("reading") as step:
            result = analyze(traces, workers=threads, table=need_table, worst=worst if digest else None, scheduler=scheduler,
                             progress=reading_progress(step), filter=filter_expr, **timeouts)
        for f in result.files:
            for w in f.get("warnings") or ():
                warn(w)
            if f.get("skipped_malformed"):
                # Nothing else would say why such packets count for no connection.
                warn(f"{f['path']}: {f['skipped_malformed']:,} of {f['packets']:,} packets skipped: malformed, or cut "
                     "by the capture's snap length before the end of their TCP header")
            if f["error"]:
                # Ctrl-C is no fault of the file: said as a warning, and the status is 130.
                (warn if f.get("interrupted") else error)(f"{f['error']} — the {f['packets']:,} packets before it were analyzed")
        # Files first, printing after: `| head` closing standard output never loses them.
        written: list[str] = []
        # The table is written on a thread (pyarrow's writer runs without the GIL) while
        # the summary is worked out here; its error, if any, is raised as if written here.
        # The exchanges table is written beside it, on a second thread.
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="shortflow-table") as pool:
            writing = []
            if out_dir is not None and not table_to_stdout:
                meta = _metadata(result, traces)
                writing.append(pool.submit(lambda: f"table: {write_table(result.table, out_dir, fmt, metadata=meta)} "
                                                   f"({result.table.num_rows:,} connections)"))
                writing.append(pool.submit(write_exchanges, result, out_dir, fmt, meta))
            doc = summary_document(result)
            # Ranked while the tables are written, for the answer printed below.
            ranked = []
            if show and worst > 0:
                ranked = worst_connections(result.worst_rows if result.worst_rows is not None else result.table, worst)
            written.extend(w.result() for w in writing)
        if abt is not None:
            written.append(write_abt(result, abt))
        if table_to_stdout:
            from shortflow.output import write_table_stdout

            write_table_stdout(result.table, fmt)
        if summary_json is not None:
            write_json(summary_json, doc, "--summary-json")
            if not is_stdout(summary_json):
                written.append(f"summary: {summary_json}")
        if plot is not None:
            from shortflow.plot.gaps import duplicate_gap_histogram

            drawn = duplicate_gap_histogram(result.table, plot)
            if not drawn.gaps:
                written.append(f"plot: {plot} (no SYN was sent again: the figure says so, no gap to draw)")
            elif drawn.beyond:
                written.append(f"plot: {plot} ({drawn.beyond:,} gaps longer than its {drawn.max_s:g} s axis not drawn)")
            else:
                written.append(f"plot: {plot}")
        if report is not None:
            from shortflow.report import write_report

            files = [p for p in traces if not is_stdout(p)]
            page = write_report(result, doc, report, traces=files, filter_expr=filter_expr,
                                idle_timeout_s=timeouts["idle_timeout_s"], close_linger_s=timeouts["close_linger_s"])
            written.append(f"report: {page}")
        # Files that could not be read at all (not a trace): their error is the whole
        # answer, not a Table 1 of zeros beside it.
        if all(f["error"] and not f["packets"] for f in result.files):
            show = False
        if listing and not all(f["error"] and not f["packets"] for f in result.files):
            from shortflow.cli.listing import print_listing

            print_listing(result.table, fmt if fmt != "parquet" else None)
        if show:
            print_answer(result, doc, worst=ranked, asked=worst, table1=table1, filter_expr=filter_expr,
                         tracking=_tracking(timeouts))
            for line in written:
                say(line)
        if scheduler is None:
            # A cluster's client has its own teardown; a local analysis has none to wait for.
            common.nothing_to_tear_down()
        if result.interrupted:
            warn("interrupted: results cover what was read before Ctrl-C")
            raise typer.Exit(130)
        if result.errors:
            raise typer.Exit(FAILURE)
