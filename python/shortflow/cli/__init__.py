"""The `shortflow` command: one Typer app, one module per sub-command.

Each module in ``COMMAND_MODULES`` defines ``register(app: typer.Typer) -> None`` and is
imported only here, so ``shortflow --help`` stays fast and a new command is one line.

`main()` is the one way out: usage errors (click's) exit 2, shortflow's own errors 1,
both as one plain ``error:`` line on standard error (`shortflow.cli.common.fail`); an
unexpected exception is reported the same way, its traceback only with ``-v``.
"""

from __future__ import annotations

import contextlib
import copy
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
    "shortflow.cli.advise",
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
    "shortflow.cli.watch",
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


#: -v/-q as given so far in this command line, before the sub-command or after it.
_voice: dict[str, Any] = {"verbose": 0, "quiet": False, "log_level": None}

VERBOSE_HELP = "More on stderr: -v info, -vv debug (with tracebacks); before or after the sub-command."
QUIET_HELP = "Only errors and warnings (no progress, no notes; no table where the command has one)."


def _apply_voice() -> None:
    log_level = _voice["log_level"]
    if log_level is not None:
        notes = records = getattr(logging, log_level.upper())
    else:
        notes = logging.WARNING if _voice["quiet"] else logging.INFO
        records = (logging.WARNING, logging.INFO, logging.DEBUG)[min(_voice["verbose"], 2)]
    common.set_quiet(bool(_voice["quiet"]))
    setup_logging(notes, records)


@app.callback(epilog=common.examples("shortflow analyze capture.pcap", "shortflow simulate 000-table4 --set drop.syn=[1]",
                                     "shortflow -v testbed compare 002-initial-window"))
def _root(
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, show_default=False, help=VERBOSE_HELP)] = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help=QUIET_HELP)] = False,
    log_level: Annotated[Optional[str], typer.Option("--log-level", metavar="LEVEL", help=f"Log level on stderr: {', '.join(LOG_LEVELS)}.")] = None,
    _: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """Find and remove the start-up delays of short TCP connections."""
    if log_level is not None and log_level.lower() not in LOG_LEVELS:
        raise typer.BadParameter(f"{clip(log_level)!r}: choose one of {', '.join(LOG_LEVELS)}", param_hint="--log-level")
    _voice.update(verbose=_voice["verbose"] + verbose, quiet=_voice["quiet"] or quiet,
                  log_level=log_level.lower() if log_level else None)
    _apply_voice()


def _more_verbose(ctx: Any, param: Any, value: int) -> int:
    if value:
        _voice["verbose"] += value
        _apply_voice()
    return value


def _quieter(ctx: Any, param: Any, value: bool) -> bool:
    if value:
        _voice["quiet"] = True
        _apply_voice()
    return value


#: Placeholders: one style, upper case, named for what goes there (an option's type alone
#: says too little: a duration and a file are both text).
METAVARS = {
    "--set": "KEY=VALUE", "--grid": "KEY=V1,V2,…", "--json": "FILE", "--out": "DIR", "--output": "FILE",
    "--summary-json": "FILE", "--plot": "FILE", "--report": "DIR", "--pcap": "FILE", "--pcap-dir": "DIR",
    "--flows": "FILE", "--state": "FILE", "--iw-map": "FILE", "--json-stats": "FILE", "--format": "FORMAT",
    "--idle-timeout": "DURATION", "--close-linger": "DURATION", "--syn-rto": "DURATION", "--rto-min": "DURATION",
    "--delack-max": "DURATION", "--rtt-min": "DURATION", "--rtt-max": "DURATION", "--client-rto": "DURATION",
    "--server-rto": "DURATION", "--max-memory": "SIZE", "--sfr-cutout": "SIZE", "--scheduler": "ADDRESS",
    "--scope": "KIND=VALUE", "--metric": "COLUMN", "--x": "KEY", "--run": "RUN_ID", "--vantage": "SIDE",
    "--link": "LINK", "--fallback": "MODE", "--slow-start-after-idle": "on|off", "--delay": "DELAY_MS",
    "--port": "PORT[,PORT…]", "--log-level": "LEVEL",
}


def _metavar(param: Any) -> str:
    """An option's placeholder: named in `METAVARS`, else from its type (N, NUMBER, FILE, TEXT)."""
    for opt in param.opts:
        if opt in METAVARS:
            return METAVARS[opt]
    kind = type(param.type).__name__
    return {"IntParamType": "N", "IntRange": "N", "FloatParamType": "NUMBER", "FloatRange": "NUMBER",
            "Path": "FILE"}.get(kind, "TEXT")


def _argument_metavar(param: Any) -> Any:
    """An argument's placeholder as its name in upper case, in the usage line too (optional
    ones in brackets), where Typer writes ``{name}``."""
    var = param.metavar or (param.name or "").upper()
    param.metavar = var

    def make_metavar(ctx: Any, *, usage: bool = False) -> str:
        v = var + ("…" if param.nargs != 1 and not var.endswith("…") else "")
        return f"[{v}]" if usage and not param.required else v

    return make_metavar


