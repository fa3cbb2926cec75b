"""`shortflow reproduce 000|001|002|003|004|all [--quick] [--json FILE]`: the documents'
figures beside ours."""

from __future__ import annotations

import json
import os
from itertools import groupby
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import Progress, TextColumn
from rich.table import Table

from shortflow.exceptions import ShortflowError
from shortflow.reproduce import DOCUMENTS, REAL_DOCUMENTS, Row, reproduce

err = Console(stderr=True)
out = Console()


def _fmt(x: float | None, unit: str) -> str:
    if x is None:
        return "–"
    if unit == "B" or unit == "ACKs":
        return f"{x:,.0f}"
    return f"{x:.3f}"


def print_rows(rows: list[Row], console: Console = out) -> None:
    for (doc, figure), group in groupby(rows, key=lambda r: (r.document, r.figure)):
        group = list(group)
        notes = {r.note for r in group}
        # One note shared by the whole figure is a caption, not a column; none, neither.
        column = len(notes) > 1
        caption = "" if column else notes.pop()
        t = Table(title=f"document {doc} · {figure} · {group[0].scenario}", title_justify="left",
                  caption=caption or None, caption_justify="left")
        t.add_column("case")
        t.add_column("paper", justify="right")
        t.add_column("ours", justify="right")
        real = any(r.real is not None or r.real_note for r in group)
        real_notes = any(r.real_note for r in group)
        with_tune = any(r.real_tune is not None for r in group)
        if real:
            t.add_column("real kernel", justify="right")
        if with_tune:
            t.add_column("real, with tune --syn-rto 200ms", justify="right")
        t.add_column("unit")
        if column:
            t.add_column("difference explained")
        if real_notes:
            t.add_column("real kernel: note")
        for r in group:
            cells = [r.case, _fmt(r.paper, r.unit), _fmt(r.ours, r.unit)]
            if real:
                cells.append(_fmt(r.real, r.unit))
            if with_tune:
                cells.append(_fmt(r.real_tune, r.unit))
            t.add_row(*cells, r.unit, *([r.note] if column else []), *([r.real_note] if real_notes else []))
        console.print(t)


def register(app: typer.Typer) -> None:
    @app.command("reproduce")
    def reproduce_cmd(
        document: Annotated[str, typer.Argument(help="000, 001, 002, 003, 004 or all")] = "all",
        quick: Annotated[bool, typer.Option("--quick", help="documents 001 and 004 shortened (less traffic, "
                                                             "2 seeds): seconds instead of minutes")] = False,
        json_out: Annotated[Optional[Path], typer.Option("--json", help="write one row per figure as JSON")] = None,
        commands: Annotated[bool, typer.Option("--commands", help="print the simulate command of every row")] = False,
        real: Annotated[bool, typer.Option("--real", help="also run document 000's cases on this machine's kernel "
                                                          "in the testbed (root; takes minutes: real timeouts)")] = False,
    ) -> None:
        """Run the shipped scenario files and print each paper figure beside ours."""
        docs = DOCUMENTS if document == "all" else (document,)
        if any(d not in DOCUMENTS for d in docs):
            err.print(f"[red]error:[/red] document {document!r}: expected one of {', '.join(DOCUMENTS)} or all")
            raise typer.Exit(2)
        if real and not any(d in REAL_DOCUMENTS for d in docs):
            err.print(f"[red]error:[/red] --real: only document {', '.join(REAL_DOCUMENTS)} has a real-kernel column")
            raise typer.Exit(2)
        if real and os.geteuid() != 0:
            err.print("[red]error:[/red] --real runs the testbed, which needs root (network namespaces, iptables, BPF)")
            raise typer.Exit(2)
        try:
            if real:
                with Progress(*Progress.get_default_columns(), TextColumn("{task.fields[case]}"),
                              console=err, transient=True) as bar:
                    task = bar.add_task("real kernel", total=None, case="")

                    def step(done: int, total: int, r: Row) -> None:
                        bar.update(task, completed=done, total=total, case=f"{r.figure}: {r.case}")

                    rows = reproduce(docs, real=True, quick=quick, progress=step)
            else:
                rows = reproduce(docs, quick=quick)
        except ShortflowError as e:
            err.print(f"[red]error:[/red] {e}", highlight=False)
            raise typer.Exit(1) from None
        print_rows(rows)
        if commands:
            for r in rows:
                out.print(f"{r.document} {r.figure} {r.case}: {r.command}", highlight=False, soft_wrap=True)
        if json_out is not None:
            keys = ("document", "figure", "case", "paper", "ours", "unit", "scenario", "overrides", "note",
                    *(("real", "real_note", "real_tune") if real else ()))
            json_out.write_text(json.dumps([{k: r.as_json()[k] for k in keys} for r in rows], indent=1))
