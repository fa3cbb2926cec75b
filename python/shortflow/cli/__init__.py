"""The `shortflow` command: one Typer app, one module per sub-command.

Each module in ``COMMAND_MODULES`` defines ``register(app: typer.Typer) -> None`` and is
imported only here, so ``shortflow --help`` stays fast and a new command is one line.
"""

from __future__ import annotations

import importlib

import typer

COMMAND_MODULES = (
    "shortflow.cli.analyze",
    "shortflow.cli.graph",
    "shortflow.cli.generate",
    "shortflow.cli.demo",
    "shortflow.cli.simulate",
    "shortflow.cli.reproduce",
    "shortflow.cli.testbed",
    "shortflow.cli.tune",
    "shortflow.cli.synopt",
)

app = typer.Typer(
    name="shortflow",
    help="Find and remove the start-up delays of short TCP connections.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def main() -> None:
    app()
