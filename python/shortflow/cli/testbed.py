"""`shortflow testbed run|clean|compare`: the scenario on the real kernel in namespaces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from shortflow.exceptions import PrivilegeError, ScenarioError, ShortflowError

testbed_app = typer.Typer(help="Run a scenario on the real Linux kernel (needs root).", no_args_is_help=True)
err = Console(stderr=True)
out = Console()

#: Result key → column heading.
COLUMNS = {"syn_transmissions": "SYNs", "synack_transmissions": "SYN/ACKs", "request_sent_s": "request (s)",
           "complete_s": "complete (s)", "retransmissions": "retrans.", "timeouts": "RTOs",
           "fast_retransmits": "recov.", "tlp_probes": "TLPs", "dsacks": "D-SACKs"}


def _fail(e: BaseException, code: int) -> typer.Exit:
    err.print(f"[red]error:[/] {e}", highlight=False)
    return typer.Exit(code)


def _run(scenario: Path, pcap_dir: Path | None) -> dict[str, Any]:
    from shortflow import testbed

    try:
        s = testbed.load(scenario)
        return testbed.run(s, str(pcap_dir) if pcap_dir else None)
    except (ScenarioError, PrivilegeError) as e:
        raise _fail(e, 2) from None
    except ShortflowError as e:
        raise _fail(e, 1) from None
    except KeyboardInterrupt as e:
        err.print(f"interrupted ({str(e) or 'Ctrl-C'}); everything the run created was removed")
        raise typer.Exit(130) from None


def _table(title: str, rows: list[tuple[str, list[dict[str, Any]]]],
           verdicts: list[dict[str, bool | None]] | None = None) -> Table:
    """One row per connection and world; with `verdicts`, a ✓/✗ under each figure of the
    real row (— where the real world could not measure it)."""
    t = Table(title=title)
    t.add_column("conn")
    t.add_column("world")
    for heading in COLUMNS.values():
        t.add_column(heading, justify="right")
    n = max(len(conns) for _, conns in rows)
    mark = {True: "[green]✓[/]", False: "[red]✗[/]", None: "—"}
    for i in range(n):
        for world, conns in rows:
            c = conns[i] if i < len(conns) else {}
            cells = [_fmt(c.get(k)) for k in COLUMNS]
            if verdicts and world == "real" and i < len(verdicts):
                cells = [f"{cell} {mark[verdicts[i].get(k)]}" for cell, k in zip(cells, COLUMNS)]
            t.add_row(str(i + 1), world, *cells)
    return t


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    return f"{v:.4f}" if isinstance(v, float) else str(v)


@testbed_app.command("run")
def run_cmd(
    scenario: Annotated[Path, typer.Argument(help="Scenario file (TOML).")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the result as JSON here.")] = None,
    pcap_dir: Annotated[Path | None, typer.Option("--pcap-dir", help="Keep the two router captures here.")] = None,
) -> None:
    """Run SCENARIO on the real kernel: namespaces, nginx, emulated link, captures."""
    result = _run(scenario, pcap_dir)
    if json_out:
        json_out.write_text(json.dumps(result, indent=2) + "\n")
    out.print(_table(f"{result['scenario']} — real kernel (run {result['run_id']})", [("real", result["connections"])]))


@testbed_app.command("clean")
def clean_cmd(
    force: Annotated[bool, typer.Option("--force", help="Also remove the objects of runs that are still running.")] = False,
    run_id: Annotated[str | None, typer.Option("--run", help="Only this run id's objects (the hex digits after sf-).")] = None,
) -> None:
    """Remove every sf-* object an earlier run left (namespaces, veths, rules, pins, dirs).
    A run whose process still runs is left alone unless --force."""
    from shortflow.testbed.clean import clean

    try:
        done = clean(force=force, only=run_id)
    except PrivilegeError as e:
        raise _fail(e, 2) from None
    for line in done:
        out.print(line if line.startswith("nothing of") else f"removed {line}", highlight=False)
    if not done:
        out.print("nothing to clean")


@testbed_app.command("compare")
def compare_cmd(
    scenario: Annotated[Path, typer.Argument(help="Scenario file (TOML).")],
    overrides: Annotated[list[str] | None, typer.Option("--set", help="key=value, as for `shortflow simulate`.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write both results and the verdicts as JSON here.")] = None,
    pcap_dir: Annotated[Path | None, typer.Option("--pcap-dir", help="Keep the real run's captures here.")] = None,
) -> None:
    """Run SCENARIO in the simulator and on the real kernel; print them side by side.

    Times agree within 5 % or 10 ms (the larger) plus the timer wheel's range for the
    timers the connection waited for, counts exactly (recoveries, probes, D-SACKs and RTOs
    against the kernel's own counters). Exit 0 when they agree
    (or the real kernel cannot run the scenario: the reason is printed), 1 when not."""
    from shortflow.testbed.compare import compare

    try:
        c = compare(scenario, overrides or [], pcap_dir)
    except (ScenarioError, PrivilegeError) as e:
        raise _fail(e, 2) from None
    except ShortflowError as e:
        raise _fail(e, 1) from None
    except KeyboardInterrupt:
        err.print("interrupted (Ctrl-C); everything the run created was removed")
        raise typer.Exit(130) from None
    if json_out:
        json_out.write_text(json.dumps(c.as_json(), indent=2) + "\n")
    worlds = [("sim", c.sim)] + ([("real", c.real)] if c.real is not None else [])
    out.print(_table(f"{c.scenario} — simulator vs real kernel", worlds, c.verdicts))
    if c.real is None:
        out.print(f"no real-kernel run: {c.unavailable}", highlight=False)
        return
    out.print("agree (times within 5 % or 10 ms, counts exact)" if c.agree else
              "[red]disagree[/]: see the ✗ columns", highlight=False)
    if not c.agree:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(testbed_app, name="testbed")
