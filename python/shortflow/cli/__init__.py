"""The `shortflow` command: one Typer app, one module per sub-command.

Each module in ``COMMAND_MODULES`` defines ``register(app: typer.Typer) -> None`` and is
imported only here, so ``shortflow --help`` stays fast and a new command is one line.

`main()` is the one way out: usage errors (click's) exit 2, shortflow's own errors 1,
both as one plain ``error:`` line on standard error (`shortflow.cli.common.fail`); an
unexpected exception is reported the same way, its traceback only with ``-v``.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import Annotated, Any, Optional

# numpy's OpenBLAS starts a thread for each further core at import, and they spin ~0.1 s
# of CPU waiting for work (`python -c "import numpy, time; time.sleep(0.5)"`: 0.17 CPU s,
# 0.08 with one thread). The commands do no linear algebra, and the spin runs on the cores
# an analysis is using (`analyze BIG --out DIR`: BENCHMARKS.md, ninth round). Set before
# anything imports numpy; a user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import typer

from shortflow.cli import common
from shortflow.cli.common import FAILURE, USAGE, clip, log

COMMAND_MODULES = (
    "shortflow.cli.analyze",
    "shortflow.cli.graph",
    "shortflow.cli.generate",
    "shortflow.cli.demo",
    "shortflow.cli.simulate",
    "shortflow.cli.scenario",
    "shortflow.cli.reproduce",
    "shortflow.cli.sweep",
    "shortflow.cli.testbed",
    "shortflow.cli.tune",
    "shortflow.cli.synopt",
)

LOG_LEVELS = ("debug", "info", "warning", "error")

app = typer.Typer(
    name="shortflow",
    help="Find and remove the start-up delays of short TCP connections.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("shortflow")
        except PackageNotFoundError:
            v = "unknown (not installed)"
        sys.stdout.write(f"shortflow {v}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="More on stderr: -v info, -vv debug (with tracebacks).")] = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only errors and warnings on stderr (no progress, no notes).")] = False,
    log_level: Annotated[Optional[str], typer.Option("--log-level", help=f"Log level on stderr: {', '.join(LOG_LEVELS)}.")] = None,
    _: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """Find and remove the start-up delays of short TCP connections."""
    if log_level is not None and log_level.lower() not in LOG_LEVELS:
        raise typer.BadParameter(f"{clip(log_level)!r}: choose one of {', '.join(LOG_LEVELS)}", param_hint="--log-level")
    if log_level is not None:
        notes = records = getattr(logging, log_level.upper())
    else:
        notes = logging.WARNING if quiet else logging.INFO
        records = (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    setup_logging(notes, records)


class _StderrHandler(logging.Handler):
    """Writes to `sys.stderr` as it is at each record (tests and redirections swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        sys.stderr.write(self.format(record) + "\n")


def setup_logging(notes: int = logging.INFO, records: int = logging.WARNING) -> None:
    """Logging of every shortflow module to standard error, as plain lines: log records
    from `records` up (warnings by default, ``-v`` info, ``-vv`` debug); the commands'
    notes and progress while `notes` is INFO or lower (by default; ``-q`` stops them)."""
    root = logging.getLogger("shortflow")
    root.setLevel(min(notes, records))
    if not root.handlers:
        h = _StderrHandler()
        h.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(h)
        root.propagate = False
    root.handlers[0].setLevel(records)


for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def _usage_error(e: typer.TyperException) -> int:
    """click's own errors (unknown option, bad value, missing argument): one plain line."""
    ctx = getattr(e, "ctx", None)
    if type(e).__name__ == "NoArgsIsHelpError" and ctx is not None:
        # `shortflow tune` alone: its help, as click would print it.
        sys.stderr.write(ctx.get_help() + "\n")
        return USAGE
    hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    sys.stderr.write(f"error: {clip(e.format_message(), 400)}{hint}\n")
    return int(getattr(e, "exit_code", USAGE))


_command: Any = None


def run(argv: Sequence[str] | None = None) -> int:
    """Runs the command line `argv` (default: sys.argv) and returns its exit status."""
    from shortflow.exceptions import ShortflowError

    global _command
    setup_logging()
    try:
        # Typer builds the click command on every call; built once, a process (or a test)
        # that runs many command lines does not pay for it each time.
        _command = _command or typer.main.get_command(app)
        rv = _command.main(args=list(argv) if argv is not None else None, prog_name="shortflow", standalone_mode=False)
    except typer.TyperException as e:
        return _usage_error(e)
    except (typer.Abort, KeyboardInterrupt):
        sys.stderr.write("interrupted\n")
        return 130
    except ShortflowError as e:
        sys.stderr.write(f"error: {clip(e, 400)}\n")
        return FAILURE
    except BrokenPipeError:
        # The reader went away (`| head`): nothing more to say to it.
        sys.stdout = None
        return FAILURE
    except OSError as e:
        where = f"{clip(e.filename)}: " if e.filename else ""
        sys.stderr.write(f"error: {where}{e.strerror or e}\n")
        return FAILURE
    except Exception as e:
        log.debug("traceback of the internal error", exc_info=True)
        sys.stderr.write(f"error: internal error ({type(e).__name__}: {clip(e)}); this is a bug in shortflow, "
                         "please report it with the command line (-vv shows the traceback)\n")
        return FAILURE
    return rv if isinstance(rv, int) else 0


def main() -> None:
    status = run()
    if common.teardown_skippable():
        # Everything is written; what is buffered goes out, then the process ends (see
        # `common.nothing_to_tear_down`).
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.flush()
        os._exit(status)
    sys.exit(status)
