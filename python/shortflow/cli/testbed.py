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
           "complete_s": "complete (s)", "retransmissions": "retrans.", "timeouts": "RTOs"}


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


def _table(title: str, rows: list[tuple[str, list[dict[str, Any]]]]) -> Table:
    t = Table(title=title)
    t.add_column("conn")
    t.add_column("world")
    for heading in COLUMNS.values():
        t.add_column(heading, justify="right")
    n = max(len(conns) for _, conns in rows)
    for i in range(n):
        for world, conns in rows:
            c = conns[i] if i < len(conns) else {}
            t.add_row(str(i + 1), world, *(_fmt(c.get(k)) for k in COLUMNS))
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
def clean_cmd() -> None:
    """Remove every sf-* object an earlier run left (namespaces, veths, rules, pins, dirs)."""
    from shortflow.testbed.clean import clean

    try:
        done = clean()
    except PrivilegeError as e:
        raise _fail(e, 2) from None
    for line in done:
        out.print(f"removed {line}", highlight=False)
    if not done:
        out.print("nothing to clean")


@testbed_app.command("compare")
def compare_cmd(
    scenario: Annotated[Path, typer.Argument(help="Scenario file (TOML).")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Write both results as JSON here.")] = None,
) -> None:
    """Run SCENARIO in the simulator and on the real kernel and print them side by side."""
    import shortflow

    simulate = getattr(shortflow, "simulate", None)
    if simulate is None:
        raise _fail(ShortflowError("the simulator is missing (`shortflow.simulate` is not in this build): "
                                   "compare needs the sim branch merged"), 1)
    real = _run(scenario, None)
    try:
        sim = simulate(str(scenario))
    except ShortflowError as e:
        raise _fail(e, 2) from None
    sim_dict = sim if isinstance(sim, dict) else getattr(sim, "to_dict", lambda: sim)()
    if json_out:
        json_out.write_text(json.dumps({"simulator": sim_dict, "real": real}, indent=2, default=str) + "\n")
    out.print(_table(f"{real['scenario']} — simulator vs real kernel",
                     [("sim", list(sim_dict.get("connections", []))), ("real", real["connections"])]))


def register(app: typer.Typer) -> None:
    app.add_typer(testbed_app, name="testbed")
