"""`shortflow reproduce 000|001|002|003|004|all [--quick] [--json FILE]`: the documents'
figures beside ours."""

from __future__ import annotations

import os
from itertools import groupby
from pathlib import Path
from typing import Annotated, Optional

import typer

from shortflow.cli.common import (
    USAGE,
    check_output_file,
    clip,
    emit_table,
    examples,
    fail,
    is_stdout,
    progress,
    say,
    write_json,
)
from shortflow.exceptions import ShortflowError
from shortflow.reproduce import DOCUMENTS, REAL_DOCUMENTS, Row, reproduce


def _fmt(x: float | None, unit: str) -> str:
    if x is None:
        return "–"
    if unit in ("B", "ACKs", "packets"):
        return f"{x:,.0f}"
    return f"{x:.3f}"


def print_rows(rows: list[Row]) -> None:
    for (doc, figure), grouped in groupby(rows, key=lambda r: (r.document, r.figure)):
        group = list(grouped)
        notes = {r.note for r in group}
        # One note shared by the whole figure is a caption, not a column; none, neither.
        column = len(notes) > 1
        caption = "" if column else notes.pop()
        real = any(r.real is not None or r.real_note for r in group)
        real_notes = any(r.real_note for r in group)
        with_tune = any(r.real_tune is not None for r in group)
        headers = ["case", "paper", "ours"]
        headers += ["real kernel"] * real + ["real, with tune --syn-rto 200ms"] * with_tune + ["unit"]
        headers += ["difference explained"] * column + ["real kernel: note"] * real_notes
        table = []
        for r in group:
            cells = [r.case, _fmt(r.paper, r.unit), _fmt(r.ours, r.unit)]
            cells += [_fmt(r.real, r.unit)] * real + [_fmt(r.real_tune, r.unit)] * with_tune + [r.unit]
            cells += [r.note] * column + [r.real_note] * real_notes
            table.append(cells)
        right = [h in ("paper", "ours", "real kernel", "real, with tune --syn-rto 200ms") for h in headers]
        emit_table(f"document {doc} · {figure} · {group[0].scenario}", headers, table, caption=caption, right=right)


def print_packets() -> None:
    """Document 003's figures packet by packet: the paper's time and packet, ours, ours − paper."""
    from shortflow.reproduce import doc003

    def ms(x: object) -> str:
        return "–" if x is None else f"{1000 * float(x):.3f}"  # type: ignore[arg-type]

    for figure in doc003.CASES:
        name, overrides = doc003.CASES[figure]
        rows = [[str(r["n"]), ms(r["paper_s"]), str(r["paper"]), ms(r["ours_s"]), str(r["ours"] or "–"), ms(r["delta_s"])]
                for r in doc003.packet_table(figure)]
        emit_table(f"document 003 · figure {figure} · scenarios/{name}.toml {' '.join(overrides)}",
                   ["#", "paper ms", "paper packet", "ours ms", "our packet", "ours − paper ms"], rows,
                   right=[True, True, False, True, False, True])


def register(app: typer.Typer) -> None:
    @app.command("reproduce", epilog=examples("shortflow reproduce 000", "shortflow reproduce all --quick",
                                              "shortflow reproduce 003 --packets", "sudo shortflow reproduce 000 --real"))
    def reproduce_cmd(
        document: Annotated[str, typer.Argument(help="000, 001, 002, 003, 004 or all")] = "all",
        quick: Annotated[bool, typer.Option("--quick", help="documents 001 and 004 shortened (less traffic, "
                                                             "2 seeds): seconds instead of minutes")] = False,
        json_out: Annotated[Optional[Path], typer.Option("--json", help="write one row per figure as JSON (- for standard output)")] = None,
        commands: Annotated[bool, typer.Option("--commands", help="print the simulate command of every row")] = False,
        real: Annotated[bool, typer.Option("--real", help="also run document 000's cases on this machine's kernel "
                                                          "in the testbed (root; takes minutes: real timeouts)")] = False,
        packets: Annotated[bool, typer.Option("--packets", help="document 003: every packet of each figure beside "
                                                                "the simulator's same packet")] = False,
    ) -> None:
        """Run the shipped scenario files and print each paper figure beside ours."""
        docs = DOCUMENTS if document == "all" else (document,)
        if any(d not in DOCUMENTS for d in docs):
            fail(f"document {clip(document)!r}: expected one of {', '.join(DOCUMENTS)} or all", USAGE)
        if real and not any(d in REAL_DOCUMENTS for d in docs):
            fail(f"--real: only document {', '.join(REAL_DOCUMENTS)} has a real-kernel column", USAGE)
        if packets and "003" not in docs:
            fail("--packets: only document 003 prints its packets (its figures are packet traces)", USAGE)
        if real and os.geteuid() != 0:
            fail("--real runs the testbed, which needs root (network namespaces, iptables, BPF)", USAGE)
        if json_out is not None:
            check_output_file(json_out, "--json")
        try:
            with progress("reproducing on the real kernel" if real else "reproducing") as step:
                rows = reproduce(docs, real=real, quick=quick,
                                 progress=step)
        except ShortflowError as e:
            fail(e)
        if not is_stdout(json_out):
            print_rows(rows)
            if packets:
                print_packets()
            if commands:
                for r in rows:
                    say(f"{r.document} {r.figure} {r.case}: {r.command}")
        if json_out is not None:
            keys = ("document", "figure", "case", "paper", "ours", "unit", "scenario", "overrides", "note",
                    *(("real", "real_note", "real_tune") if real else ()))
            write_json(json_out, [{k: r.as_json()[k] for k in keys} for r in rows])
