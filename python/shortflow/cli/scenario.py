"""`shortflow scenario keys|schema`: the scenario file's reference, as the model generates
it (`shortflow.scenario`, from crates/scenario/src/schema.rs). Presentation only."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from shortflow import scenario
from shortflow.cli.common import check_output_file, emit_table, is_stdout, write_json, write_text

scenario_app = typer.Typer(help="The scenario file's reference: every key, and its JSON Schema.", no_args_is_help=True)


@scenario_app.command("keys")
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


@scenario_app.command("schema")
def schema_cmd(
    out: Annotated[Path, typer.Option("-o", "--out", help="Write the JSON Schema here (- for standard output).")] = Path("-"),
) -> None:
    """Write the JSON Schema of a scenario file (editors complete and check scenario files
    with it; shipped as shortflow/data/scenario.schema.json)."""
    check_output_file(out, "--out")
    write_text(out, scenario.json_schema(), "--out")


def register(app: typer.Typer) -> None:
    app.add_typer(scenario_app, name="scenario")
