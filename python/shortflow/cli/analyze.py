"""`shortflow analyze`: per-connection table and document 000's Table 1 for traces."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn
from rich.table import Table

from shortflow import _core
from shortflow.analyze import CAUSES, Analysis, analyze, schema_rows, summary_document
from shortflow.output import FORMATS, write_table
from shortflow.units import parse_duration

err = Console(stderr=True)
out = Console()

#: Show a progress bar only when reading takes long enough to want one.
PROGRESS_MIN_BYTES = 64 << 20


def _fmt(x: Any) -> str:
    if x is None:
        return "–"
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


def print_table1(a: Analysis, console: Console = out) -> None:
    s = a.summary
    t = Table(title="Document 000, Table 1: connection tries and duplicate SYNs", title_justify="left")
    t.add_column("row")
    t.add_column("SYN", justify="right")
    t.add_column("SYN/ACK", justify="right")
    for row in table1_rows(a):
        t.add_row(*row)
    console.print(t)
    console.print(f"packets {s['packets']:,} · connections tracked {s['connections']:,}")
    v = a.vantage_counts
    where = {
        "client": "near the client: every SYN the client sent is seen; a duplicate SYN/ACK only if it arrived",
        "server": "near the server: every SYN/ACK the server sent is seen; a duplicate SYN only if it arrived",
        "unknown": "undecided (no completed handshake, or as many on each side)",
    }[a.vantage]
    console.print(
        f"capture point: {where} "
        f"[dim](handshakes timed as near client {v['client']:,}, near server {v['server']:,}, unknown {v['unknown']:,})[/dim]"
    )


#: How the breakdown line names each cause.
CAUSE_WORDS = {
    "network": "the path itself",
    "handshake": "handshake losses",
    "slow_start": "slow-start round trips",
    "timeout": "loss repair by timeout",
    "fast_retransmit": "loss repair by fast retransmit",
    "delayed_ack": "delayed-ACK stalls",
    "zero_window": "zero-window stalls",
    "application": "application waits",
}


def print_diagnosis(doc: dict[str, Any], console: Console = out) -> None:
    """The data phase in a few lines: repairs, stalls, and where the time went."""
    console.print(
        f"data retransmissions: {doc['timeout_retransmissions']:,} after a timeout ({doc['rto_events']:,} expiries), "
        f"{doc['fast_retransmissions']:,} fast, {doc['tlp_probes']:,} tail loss probes, "
        f"{doc['spurious_retransmissions']:,} spurious · delayed-ACK stalls {doc['delayed_ack_stalls']:,} · "
        f"zero-window stalls {doc['zero_window_stalls']:,} · capture duplicates {doc['capture_duplicates']:,} · "
        f"SYN retries after RST {doc['syn_retries_after_rst']:,}",
        highlight=False,
    )
    total = doc["duration_s"]
    shares = sorted(((v, k) for k, v in doc["time_lost_share"].items() if v), reverse=True)
    if total > 0 and shares:
        parts = ", ".join(f"{v:.0%} {CAUSE_WORDS[k]}" for v, k in shares if k in CAUSES)
        console.print(f"of {total:,.1f} connection-seconds: {parts}", highlight=False)
    r = doc["rtt_ratio"]
    if r["connections"]:
        console.print(
            f"document 001's predictor: mean data RTT within 10 % of the handshake RTT for "
            f"{r['within_10pct_share']:.0%} of {r['connections']:,} connections, largest ≤ 3× for {r['max_within_3x_share']:.0%}",
            highlight=False,
        )


def print_columns(console: Console = out) -> None:
    if not console.is_terminal:
        # Piped: one tab-separated line per column, nothing wrapped.
        for row in schema_rows():
            sys.stdout.write("\t".join(row) + "\n")
        return
    t = Table(title="Connection table columns (Arrow types, defined in crates/trace/src/diag/table.rs)", title_justify="left")
    for h in ("column", "Arrow type", "unit", "meaning"):
        t.add_column(h)
    for name, arrow, unit, doc in schema_rows():
        t.add_row(name, arrow, unit, doc)
    console.print(t)


def _stdin_to_file() -> Path:
    """A trace given as `-`: standard input spooled to a temporary file (the reader maps
    files; a pipe cannot be sought)."""
    import shutil
    import tempfile

    f = tempfile.NamedTemporaryFile(prefix="sf-stdin-", suffix=".pcap", delete=False)
    with f:
        shutil.copyfileobj(sys.stdin.buffer, f, 1 << 20)
    return Path(f.name)


def run_analysis(paths: list[Path], *, workers: int, timeouts: dict[str, float], quiet: bool, table: bool) -> Analysis:
    total = sum(p.stat().st_size for p in paths if p.exists())
    if quiet or total < PROGRESS_MIN_BYTES or not err.is_terminal:
        return analyze(paths, workers=workers, table=table, **timeouts)
    import time

    start = time.monotonic()
    with Progress(
        TextColumn("reading"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
        TextColumn("{task.fields[pps]}"), TimeRemainingColumn(),
        console=err, transient=True,
    ) as bar:
        task = bar.add_task("read", total=total, pps="")

        def update(done: int, tot: int, packets: int) -> None:
            rate = packets / max(time.monotonic() - start, 1e-9)
            bar.update(task, completed=done, total=tot or None, pps=f"{rate / 1e6:.2f} M packets/s")

        return analyze(paths, workers=workers, table=table, **timeouts, progress=update)


def register(app: typer.Typer) -> None:
    @app.command("analyze")
    def analyze_cmd(
        traces: Annotated[Optional[list[Path]], typer.Argument(help="pcap or pcapng files, plain or gzip; - reads standard input", dir_okay=False)] = None,
        out_dir: Annotated[Optional[Path], typer.Option("--out", help="write the per-connection table into this directory")] = None,
        fmt: Annotated[str, typer.Option("--format", help="table format: parquet, csv or jsonl")] = "parquet",
        summary_json: Annotated[Optional[Path], typer.Option("--summary-json", help="write Table 1 and the diagnosis as JSON to this file (- for standard output)")] = None,
        plot: Annotated[Optional[Path], typer.Option("--plot", help="draw the histogram of duplicate-SYN gaps (PNG)")] = None,
        workers: Annotated[int, typer.Option("--workers", min=1, help="files read in parallel, one thread each")] = 1,
        idle_timeout: Annotated[str, typer.Option("--idle-timeout", help="end a connection after this long without packets")] = f"{_core.DEFAULT_IDLE_TIMEOUT_S:g}s",
        close_linger: Annotated[str, typer.Option("--close-linger", help="after both FINs or a RST, late packets still count this long")] = f"{_core.DEFAULT_CLOSE_LINGER_S:g}s",
        report: Annotated[Optional[Path], typer.Option("--report", help="write a self-contained HTML report (report.html) into this directory")] = None,
        columns: Annotated[bool, typer.Option("--columns", help="print the table's columns (name, Arrow type, unit, meaning) and exit")] = False,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="print nothing but errors")] = False,
    ) -> None:
        """Say where each connection lost its time (handshake, slow start, loss repair,
        delayed ACKs, zero windows, application) and print document 000's Table 1."""
        if columns:
            print_columns()
            return
        if not traces:
            err.print("[red]error:[/red] no trace given (or --columns)")
            raise typer.Exit(2)
        if fmt not in FORMATS:
            err.print(f"[red]error:[/red] --format {fmt!r}: choose one of {', '.join(FORMATS)}")
            raise typer.Exit(2)
        for p in traces:
            if str(p) != "-" and not p.is_file():
                err.print(f"[red]error:[/red] {p}: no such file")
                raise typer.Exit(2)
        try:
            timeouts = {
                "idle_timeout_s": parse_duration(idle_timeout, what="--idle-timeout"),
                "close_linger_s": parse_duration(close_linger, what="--close-linger"),
            }
        except ValueError as e:
            err.print(f"[red]error:[/red] {e}")
            raise typer.Exit(2) from None
        spooled = [_stdin_to_file() if str(p) == "-" else None for p in traces]
        paths = [s or p for s, p in zip(spooled, traces)]
        summary_to_stdout = summary_json is not None and str(summary_json) == "-"
        # The per-connection table is built only when something uses it (the summary's
        # percentiles do).
        need_table = out_dir is not None or plot is not None or summary_json is not None or report is not None
        try:
            result = run_analysis(paths, workers=workers, timeouts=timeouts, quiet=quiet, table=need_table)
        finally:
            for s in spooled:
                if s is not None:
                    s.unlink(missing_ok=True)
        for f in result.files:
            if f["error"]:
                err.print(
                    f"[red]error:[/red] {f['error']} — the {f['packets']:,} packets before it were analyzed",
                    highlight=False,
                    soft_wrap=True,
                )
        # Files first, printing after: `| head` closing stdout never loses them.
        written: list[str] = []
        if out_dir is not None:
            path = write_table(result.table, out_dir, fmt, metadata=_metadata(result, traces))
            written.append(f"table: {path} ({result.table.num_rows:,} connections)")
        doc = summary_document(result)
        if summary_json is not None:
            text = json.dumps(doc, indent=2, default=str) + "\n"
            if summary_to_stdout:
                sys.stdout.write(text)
                sys.stdout.flush()
            else:
                summary_json.parent.mkdir(parents=True, exist_ok=True)
                summary_json.write_text(text)
                written.append(f"summary: {summary_json}")
        if plot is not None:
            from shortflow.plot.gaps import duplicate_gap_histogram

            duplicate_gap_histogram(result.table, plot)
            written.append(f"plot: {plot}")
        if report is not None:
            from shortflow.report import write_report

            written.append(f"report: {write_report(result, doc, report, traces=paths if not any(spooled) else [])}")
        if not quiet and not summary_to_stdout:
            print_table1(result)
            print_diagnosis(doc)
            for line in written:
                out.print(line, highlight=False)
        if result.interrupted:
            err.print("[yellow]interrupted:[/yellow] results cover what was read before Ctrl-C")
            raise typer.Exit(130)
        if result.errors:
            sys.stderr.flush()
            raise typer.Exit(1)


def _metadata(result: Analysis, traces: list[Path]) -> dict[str, str]:
    """Parquet key-value metadata: who wrote the table, from what, seen from where."""
    from shortflow import __version__

    return {
        "shortflow_version": __version__,
        "command": " ".join(["shortflow", *sys.argv[1:]]),
        "vantage": result.vantage,
        "files": json.dumps([str(p) for p in traces]),
    }
