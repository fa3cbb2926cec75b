"""What every `shortflow` command shares: the one way errors and warnings leave, the
output mode (rich on a terminal, tab-separated text in a pipe, JSON on request), `-` for
standard output, and progress on standard error.

Every piece prints user text as plain text, never as rich markup, so a file named
``d[/red].pcap`` or a scenario value ``"[bold]"`` is shown as it is written.

A new command needs three things from here::

    from shortflow.cli.common import USAGE, fail, emit_table, progress
    fail("--format 'x': choose one of parquet, csv, jsonl", USAGE)  # stderr, exit 2
    emit_table("title", ["conn", "SYNs"], [[1, 2]])                  # terminal or TSV
    with progress("simulating", total=n) as step: step(done)         # stderr
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import typer

#: Exit statuses: a failure (the input was read but something went wrong), a usage error
#: (an option or file the command cannot take), a run that ended at its time limit with
#: connections incomplete.
FAILURE = 1
USAGE = 2
INCOMPLETE = 3

#: User text longer than this is cut with "…" (a 1 MB key is not echoed whole).
MAX_TEXT = 200

#: The SCENARIO argument's help, the same for every command that reads one
#: (`Scenario.load`: a file, or the name of a shipped scenario, from any directory).
SCENARIO_HELP = "scenario file (TOML), or the name of a shipped one (002-initial-window)"

log = logging.getLogger("shortflow")


def clip(text: object, limit: int = MAX_TEXT) -> str:
    """`text` as a string, cut to about `limit` characters with "…" in the middle (the
    start names the thing, the end usually says what was wrong)."""
    s = str(text)
    if len(s) <= limit:
        return s
    tail = limit // 3
    return f"{s[: limit - tail]}…{s[-tail:]}"


def _plain(prefix: str, message: object) -> None:
    # One write of plain text: no markup, no highlighting, no wrapping.
    lines = [clip(line, 2 * MAX_TEXT) for line in str(message).splitlines() or [""]]
    sys.stderr.write(f"{prefix}{chr(10).join(lines)}\n")
    sys.stderr.flush()


def fail(message: object, code: int = FAILURE) -> NoReturn:
    """Prints ``error: MESSAGE`` on standard error and ends the command with `code`
    (`FAILURE` or `USAGE`)."""
    _plain("error: ", message)
    raise typer.Exit(code)


def error(message: object) -> None:
    """Prints ``error: MESSAGE`` without ending the command (one damaged file of several)."""
    _plain("error: ", message)


def warn(message: object) -> None:
    """Prints ``warning: MESSAGE`` on standard error; the command goes on."""
    _plain("warning: ", message)


def note(message: object) -> None:
    """An informational line on standard error (hidden by ``-q``)."""
    if log.isEnabledFor(logging.INFO):
        _plain("", message)


def quiet() -> None:
    """A command's own ``-q``: as the global one, no progress and no notes."""
    log.setLevel(max(log.getEffectiveLevel(), logging.WARNING))


_quiet = False


def set_quiet(on: bool) -> None:
    """``-q`` was given, before the sub-command or after it."""
    global _quiet
    _quiet = on


def is_quiet() -> bool:
    """Whether ``-q`` was given anywhere on the command line: a command with a table of its
    own (analyze, simulate) then prints it no more than with its own ``-q``."""
    return _quiet


def examples(*lines: str) -> str:
    """A help's epilog: command lines that work as written (the test suite parses them)."""
    return "Examples:\n" + "\n".join(f"  {line}" for line in lines)


# -- output files -----------------------------------------------------------------------

_teardown_skippable = False


def nothing_to_tear_down() -> None:
    """Says that the command has written everything and holds nothing the interpreter's
    teardown would undo (no namespace, no cluster client, no temporary file): `main` then
    ends the process once standard output and error are flushed. Freeing a large table and
    finalizing numpy and pyarrow took ~0.04 s of `shortflow analyze`'s ~0.75 s on the
    benchmark trace. Commands that set anything up on the host never call it: their
    `atexit` hooks must run."""
    global _teardown_skippable
    _teardown_skippable = True


def teardown_skippable() -> bool:
    return _teardown_skippable


