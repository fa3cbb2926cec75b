"""`shortflow testbed run|clean|compare`: the scenario on the real kernel in namespaces."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from shortflow.cli.common import (
    FAILURE,
    SCENARIO_HELP,
    USAGE,
    check_output_dir,
    check_output_file,
    emit_table,
    examples,
    fail,
    is_stdout,
    progress,
    say,
    write_json,
)
from shortflow.exceptions import PrivilegeError, ScenarioError, ShortflowError

testbed_app = typer.Typer(help="Run a scenario on the real Linux kernel (needs root).", no_args_is_help=True,
                          epilog=examples("sudo shortflow testbed compare 002-initial-window",
                                          "shortflow testbed plan 003-solaris", "sudo shortflow testbed clean"))

#: Result key → column heading.
COLUMNS = {"syn_transmissions": "SYNs", "synack_transmissions": "SYN/ACKs", "request_sent_s": "request (s)",
           "complete_s": "complete (s)", "retransmissions": "retrans.", "timeouts": "RTOs",
           "fast_retransmits": "recov.", "tlp_probes": "TLPs", "dsacks": "D-SACKs"}


def _run(scenario: Path, overrides: list[str], pcap_dir: Path | None) -> dict[str, Any]:
    from shortflow import testbed

    try:
        s = testbed.load(scenario, overrides)
        with progress("running on the real kernel"):
            result = testbed.run(s, str(pcap_dir) if pcap_dir else None)
        # What ran: the --set overrides on top of the file, as simulate's JSON has them.
        result["overrides"] = list(s.scenario.overrides) if s.scenario is not None else list(overrides)
        return result
    except (ScenarioError, PrivilegeError) as e:
        fail(e, USAGE)
    except ShortflowError as e:
        fail(e, FAILURE)
    except KeyboardInterrupt as e:
        fail(f"interrupted ({str(e) or 'Ctrl-C'}); everything the run created was removed", 130)


def _table(title: str, rows: list[tuple[str, list[dict[str, Any]]]],
           verdicts: list[dict[str, bool | None]] | None = None) -> None:
    """One row per connection and world, numbered from 0 as the simulator numbers them
    (its JSON's ``id``); with `verdicts`, a ✓/✗ after each figure of the real row (— where
    the real world could not measure it)."""
    n = max(len(conns) for _, conns in rows)
    mark = {True: "✓", False: "✗", None: "—"}
    table = []
    for i in range(n):
        for world, conns in rows:
            c = conns[i] if i < len(conns) else {}
            cells = [_fmt(c.get(k)) for k in COLUMNS]
            if verdicts and world == "real" and i < len(verdicts):
                cells = [f"{cell} {mark[verdicts[i].get(k)]}" for cell, k in zip(cells, COLUMNS)]
            table.append([str(c.get("id", i)), world, *cells])
    emit_table(title, ["conn", "world", *COLUMNS.values()], table, right=[False, False] + [True] * len(COLUMNS))


#: The phase of a connection each compared figure belongs to.
PHASES = {"syn_transmissions": "the handshake", "synack_transmissions": "the handshake",
          "request_sent_s": "the handshake", "complete_s": "the transfer", "retransmissions": "loss repair",
          "timeouts": "loss repair", "fast_retransmits": "loss repair", "tlp_probes": "loss repair",
          "dsacks": "loss repair"}


def disagreement(sim: list[dict[str, Any]], real: list[dict[str, Any]],
                 verdicts: list[dict[str, bool | None]], limit: int = 4) -> str:
    """Which phases differ and where: ``the handshake (conn 0: SYNs 1 simulated, 2 real)``,
    the phases in a connection's order, at most `limit` figures each."""
    by_phase: dict[str, list[str]] = {}
    for i, row in enumerate(verdicts):
        for key, ok in row.items():
            if ok is False:
                s = sim[i].get(key) if i < len(sim) else None
                r = real[i].get(key) if i < len(real) else None
                by_phase.setdefault(PHASES.get(key, key), []).append(
                    f"conn {i}: {COLUMNS.get(key, key)} {_fmt(s)} simulated, {_fmt(r)} real")
    order = list(dict.fromkeys(PHASES.values()))
    parts = []
    for phase in sorted(by_phase, key=lambda p: order.index(p) if p in order else len(order)):
        items = by_phase[phase]
        more = f"; {len(items) - limit} more" if len(items) > limit else ""
        parts.append(f"{phase} ({'; '.join(items[:limit])}{more})")
    return ", ".join(parts)


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    return f"{v:.4f}" if isinstance(v, float) else str(v)


def _check_outputs(json_out: Path | None, pcap_dir: Path | None) -> None:
    # Before minutes of real runs, not after.
    if json_out is not None:
        check_output_file(json_out, "--json")
    if pcap_dir is not None:
        check_output_dir(pcap_dir, "--pcap-dir")


@testbed_app.command("run", epilog=examples("sudo shortflow testbed run 000-table4 --set drop.syn=[1]",
                                            "sudo shortflow testbed run my.toml --json result.json --pcap-dir captures"))
