"""`shortflow simulate S.toml [--set key=value ...] [--pcap FILE] [--json FILE]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from shortflow.exceptions import ScenarioError
from shortflow.scenario import Scenario
from shortflow.simulate import SimulationResult, simulate

err = Console(stderr=True)
out = Console()

#: Rows shown before the table is cut (the JSON has them all).
MAX_ROWS = 30


def _s(x: Any) -> str:
    return "–" if x is None else f"{x:.3f}"


def print_connections(result: SimulationResult, console: Console = out) -> None:
    conns = result.connections
    t = Table(title=f"{result.scenario.name} ({result.scenario.source})", title_justify="left")
    for name in ("conn", "GET s", "done s", "SYN", "SYN/ACK", "rtx", "RTO", "FR", "dACK", "lost"):
        t.add_column(name, justify="right")
    for c in conns[:MAX_ROWS]:
        t.add_row(
            str(c["id"]),
            _s(c["request_sent_s"]),
            _s(c["complete_s"]),
            str(c["syn_transmissions"]),
            str(c["synack_transmissions"]),
            str(c["retransmissions"]),
            str(c["timeouts"]),
            str(c["fast_retransmits"]),
            str(c["delayed_acks"]),
            str(c["packets_dropped"]),
        )
    console.print(t)
    console.print(
        "GET s: request sent, done s: response complete (from the first SYN) · SYN, SYN/ACK: "
        "transmissions · rtx: retransmitted segments · RTO: timer expiries · FR: fast "
        "retransmits · dACK: delayed ACKs · lost: packets lost on the path",
        style="dim",
    )
    s = result.summary
    more = f" (first {MAX_ROWS} shown)" if len(conns) > MAX_ROWS else ""
    console.print(
        f"{s['connections']:,} connections{more} · {s['completed']:,} complete · mean complete "
        f"{_s(s['mean_complete_s'])} s · {s['events']:,} events over {s['simulated_s']:.3f} simulated s"
    )
    for link in s.get("bottleneck", []):
        console.print(f"bottleneck {link['direction'].replace('_', ' ')}: {100 * link['utilisation']:.1f} % busy, "
                      f"{link['drops']:,} drops")
    cal = s.get("calibration")
    if cal:
        console.print(f"load: target {100 * cal['target']:.1f} %, measured {100 * cal['measured']:.1f} % at "
                      f"{cal['connections_per_second']:.2f} connections/s ({cal['runs']} runs)")


def register(app: typer.Typer) -> None:
    @app.command("simulate")
    def simulate_cmd(
        scenario: Annotated[Path, typer.Argument(help="scenario file (TOML)")],
        sets: Annotated[Optional[list[str]], typer.Option("--set", help="override a key: --set path.rtt=100ms")] = None,
        pcap: Annotated[Optional[Path], typer.Option("--pcap", help="write what the capture point saw")] = None,
        json_out: Annotated[Optional[Path], typer.Option("--json", help="write the full report as JSON")] = None,
        flows: Annotated[Optional[Path], typer.Option("--flows", help="write one row per connection as Parquet "
                                                                         "(the analyzer's column names)")] = None,
        quiet: Annotated[bool, typer.Option("-q", "--quiet", help="no table")] = False,
    ) -> None:
        """Simulate the connections a scenario file describes and print one row per connection."""
        try:
            sc = Scenario.load(scenario, sets or [])
            result = simulate(sc, pcap=pcap)
        except ScenarioError as e:
            err.print(f"[red]error:[/red] {e}", highlight=False)
            raise typer.Exit(2) from None
        except OSError as e:
            err.print(f"[red]error:[/red] {e}", highlight=False)
            raise typer.Exit(2) from None
        try:
            if json_out is not None:
                json_out.write_text(result.to_json())
            if flows is not None:
                result.write_flows(flows)
        except OSError as e:
            err.print(f"[red]error:[/red] {e}", highlight=False)
            raise typer.Exit(2) from None
        if not quiet:
            print_connections(result)
            if pcap is not None:
                out.print(f"capture ({result.raw['capture_point']} side): {pcap}")