def cores() -> int:
    """The cores this process may run on (its CPU affinity, not the machine's count)."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def is_stdout(path: Path | str | None) -> bool:
    return path is not None and str(path) == "-"


def duration_option(text: str, flag: str, *, zero_ok: bool = True) -> float:
    """Seconds in an option's value (`300ms`, `5s`); a usage error naming the option when
    it has no unit, an unknown one, or is below 0 (or is 0, unless `zero_ok`)."""
    from shortflow.units import parse_duration

    try:
        v = parse_duration(text, what=flag)
    except ValueError as e:
        fail(clip(e), USAGE)
    if v < 0 or (v == 0 and not zero_ok):
        fail(f"{flag} {clip(text)!r}: must be {'at least 0' if zero_ok else 'more than 0'}", USAGE)
    return v


def check_output_file(path: Path, flag: str) -> None:
    """Refuses, as a usage error, an output file that cannot be written: a directory, or
    a file in a directory that does not exist (never created silently)."""
    if is_stdout(path):
        return
    if path.is_dir():
        fail(f"{flag} {clip(path)}: is a directory; give a file name", USAGE)
    parent = path.parent
    if not parent.is_dir():
        fail(f"{flag} {clip(path)}: directory {clip(parent)} does not exist", USAGE)


def check_output_dir(path: Path, flag: str) -> None:
    """An output directory: created when missing (said on standard error), refused when it
    names something that is not a directory."""
    if path.exists() and not path.is_dir():
        fail(f"{flag} {clip(path)}: exists and is not a directory", USAGE)
    if not path.exists():
        try:
            path.mkdir(parents=True)
        except OSError as e:
            fail(f"{flag} {clip(path)}: cannot create the directory: {e.strerror}", FAILURE)
        note(f"created directory {path}")


def write_text(path: Path | str, text: str, flag: str) -> None:
    """Writes `text` to `path`, or to standard output when `path` is ``-``."""
    if is_stdout(path):
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        Path(path).write_text(text)
    except OSError as e:
        fail(f"{flag} {clip(path)}: cannot write: {e.strerror}", FAILURE)


def write_json(path: Path | str, doc: Any, flag: str = "--json") -> None:
    """`doc` as a JSON document (always one, even when empty) to `path` or ``-``."""
    write_text(path, json.dumps(doc, indent=1) + "\n", flag)


# -- tables -----------------------------------------------------------------------------

def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def emit_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]], *,
               caption: str = "", right: Sequence[bool] | None = None,
               fmt: Callable[[object], str] = str) -> None:
    """A table on standard output. On a terminal rich draws it, each cell through `fmt`
    (thousands separators, rounding). In a pipe: a ``# title`` line, the headers, then one
    tab-separated line per row with the raw values (None empty), for `cut`, `awk`, pandas."""
    if not stdout_is_terminal():
        out = sys.stdout
        if title:
            out.write(f"# {_tsv_cell(title)}\n")
        out.write("\t".join(_tsv_cell(h) for h in headers) + "\n")
        for row in rows:
            out.write("\t".join(_tsv_cell(c) for c in row) + "\n")
        if caption:
            out.write(f"# {_tsv_cell(caption)}\n")
        out.flush()
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    t = Table(title=Text(title) if title else None, title_justify="left",
              caption=Text(caption) if caption else None, caption_justify="left")
    for i, h in enumerate(headers):
        t.add_column(Text(h), justify="right" if right and right[i] else "left")
    for row in rows:
        t.add_row(*(Text(fmt(c)) for c in row))
    Console().print(t)


def _tsv_cell(c: object) -> str:
    if c is None:
        return ""
    if isinstance(c, float):
        return f"{c:.9g}"
    return str(c).replace("\t", " ").replace("\n", " ")


def say(text: object) -> None:
    """One line of plain text on standard output."""
    sys.stdout.write(f"{text}\n")


# -- progress ---------------------------------------------------------------------------

#: In a pipe or a log, a progress line every this many seconds.
PLAIN_PROGRESS_EVERY_S = 5.0

Step = Callable[..., None]


def plain_line(what: str, done: int | None, total: int | None, elapsed_s: float, text: str = "") -> str:
    """A progress line for a pipe or a log: the count done of all and the time left at the
    rate so far, when they are known.

    >>> plain_line("reproducing", 3, 12, 30.0, "Table 4: SYN lost")
    'reproducing: 3/12 (30 s, ETA 1 min 30 s) Table 4: SYN lost'
    """
    count = "" if done is None else f" {done:,}" + (f"/{total:,}" if total else "")
    eta = ""
    if done and total and done < total:
        eta = f", ETA {_seconds((total - done) * elapsed_s / done)}"
    return f"{what}:{count} ({elapsed_s:.0f} s{eta}) {clip(text, 80)}".rstrip()


def _seconds(s: float) -> str:
    m, sec = divmod(round(s), 60)
    return f"{m} min {sec} s" if m else f"{sec} s"


@contextlib.contextmanager
def progress(what: str, total: int | None = None) -> Iterator[Step]:
    """Progress of a long command on standard error: a rich bar on a terminal, a plain
    line every few seconds otherwise, nothing with ``-q``. Yields ``step(done, total=None,
    text="")``."""
    if not log.isEnabledFor(logging.INFO):
        yield lambda done, total=None, text="": None
        return
    if sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        # The count done of all and the time left (from the rate so far), then the text.
        columns = (TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[text]}", markup=False))
        with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task(what, total=total, text="")

            def rich_step(done: int, total: int | None = None, text: str = "") -> None:
                if total:
                    bar.update(task, completed=done, total=total, text=clip(text, 60))
                else:
                    bar.update(task, completed=done, text=clip(text, 60))

            yield rich_step
        return
    # In a pipe or a log: a line every few seconds from a small thread, so a command whose
    # work gives no steps (a long generate) still shows it is alive.
    start = time.monotonic()
    state: dict[str, Any] = {"done": None, "total": total, "text": ""}
    stop = threading.Event()

    def plain_step(done: int, total: int | None = None, text: str = "") -> None:
        state["done"] = done
        state["total"] = total or state["total"]
        state["text"] = text

    def beat() -> None:
        while not stop.wait(PLAIN_PROGRESS_EVERY_S):
            _plain("", plain_line(what, state["done"], state["total"], time.monotonic() - start, state["text"]))

    t = threading.Thread(target=beat, name="shortflow-progress", daemon=True)
    t.start()
    try:
        yield plain_step
    finally:
        stop.set()
        t.join()