def _interruptible(callback: Any) -> Any:
    """`callback` saying "interrupted" on Ctrl-C, exit status 130: Typer turns the
    KeyboardInterrupt into a silent exit 130 before `run` could say it. A closed standard
    output ends it quietly with status 0."""
    import functools

    @functools.wraps(callback)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return callback(*args, **kwargs)
        except KeyboardInterrupt:
            sys.stderr.write("interrupted\n")
            raise typer.Exit(130) from None
        except BrokenPipeError:
            # The reader went away (`| head`): it has what it wanted, which is no failure
            # (click would exit 1).
            _stdout_gone()
            raise typer.Exit(0) from None

    return wrapper


def summary(help_text: str) -> str:
    r"""A command's line in its group's listing: the first sentence of its help, whole, on
    one line.

    >>> summary("Print how it runs, field by field.\nExits 2 when it cannot.\n\nMore.")
    'Print how it runs, field by field.'
    """
    import re

    first = " ".join(help_text.split("\n\n")[0].split())
    return re.split(r"(?<=[.!?])\s+(?=[A-Z`])", first, maxsplit=1)[0]


def _front_door(cmd: Any) -> None:
    """The conventions every command's help keeps, applied once to the command tree: one
    placeholder style; a summary in its group's listing that is the whole first sentence
    on one line (Typer keeps the docstring's line breaks there); -v and -q accepted after
    the sub-command as before it."""
    from typer.core import TyperArgument, TyperOption

    if cmd.help and not cmd.short_help:
        cmd.short_help = summary(cmd.help)
    names = {opt for p in cmd.params for opt in getattr(p, "opts", ())}
    for p in cmd.params:
        if isinstance(p, TyperArgument):
            p.make_metavar = _argument_metavar(p)  # type: ignore[method-assign]
            # The name says what goes there; no "<path>" or "<text>" beside it.
            p.type = copy.copy(p.type)
            p.type.get_metavar = lambda param, ctx: ""  # type: ignore[method-assign]
        elif isinstance(p, TyperOption) and p.count:
            p.metavar = ""  # a count takes no value: -v, -vv
        elif isinstance(p, TyperOption) and not p.is_flag and p.metavar is None:
            p.metavar = _metavar(p)
    if cmd.callback is not None:
        cmd.callback = _interruptible(cmd.callback)
    sub = getattr(cmd, "commands", None)
    if sub:
        for c in sub.values():
            _front_door(c)
        if not getattr(cmd, "invoke_without_command", False):
            return  # a group that runs nothing itself (synopt runs its daemon: it takes them)
    if "-v" not in names:
        cmd.params.append(TyperOption(param_decls=["--verbose", "-v"], count=True, expose_value=False, metavar="",
                                      callback=_more_verbose, help=VERBOSE_HELP))
    if "-q" not in names:
        cmd.params.append(TyperOption(param_decls=["--quiet", "-q"], is_flag=True, expose_value=False,
                                      callback=_quieter, help=QUIET_HELP))


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


def command() -> Any:
    """The click command of the whole tool as `run` uses it (`_front_door`'s conventions
    applied), built once."""
    global _command
    if _command is None:
        _command = typer.main.get_command(app)
        _front_door(_command)
    return _command


def run(argv: Sequence[str] | None = None) -> int:
    """Runs the command line `argv` (default: sys.argv) and returns its exit status."""
    from shortflow.exceptions import ShortflowError

    _voice.update(verbose=0, quiet=False, log_level=None)
    common.set_quiet(False)
    setup_logging()
    try:
        # Typer builds the click command on every call; built once, a process (or a test)
        # that runs many command lines does not pay for it each time.
        rv = command().main(args=list(argv) if argv is not None else None, prog_name="shortflow", standalone_mode=False)
    except typer.TyperException as e:
        return _usage_error(e)
    except (typer.Abort, KeyboardInterrupt):
        sys.stderr.write("interrupted\n")
        return 130
    except ShortflowError as e:
        sys.stderr.write(f"error: {clip(e, 400)}\n")
        return FAILURE
    except BrokenPipeError:
        # The reader went away (`| head`): it has what it wanted, which is no failure.
        _stdout_gone()
        return 0
    except SystemExit as e:
        # click's own answer to a closed pipe outside a command (help text): exit 1.
        if isinstance(e.__context__, BrokenPipeError):
            _stdout_gone()
            return 0
        raise
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


def _stdout_gone() -> None:
    """Standard output's reader has closed the pipe: whatever is still buffered, and any
    later write (the interpreter's own flush at exit), goes nowhere instead of raising
    BrokenPipeError again ("Exception ignored ..." and exit status 120)."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def main() -> None:
    status = run()
    try:
        # Flushed here, where a closed pipe can still be told from a failure.
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        _stdout_gone()
    except (OSError, ValueError):
        pass
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
