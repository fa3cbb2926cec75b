"""`shortflow analyze`: per-connection table and document 000's Table 1 for traces."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from shortflow import _core
from shortflow.analyze import Analysis, analyze
from shortflow.cli import common
from shortflow.cli.common import (
    FAILURE,
    USAGE,
    check_output_dir,
    check_output_file,
    clip,
    emit_table,
    error,
    fail,
    is_stdout,
    progress,
    say,
    warn,
    write_json,
)
from shortflow.output import FORMATS, write_table
from shortflow.units import parse_duration

#: The rows of document 000's Table 1: (label, SYN key, SYN/ACK key).
TABLE1_ROWS = (
    ("connection tries total", "connection_tries", "connections_with_synack"),
    ("  successful", "successful", "successful"),
    ("  not successful", "unsuccessful", "unsuccessful"),
    ("multiple SYNs (SYN/ACKs)", "multiple_syns", "multiple_synacks"),
    ("  for successful conn.", "multiple_syns_successful", "multiple_synacks_successful"),
    ("  for unsuccessful conn.", "multiple_syns_unsuccessful", "multiple_synacks_unsuccessful"),
    ("  outside standard interval", "multiple_syns_outside_standard", "multiple_synacks_outside_standard"),
    ("packets per successful conn.", "syns_per_successful", "synacks_per_successful"),
    ("duplicate every X connections", "duplicate_syn_every", "duplicate_synack_every"),
    ("retransmissions", "syn_retransmissions", "synack_retransmissions"),
)


def _fmt(x: Any) -> str:
    if x is None:
        return "–"
    if isinstance(x, str):
        return x
    if isinstance(x, float):
        return f"{x:,.3f}" if x < 100 else f"{x:,.0f}"
    return f"{x:,}"


def print_table1(a: Analysis) -> None:
    s, k = a.summary, a.synack
    emit_table("Document 000, Table 1: connection tries and duplicate SYNs", ["row", "SYN", "SYN/ACK"],
               [[name, s[sk], k[kk]] for name, sk, kk in TABLE1_ROWS], right=[False, True, True], fmt=_fmt)
    say(f"packets {s['packets']:,} · connections tracked {s['connections']:,}")
    v = a.vantage_counts
    where = {
        "client": "near the client: every SYN the client sent is seen; a duplicate SYN/ACK only if it arrived",
        "server": "near the server: every SYN/ACK the server sent is seen; a duplicate SYN only if it arrived",
        "unknown": "undecided (no completed handshake, or as many on each side)",
    }[a.vantage]
    say(f"capture point: {where} (handshakes timed as near client {v['client']:,}, "
        f"near server {v['server']:,}, unknown {v['unknown']:,})")


def _duration(text: str, flag: str, *, zero_ok: bool) -> float:
    try:
        v = parse_duration(text, what=flag)
    except ValueError as e:
        fail(clip(e), USAGE)
    if v < 0 or (v == 0 and not zero_ok):
        fail(f"{flag} {clip(text)!r}: must be {'at least 0' if zero_ok else 'more than 0'}", USAGE)
    return v


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


def register(app: typer.Typer) -> None:
    @app.command("analyze")
    def analyze_cmd(
        traces: Annotated[list[Path], typer.Argument(help="pcap or pcapng files, plain or gzip; - reads standard input")],
        out_dir: Annotated[Optional[Path], typer.Option("--out", help="write the per-connection table into this directory (created if missing)")] = None,
        fmt: Annotated[str, typer.Option("--format", help="table format: parquet, csv or jsonl")] = "parquet",
        summary_json: Annotated[Optional[Path], typer.Option("--summary-json", help="write Table 1 as JSON to this file (- for standard output)")] = None,
        plot: Annotated[Optional[Path], typer.Option("--plot", help="draw the histogram of duplicate-SYN gaps (PNG)")] = None,
        workers: Annotated[int, typer.Option("--workers", min=1, max=256, help="files read in parallel, one thread each")] = 1,
        idle_timeout: Annotated[str, typer.Option("--idle-timeout", help="end a connection after this long without packets")] = f"{_core.DEFAULT_IDLE_TIMEOUT_S:g}s",
        close_linger: Annotated[str, typer.Option("--close-linger", help="after both FINs or a RST, late packets still count this long")] = f"{_core.DEFAULT_CLOSE_LINGER_S:g}s",
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="print nothing but errors and warnings")] = False,
    ) -> None:
        """Find each connection's handshake losses and print document 000's Table 1."""
        if quiet:
            common.quiet()
        if fmt not in FORMATS:
            fail(f"--format {clip(fmt)!r}: choose one of {', '.join(FORMATS)}", USAGE)
        _check_traces(traces)
        timeouts = {
            "idle_timeout_s": _duration(idle_timeout, "--idle-timeout", zero_ok=False),
            "close_linger_s": _duration(close_linger, "--close-linger", zero_ok=True),
        }
        if out_dir is not None:
            check_output_dir(out_dir, "--out")
        if summary_json is not None:
            check_output_file(summary_json, "--summary-json")
        if plot is not None:
            if is_stdout(plot):
                fail("--plot -: a PNG is not written to standard output; give a file name", USAGE)
            check_output_file(plot, "--plot")
        # JSON on standard output is the whole output: the table then stays away from it.
        show = not quiet and not is_stdout(summary_json)
        # The per-connection table is built only when something uses it.
        need_table = out_dir is not None or plot is not None
        with progress("reading") as step:
            result = analyze(traces, workers=workers, table=need_table,
                             progress=lambda done, total: step(done, total or None), **timeouts)
        for f in result.files:
            for w in f.get("warnings") or ():
                warn(w)
            if f["error"]:
                error(f"{f['error']} — the {f['packets']:,} packets before it were analyzed")
        if show:
            print_table1(result)
        if out_dir is not None:
            path = write_table(result.table, out_dir, fmt)
            if show:
                say(f"table: {path} ({result.table.num_rows:,} connections)")
        if summary_json is not None:
            write_json(summary_json, result.summary, "--summary-json")
            if show:
                say(f"summary: {summary_json}")
        if plot is not None:
            from shortflow.plot.gaps import duplicate_gap_histogram

            duplicate_gap_histogram(result.table, plot)
            if show:
                say(f"plot: {plot}")
        if result.interrupted:
            warn("interrupted: results cover what was read before Ctrl-C")
            raise typer.Exit(130)
        if result.errors:
            raise typer.Exit(FAILURE)

