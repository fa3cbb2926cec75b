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
from shortflow.analyze import Analysis, analyze
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


def print_table1(a: Analysis, console: Console = out) -> None:
    s, k = a.summary, a.synack
    t = Table(title="Document 000, Table 1: connection tries and duplicate SYNs", title_justify="left")
    t.add_column("row")
    t.add_column("SYN", justify="right")
    t.add_column("SYN/ACK", justify="right")
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
    ]
    for name, a_, b in rows:
        t.add_row(name, _fmt(a_), _fmt(b))
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


def run_analysis(paths: list[Path], *, workers: int, timeouts: dict[str, float], quiet: bool, table: bool) -> Analysis:
    total = sum(p.stat().st_size for p in paths if p.exists())
    if quiet or total < PROGRESS_MIN_BYTES or not err.is_terminal:
        return analyze(paths, workers=workers, table=table, **timeouts)
    with Progress(
        TextColumn("reading"), BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
        console=err, transient=True,
    ) as bar:
        task = bar.add_task("read", total=total)
        return analyze(
            paths, workers=workers, table=table, **timeouts,
            progress=lambda done, tot: bar.update(task, completed=done, total=tot or None),
        )


def register(app: typer.Typer) -> None:
    @app.command("analyze")
    def analyze_cmd(
        traces: Annotated[list[Path], typer.Argument(help="pcap or pcapng files, plain or gzip", exists=True, dir_okay=False)],
        out_dir: Annotated[Optional[Path], typer.Option("--out", help="write the per-connection table into this directory")] = None,
        fmt: Annotated[str, typer.Option("--format", help="table format: parquet, csv or jsonl")] = "parquet",
        summary_json: Annotated[Optional[Path], typer.Option("--summary-json", help="write Table 1 as JSON to this file")] = None,
        plot: Annotated[Optional[Path], typer.Option("--plot", help="draw the histogram of duplicate-SYN gaps (PNG)")] = None,
        workers: Annotated[int, typer.Option("--workers", min=1, help="files read in parallel, one thread each")] = 1,
        idle_timeout: Annotated[str, typer.Option("--idle-timeout", help="end a connection after this long without packets")] = f"{_core.DEFAULT_IDLE_TIMEOUT_S:g}s",
        close_linger: Annotated[str, typer.Option("--close-linger", help="after both FINs or a RST, late packets still count this long")] = f"{_core.DEFAULT_CLOSE_LINGER_S:g}s",
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="print nothing but errors")] = False,
    ) -> None:
        """Find each connection's handshake losses and print document 000's Table 1."""
        if fmt not in FORMATS:
            err.print(f"[red]error:[/red] --format {fmt!r}: choose one of {', '.join(FORMATS)}")
            raise typer.Exit(2)
        try:
            timeouts = {
                "idle_timeout_s": parse_duration(idle_timeout, what="--idle-timeout"),
                "close_linger_s": parse_duration(close_linger, what="--close-linger"),
            }
        except ValueError as e:
            err.print(f"[red]error:[/red] {e}")
            raise typer.Exit(2) from None
        # The per-connection table is built only when something uses it.
        need_table = out_dir is not None or plot is not None
        result = run_analysis(traces, workers=workers, timeouts=timeouts, quiet=quiet, table=need_table)
        for f in result.files:
            if f["error"]:
                err.print(
                    f"[red]error:[/red] {f['error']} — the {f['packets']:,} packets before it were analyzed",
                    highlight=False,
                    soft_wrap=True,
                )
        if not quiet:
            print_table1(result)
        if out_dir is not None:
            path = write_table(result.table, out_dir, fmt)
            if not quiet:
                out.print(f"table: {path} ({result.table.num_rows:,} connections)")
        if summary_json is not None:
            summary_json.parent.mkdir(parents=True, exist_ok=True)
            summary_json.write_text(json.dumps(result.summary, indent=2) + "\n")
            if not quiet:
                out.print(f"summary: {summary_json}")
        if plot is not None:
            from shortflow.plot.gaps import duplicate_gap_histogram

            duplicate_gap_histogram(result.table, plot)
            if not quiet:
                out.print(f"plot: {plot}")
        if result.interrupted:
            err.print("[yellow]interrupted:[/yellow] results cover what was read before Ctrl-C")
            raise typer.Exit(130)
        if result.errors:
            sys.stderr.flush()
            raise typer.Exit(1)
