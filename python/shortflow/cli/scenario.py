"""`shortflow scenario list|show|keys|schema`: the shipped scenarios, one scenario as written
or resolved, and the scenario file's reference as the model generates it
(`shortflow.scenario`, from crates/scenario/src/schema.rs). Presentation only."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from shortflow import scenario
from shortflow.cli.common import (
    SCENARIO_HELP,
    USAGE,
    check_output_file,
    emit_table,
    examples,
    fail,
    is_stdout,
    write_json,
    write_text,
)
from shortflow.exceptions import ScenarioError

scenario_app = typer.Typer(help="The shipped scenarios, one scenario as written or resolved, every key and the JSON Schema.",
                           no_args_is_help=True, epilog=examples("shortflow scenario list",
                                                                 "shortflow scenario show 000-table4 --resolved",
                                                                 "shortflow scenario keys"))


def _source(text: str) -> str:
    """Where a shipped file comes from, as its first comment says it: the clause before
    the first colon ("Document 001, sections 6-7"), cut at a comma when long."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("# ").strip())
    clause = " ".join(lines).split(": ", 1)[0].split(". ", 1)[0]
    return clause if len(clause) <= 70 else clause.split(", ", 1)[0]


@scenario_app.command("list", epilog=examples("shortflow scenario list"))
def list_cmd() -> None:
    """List the scenarios shipped with shortflow: each runs by its name from any directory."""
    rows = []
    for name in scenario.builtin_names():
        sc = scenario.Scenario.builtin(name)
        rows.append([name, sc.name, _source(sc.text)])
    emit_table("shipped scenarios (shortflow scenario show NAME)", ["name", "title", "source"], rows)


@scenario_app.command("show", epilog=examples("shortflow scenario show 002-initial-window",
                                               "shortflow scenario show 000-table4 --resolved --set client.stack=linux"))
def show_cmd(
    name: Annotated[str, typer.Argument(metavar="SCENARIO", help=SCENARIO_HELP)],
    resolved: Annotated[bool, typer.Option("--resolved", help="print the scenario as the simulator runs it: every default and "
                                                                 "stack-profile value filled in, as numbers (ns, bytes, bit/s), JSON")] = False,
    sets: Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help="override a key, as for simulate")] = None,
) -> None:
    """Print a scenario file as written (comments included), or with --resolved every value
    it runs with."""
    try:
        sc = scenario.Scenario.load(name, sets or [])
    except ScenarioError as e:
        fail(e, USAGE)
    if not resolved:
        if sets:
            fail("--set changes the resolved scenario: add --resolved", USAGE)
        typer.echo(sc.text, nl=not sc.text.endswith("\n"))
        return
    write_json("-", scenario.resolved(sc))


@scenario_app.command("keys", epilog=examples("shortflow scenario keys", "shortflow scenario keys --json keys.json"))
def keys_cmd(
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the Markdown table of docs/scenario.md.")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the keys as JSON here (- for standard output).")] = None,
) -> None:
    """Print every scenario key: type, unit, default, range and help. `{side}.` stands for
    `client.` and `server.`; a host key defaults to its stack profile's value."""
    if json_out is not None:
        check_output_file(json_out, "--json")
        write_json(json_out, scenario.keys())
        if is_stdout(json_out):
            return
    if markdown:
        typer.echo(scenario.keys_markdown(), nl=False)
        return
    rows = [[k["key"], k["kind"], k["unit"], k["default"], k["range"], k["help"]] for k in scenario.keys()]
    emit_table("scenario keys", ["key", "type", "unit", "default", "range", "help"], rows)


@scenario_app.command("schema", epilog=examples("shortflow scenario schema -o scenario.schema.json"))
def schema_cmd(
    out: Annotated[Path, typer.Option("-o", "--out", help="Write the JSON Schema here (- for standard output).")] = Path("-"),
) -> None:
    """Write the JSON Schema of a scenario file (editors complete and check scenario files
    with it; shipped as shortflow/data/scenario.schema.json)."""
    check_output_file(out, "--out")
    write_text(out, scenario.json_schema(), "--out")


def register(app: typer.Typer) -> None:
    app.add_typer(scenario_app, name="scenario")
