"""`shortflow sweep S.toml --grid key=v1,v2 [--grid ...] [--seeds K] [-o out.parquet]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from shortflow.cli.common import SCENARIO_HELP, USAGE, emit_table, examples, fail, progress, say
from shortflow.exceptions import ScenarioError
from shortflow.scenario import Scenario


def register(app: typer.Typer) -> None:
    @app.command("sweep", epilog=examples(
        "shortflow sweep 002-initial-window --grid server.initial_window=2,4,10 -o iw.parquet",
        "shortflow sweep 001-sfr-web --grid workload.load=25%,50%,75% --seeds 5 --plot load.png"))
    def sweep_cmd(
        scenario: Annotated[Path, typer.Argument(help=SCENARIO_HELP)],
        grid: Annotated[list[str], typer.Option("--grid", help="key=v1,v2,...: one axis of the grid (repeatable)")],
        seeds: Annotated[int, typer.Option("--seeds", help="runs per grid point, seeds 1..K")] = 1,
        sets: Annotated[Optional[list[str]], typer.Option("--set", help="override a key in every run")] = None,
        output: Annotated[Path, typer.Option("-o", "--output", help="the results as one Parquet table")] = Path(
            "sweep.parquet"),
        flows: Annotated[bool, typer.Option("--flows", help="one row per connection instead of one per run")] = False,
        scheduler: Annotated[Optional[str], typer.Option("--scheduler", help="address of a running Dask "
                                                                             "scheduler (default: a local cluster)")] = None,
        workers: Annotated[Optional[int], typer.Option("--workers", help="processes of the local cluster "
                                                                         "(default: one per core)")] = None,
        plot: Annotated[Optional[Path], typer.Option("--plot", help="write a figure of --metric against --x")] = None,
        metric: Annotated[str, typer.Option("--metric", help="the column --plot shows")] = "mean_complete_s",
        x: Annotated[Optional[str], typer.Option("--x", help="the grid key on --plot's x axis "
                                                              "(default: the first --grid)")] = None,
    ) -> None:
        """Run a scenario over the product of parameter grids on Dask; one Parquet table."""
        from shortflow.sweeps import SUMMARY_COLUMNS, parse_grid, spread, sweep
        from shortflow.sweeps import plot as draw

        try:
            g = parse_grid(grid)
            if plot is not None and flows:
                raise ValueError("--plot draws per-run summaries: leave out --flows")
            xkey = x or next(iter(g))
            if xkey not in g:
                raise ValueError(f"--x {xkey}: not a --grid key ({', '.join(g)})")
            if plot is not None and metric not in SUMMARY_COLUMNS:
                raise ValueError(f"--metric {metric}: expected one of {', '.join(SUMMARY_COLUMNS)}")
            sc = Scenario.load(scenario, sets or [])
        except (ValueError, ScenarioError) as e:
            fail(e, USAGE)
        with progress("sweep") as step:
            try:
                table = sweep(sc, g, seeds, scheduler=scheduler, workers=workers, flows=flows,
                              progress=lambda d, t: step(d, t))
            except (ValueError, ScenarioError, OSError) as e:
                fail(e, USAGE)
        import sys

        import pyarrow.parquet as pq

        command = {b"command": " ".join(["shortflow", *sys.argv[1:]]).encode()}
        pq.write_table(table.replace_schema_metadata({**(table.schema.metadata or {}), **command}), str(output))
        say(f"{table.num_rows:,} rows → {output}")
        if not flows:
            rows = [[*(s[k] for k in g), s["mean"], s["ci95"], s["min"], s["max"]] for s in spread(table, metric, list(g))]
            emit_table(f"{metric} over {seeds} seed(s)", [*g, "mean", "95% CI ± (Student's t)", "min", "max"], rows,
                       right=[False] * len(g) + [True] * 4, fmt=lambda v: f"{v:.4g}" if isinstance(v, float) else str(v))
        if plot is not None:
            draw(table, metric, xkey, plot)
            say(f"figure → {plot}")
