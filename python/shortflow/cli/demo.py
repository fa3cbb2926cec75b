"""`shortflow demo`: the main job on built-in data."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Annotated

import typer

from shortflow.cli.common import check_output_dir, examples, say

#: Made by `shortflow generate` (see python/shortflow/data/README.md for the command).
DEMO_TRACE = "demo-server-2008.pcap.gz"


def register(app: typer.Typer) -> None:
    @app.command("demo", epilog=examples("shortflow demo", "shortflow demo --out /tmp/demo"))
    def demo_cmd(
        out_dir: Annotated[Path, typer.Option("--out", help="where the plot goes")] = Path("out/demo"),
    ) -> None:
        """Analyze the trace shipped with shortflow (Table 1 and the plot's path), then run
        the shipped scenarios and print every paper figure beside the simulator's."""
        from shortflow.analyze import analyze
        from shortflow.cli.analyze import print_table1
        from shortflow.cli.reproduce import print_rows
        from shortflow.plot.gaps import duplicate_gap_histogram
        from shortflow.reproduce import DOCUMENTS, SLOW_DOCUMENTS, reproduce

        check_output_dir(out_dir, "--out")
        trace = resources.files("shortflow") / "data" / DEMO_TRACE
        with resources.as_file(trace) as path:
            say(f"== shortflow analyze {DEMO_TRACE}")
            result = analyze(path)
            print_table1(result)
            plot = duplicate_gap_histogram(result.table, out_dir / "duplicate-syn-gaps.png").path
            say(f"plot of duplicate-SYN gaps: {plot}")
            fast = [d for d in DOCUMENTS if d not in SLOW_DOCUMENTS]
            say(f"== shortflow reproduce {' '.join(fast)}")
            print_rows(reproduce(fast))
            say(f"documents {' and '.join(SLOW_DOCUMENTS)} (aggregate web traffic): "
                f"`shortflow reproduce {SLOW_DOCUMENTS[0]}` (minutes) or `--quick`")