def run_cmd(
    scenario: Annotated[Path, typer.Argument(help=SCENARIO_HELP)],
    overrides: Annotated[list[str] | None, typer.Option("--set", help="key=value, as for `shortflow simulate`.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the result as JSON here (- for standard output).")] = None,
    pcap_dir: Annotated[Path | None, typer.Option("--pcap-dir", help="Keep the two router captures here.")] = None,
) -> None:
    """Run SCENARIO on the real kernel: namespaces, nginx, emulated link, captures."""
    _check_outputs(json_out, pcap_dir)
    result = _run(scenario, overrides or [], pcap_dir)
    if json_out:
        write_json(json_out, result)
    if not is_stdout(json_out):
        _table(f"{result['scenario']} — real kernel (run {result['run_id']})", [("real", result["connections"])])


@testbed_app.command("plan", epilog=examples("shortflow testbed plan 002-initial-window",
                                             "shortflow testbed plan 003-solaris --set client.stack=linux --json -"))
def plan_cmd(
    scenario: Annotated[Path, typer.Argument(help=SCENARIO_HELP)],
    overrides: Annotated[list[str] | None, typer.Option("--set", help="key=value, as for `shortflow simulate`.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the plan as JSON here (- for standard output).")] = None,
) -> None:
    """Print how SCENARIO would be realised on this kernel, field by field: the sysctl,
    route metric or BPF hook that sets it, the kernel's own behaviour, or why it has no
    effect here. Exits 2 naming the field when Linux cannot run it. Needs no root."""
    from shortflow import testbed

    if json_out is not None:
        check_output_file(json_out, "--json")
    try:
        s = testbed.load(scenario, overrides or [])
    except ScenarioError as e:
        fail(e, USAGE)
    assert s.plan is not None
    if json_out:
        write_json(json_out, s.plan.as_json())
    if is_stdout(json_out):
        return
    rows = [[d.key, d.action, d.knob, d.value, d.why] for d in s.plan.decisions]
    emit_table(f"{s.name} — plan for the real kernel", ["field", "action", "knob", "value", "why"], rows)
    for role in ("client", "server"):
        p = s.plan.role(role)
        say(f"{role}: ip route ... {' '.join(p.route)}")
        for k, v in p.sysctls.items():
            say(f"{role}: sysctl {k}={v}")
        if p.syn_rto_s is not None:
            say(f"{role}: BPF sock_ops SYN RTO {p.syn_rto_s * 1000:g}ms")


@testbed_app.command("clean", epilog=examples("sudo shortflow testbed clean", "sudo shortflow testbed clean --run 1a2b3c"))
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
        fail(e, USAGE)
    for line in done:
        say(line if line.startswith("nothing of") else f"removed {line}")
    if not done:
        say("nothing to clean")


@testbed_app.command("compare", epilog=examples(
    "sudo shortflow testbed compare 002-initial-window",
    "sudo shortflow testbed compare 000-table4 --set drop.synack=[1] --json both.json"))
def compare_cmd(
    scenario: Annotated[Path, typer.Argument(help=SCENARIO_HELP)],
    overrides: Annotated[list[str] | None, typer.Option("--set", help="key=value, as for `shortflow simulate`.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write both results and the verdicts as JSON here (- for standard output).")] = None,
    pcap_dir: Annotated[Path | None, typer.Option("--pcap-dir", help="Keep the real run's captures here.")] = None,
) -> None:
    """Run SCENARIO in the simulator and on the real kernel; print them side by side.

    Times agree within 5 % or 10 ms (the larger) plus the timer wheel's range for the
    timers the connection waited for, counts exactly (recoveries, probes, D-SACKs and RTOs
    against the kernel's own counters). Exit 0 when they agree
    (or the real kernel cannot run the scenario: the reason is printed), 1 when not."""
    from shortflow.testbed.compare import compare

    _check_outputs(json_out, pcap_dir)
    try:
        with progress("simulating, then running on the real kernel"):
            c = compare(scenario, overrides or [], pcap_dir)
    except (ScenarioError, PrivilegeError) as e:
        fail(e, USAGE)
    except ShortflowError as e:
        fail(e, FAILURE)
    except KeyboardInterrupt:
        fail("interrupted (Ctrl-C); everything the run created was removed", 130)
    if json_out:
        write_json(json_out, c.as_json())
    if is_stdout(json_out):
        if c.real is not None and not c.agree:
            fail(f"simulator and real kernel disagree in {disagreement(c.sim, c.real, c.verdicts)}", FAILURE)
        return
    worlds = [("sim", c.sim)] + ([("real", c.real)] if c.real is not None else [])
    _table(f"{c.scenario} — simulator vs real kernel", worlds, c.verdicts)
    if c.real is None:
        say(f"no real-kernel run: {c.unavailable}")
        return
    say("agree (times within 5 % or 10 ms, counts exact)" if c.agree
        else f"disagree in {disagreement(c.sim, c.real, c.verdicts)}")
    if not c.agree:
        raise typer.Exit(FAILURE)


def register(app: typer.Typer) -> None:
    app.add_typer(testbed_app, name="testbed")
