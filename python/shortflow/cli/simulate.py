"""`shortflow simulate S.toml [--set key=value ...] [--pcap FILE] [--json FILE]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from shortflow.cli import common
from shortflow.cli.common import (
    FAILURE,
    INCOMPLETE,
    SCENARIO_HELP,
    USAGE,
    check_output_file,
    emit_table,
    examples,
    fail,
    is_stdout,
    note,
    progress,
    say,
    warn,
    write_json,
)
from shortflow.exceptions import ScenarioError, SimulationLimitError
from shortflow.scenario import Scenario
from shortflow.simulate import DEFAULT_MAX_EVENTS, SimulationResult, simulate

#: Rows shown before the table is cut (the JSON has them all).
MAX_ROWS = 30

#: Column heading → the report's key (see crates/sim/src/report.rs).
COLUMNS = {"conn": "id", "GET s": "request_sent_s", "done s": "complete_s", "SYN": "syn_transmissions",
           "SYN/ACK": "synack_transmissions", "rtx": "retransmissions", "RTO": "timeouts",
           "FR": "fast_retransmits", "dACK": "delayed_acks", "lost": "packets_dropped"}


def _s(x: Any) -> str:
    if x is None:
        return "–"
    return f"{x:.3f}" if isinstance(x, float) else str(x)


def print_connections(result: SimulationResult) -> None:
    conns = result.connections
    if conns:  # none kept with --totals-only: the summary lines alone
        emit_table(f"{result.scenario.name} ({result.scenario.source})", list(COLUMNS),
                   [[c[k] for k in COLUMNS.values()] for c in conns[:MAX_ROWS]],
                   right=[True] * len(COLUMNS), fmt=_s,
                   caption="GET s: request sent, done s: response complete (from the first SYN) · SYN, SYN/ACK: "
                           "transmissions · rtx: retransmitted segments · RTO: timer expiries · FR: fast "
                           "retransmits · dACK: delayed ACKs · lost: packets lost on the path")
    s = result.summary
    more = f" (first {MAX_ROWS} shown)" if len(conns) > MAX_ROWS else ""
    say(f"{s['connections']:,} connections{more} · {s['completed']:,} complete · mean complete "
        f"{_s(s['mean_complete_s'])} s · {s['events']:,} events over {s['simulated_s']:.3f} simulated s")
    for link in s.get("bottleneck", []):
        say(f"bottleneck {link['direction'].replace('_', ' ')}: {100 * link['utilisation']:.1f} % busy, "
            f"{link['drops']:,} drops")
    cal = s.get("calibration")
    if cal:
        say(f"load: target {100 * cal['target']:.1f} %, measured {100 * cal['measured']:.1f} % at "
            f"{cal['connections_per_second']:.2f} connections/s ({cal['runs']} runs)")


def register(app: typer.Typer) -> None:
    from shortflow.scenario import builtin_names

    shipped = "Shipped scenarios (run by name from any directory; `shortflow scenario show NAME`):\n" + \
        "\n".join(f"  {n}" for n in builtin_names())

    @app.command("simulate", epilog=shipped + "\n\n" + examples(
        "shortflow simulate 000-table4",
        "shortflow simulate 000-table4 --set drop.syn=[1,2] --json report.json",
        "shortflow simulate my-path.toml --set path.rtt=200ms --pcap client.pcap --flows flows.parquet"))
    def simulate_cmd(
        scenario: Annotated[Path, typer.Argument(help=SCENARIO_HELP)],
        sets: Annotated[Optional[list[str]], typer.Option("--set", help="override a key: --set path.rtt=100ms")] = None,
        pcap: Annotated[Optional[Path], typer.Option("--pcap", help="write what the capture point saw")] = None,
        json_out: Annotated[Optional[Path], typer.Option("--json", help="write the full report as JSON (- for standard output)")] = None,
        flows: Annotated[Optional[Path], typer.Option("--flows", help="write one row per connection as Parquet "
                                                                         "(the analyzer's column names)")] = None,
        quiet: Annotated[bool, typer.Option("-q", "--quiet", help="no table")] = False,
        max_memory: Annotated[Optional[str], typer.Option("--max-memory", help="stop cleanly beyond this much memory for the run, e.g. 2GB (default: a quarter of this machine's)")] = None,
        max_events: Annotated[int, typer.Option("--max-events", min=1, help="stop cleanly after this many events")] = DEFAULT_MAX_EVENTS,
        totals_only: Annotated[bool, typer.Option("--totals-only", help="keep no per-connection report, only the "
                                                                         "run's totals (memory follows the open connections)")] = False,
    ) -> None:
        """Simulate the connections a scenario file describes and print one row per connection.

        Exit status 3 when the run reached the scenario's time_limit with connections not
        complete (the warning is on stderr and in the JSON), 1 when it ended with none
        complete (every one given up)."""
        quiet = quiet or common.is_quiet()  # -q before the sub-command means the same
        if quiet:
            common.quiet()
        if pcap is not None:
            if is_stdout(pcap):
                fail("--pcap -: the capture is not written to standard output; give a file name", USAGE)
            check_output_file(pcap, "--pcap")
        if json_out is not None:
            check_output_file(json_out, "--json")
        if flows is not None:
            if totals_only:
                fail("--flows needs the per-connection reports that --totals-only does not keep", USAGE)
            check_output_file(flows, "--flows")
        try:
            sc = Scenario.load(scenario, sets or [])
            for n in sc.notes:
                note(n)
            with progress(f"simulating {sc.name}"):
                result = simulate(sc, pcap=pcap, max_memory=max_memory, max_events=max_events, totals_only=totals_only)
        except (ScenarioError, ValueError) as e:
            fail(e, USAGE)
        except SimulationLimitError as e:
            fail(e)
        except OSError as e:
            fail(f"{e.filename or scenario}: {e.strerror or e}")
        for w in result.warnings:
            warn(w)
        if json_out is not None:
            write_json(json_out, result.raw)
        if flows is not None:
            try:
                result.write_flows(flows)
            except OSError as e:
                fail(f"--flows {flows}: cannot write: {e.strerror or e}")
        if not quiet and not is_stdout(json_out):
            print_connections(result)
            if pcap is not None:
                say(f"capture ({result.raw['capture_point']} side): {pcap}")
        if result.incomplete:
            raise typer.Exit(INCOMPLETE)  # the time limit's warning says what to change
        s = result.summary
        if s["connections"] and not s["completed"]:
            # Not one connection finished (a path that loses everything, a server that never
            # answers): the figures above describe a failure, and the status says so.
            warn(f"none of the {s['connections']:,} connections completed: look at the losses and limits of "
                 f"{result.scenario.source}{' with ' + ' '.join('--set ' + o for o in result.scenario.overrides) if result.scenario.overrides else ''}")
            raise typer.Exit(FAILURE)
