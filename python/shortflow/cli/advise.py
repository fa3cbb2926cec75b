"""`shortflow advise TRACE...`: which start-up fix gives a capture's users their time back,
how much, and the command that applies it (`shortflow.advise` replays; this presents)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from shortflow.cli.common import (
    FAILURE,
    USAGE,
    check_output_dir,
    check_output_file,
    clip,
    emit_table,
    error,
    examples,
    fail,
    is_stdout,
    say,
    write_json,
)

if TYPE_CHECKING:
    from shortflow.advise import Advice


def _g(x: float) -> str:
    return f"{x:.3g}"


def _est(x: float, ci: tuple[float, float]) -> str:
    return f"{_g(x)} [{_g(ci[0])}, {_g(ci[1])}]"


def print_advice(adv: Advice) -> None:
    n = adv.connections
    say(f"{n:,} connections with data, seen near the {adv.vantage}: fixes of the {adv.vantage}'s host")
    say(f"baseline: {adv.faithful:,} of {n:,} ({adv.faithful_share:.0%}) replay within 10 % of their observed duration; "
        "only those feed the estimates")
    # The neighbours' seconds where some fix was replayed together (else no column of dashes).
    together = any(f.get("neighbours_s") is not None for f in adv.fixes)
    rows: list[list[Any]] = []
    for k, f in enumerate(adv.fixes, 1):
        harm = f"{f['extra_packets']} · {f['spurious_retransmissions']} · {f['connections_slower']}"
        if together:
            harm += " · " + (_g(f["neighbours_s"]) if f.get("neighbours_s") is not None else "–")
        rows.append([k, f["fix"], f["connections_helped"], _est(f["saved_s_total"], f["saved_s_total_ci"]),
                     _est(f["saved_s_median"], f["saved_s_median_ci"]), _est(f["saved_s_p95"], f["saved_s_p95_ci"]), harm])
    emit_table(f"fixes, best first: seconds saved [bootstrap 95 %] on the {adv.faithful_share:.0%} replayed faithfully",
               ["#", "fix", "helped", "total s", "median s", "p95 s", "harm"], rows,
               right=[True, False, True, True, True, True, True],
               caption="helped: connections made faster · median, p95: per connection · harm: extra packets · "
                       "spurious retransmissions · connections made slower"
                       + (" · seconds the neighbours lost (–: not replayed together)" if together else ""))
    for k, f in enumerate(adv.fixes, 1):
        say(f"{k:>2}. {f['apply']}")
    print_shared(adv)
    for why, count in sorted(adv.reasons.items(), key=lambda kv: -kv[1]):
        say(f"not faithful: {count:,} — {why}")
    for c in adv.caveats:
        say(f"note: {c}")
    say(f"{adv.replays:,} connection replays")


def print_shared(adv: Advice) -> None:
    """What the shared dumbbell's replay found: the groups, each fix's saving together
    beside alone, and the overlaps it could not replay."""
    s = adv.shared
    if s is None:
        return
    if s["groups"] and not s["replayed"]:
        plural = "" if s["groups"] == 1 else "s"
        say(f"shared dumbbell: {s['connections']:,} connections in {s['groups']:,} group{plural} overlapped on one path "
            f"with a measured bottleneck; no fix of the {adv.vantage}'s host changes the server's flights: not replayed "
            "together")
    elif s["groups"]:
        plural = "" if s["groups"] == 1 else "s"
        say(f"shared dumbbell: {s['connections']:,} connections in {s['groups']:,} group{plural} overlapped on one path "
            f"with a measured bottleneck, replayed together ({s['faithful']:,} held by the group's replay)")
        for f in adv.fixes:
            if (r := f.get("shared_replay")) is not None:
                say(f"  {f['fix']}: together {_g(r['saved_s_shared'])} s saved, alone {_g(r['saved_s_lone'])} s, "
                    f"over {r['connections']:,} connections; their neighbours cost them {_g(f['neighbours_s'])} s")
    else:
        say("shared dumbbell: no connections overlapped on one path with a measured bottleneck")
    if s["not_known"]:
        say(f"shared dumbbell: {s['not_known']:,} connections overlapped others at their server from other clients, or "
            "on a path without a measured rate: not replayed together (their shared bottleneck is not known)")
    if s["left_out"]:
        say(f"shared dumbbell: {s['left_out']:,} overlapping connections left out past the replay's limit")
    for why, count in s["not_loaded_reasons"].items():
        say(f"shared dumbbell: {count:,} groups not replayed, their scenario did not load: {why}")


def _write_report(traces: list[Path], adv: Advice, out: Path, scheduler: str | None) -> Path:
    """The analysis' report of `traces` with what would help. The rest of the page (the
    worst connections, the distributions) needs the whole table: this reads the captures
    again (on the cluster at `scheduler`, if given), and holds their table as `analyze
    --report` does."""
    from shortflow.analyze import analyze, summary_document
    from shortflow.report import write_report

    a = analyze([str(t) for t in traces], scheduler=scheduler)
    return write_report(a, summary_document(a), out, traces=list(traces), advice=adv)


def register(app: typer.Typer) -> None:
    @app.command("advise", epilog=examples("shortflow advise server.pcap",
                                           "shortflow advise server.pcap --json advice.json --out advice/",
                                           "shortflow advise server.pcap --report report/",
                                           "shortflow advise /data/day1.pcap /data/day2.pcap --scheduler tcp://10.0.0.1:8786",
                                           "shortflow advise server.pcap --explain 12 > conn-12.toml && shortflow simulate conn-12.toml"))
    def advise_cmd(
        traces: Annotated[list[Path], typer.Argument(help="pcap or pcapng files, plain or gzip", dir_okay=False)],
        vantage: Annotated[Optional[str], typer.Option("--vantage", metavar="server|client", help="whose host to fix: where the capture was taken (default: as the analyzer infers it from the handshakes)")] = None,
        json_out: Annotated[Optional[Path], typer.Option("--json", metavar="FILE", help="write the ranked fixes and the replay's fidelity as JSON (- for standard output)")] = None,
        out: Annotated[Optional[Path], typer.Option("--out", metavar="DIR", help="write connections.parquet (observed and replayed durations, faithful or why not) and savings.parquet (each fix's saving per connection)")] = None,
        report: Annotated[Optional[Path], typer.Option("--report", metavar="DIR", help="write the analysis' HTML report (report.html) into this directory, with what would help: the fixes ranked and the share of connections replayed faithfully")] = None,
        explain: Annotated[Optional[int], typer.Option("--explain", metavar="CONN", min=0, help="print connection CONN's model as a scenario (TOML) for `shortflow simulate`, instead of advising")] = None,
        threads: Annotated[Optional[int], typer.Option("--threads", min=1, metavar="N", help="replay on this many threads (default: every core; with --scheduler, per task: 1)")] = None,
        scheduler: Annotated[Optional[str], typer.Option("--scheduler", metavar="ADDRESS", help="address of a running Dask scheduler: each trace's passes are tasks on its workers (which must see the traces at the same paths), with the advice a local run gives")] = None,
    ) -> None:
        """Replay each connection of a capture under every start-up fix its vantage's host
        can apply (SYN RTO, SYN optimizer, initial window, quick ACKs, minimum RTO, SFR, and
        pairs of the best three) and rank them by the time they give back."""
        from shortflow.advise import AdviseError, advise
        from shortflow.advise import explain as explain_scenario
        from shortflow.exceptions import ShortflowError

        for t in traces:
            if t.is_dir():
                fail(f"{clip(t)}: is a directory, not a trace", USAGE)
            if not t.exists():
                fail(f"{clip(t)}: no such file", USAGE)
        if vantage is not None and vantage not in ("server", "client"):
            fail(f"--vantage {clip(vantage)!r}: expected server or client", USAGE)
        if json_out is not None and not is_stdout(json_out):
            check_output_file(json_out, "--json")
        if out is not None:
            check_output_dir(out, "--out")
        if report is not None:
            check_output_dir(report, "--report")
        paths = [str(t) for t in traces]
        try:
            if explain is not None:
                sys.stdout.write(explain_scenario(paths, explain, vantage))
                return
            adv = advise(paths, vantage, threads, out, scheduler)
        except AdviseError as e:
            fail(e, USAGE)
        except ShortflowError as e:
            fail(e, FAILURE)
        for message in adv.errors:
            error(f"{message} — advised on the connections read before it")
        if json_out is not None:
            write_json(json_out, adv.document())
        page = None
        if report is not None:
            page = _write_report(traces, adv, report, scheduler)
        if not is_stdout(json_out):
            print_advice(adv)
            if adv.written:
                say("per connection: " + ", ".join(str(p) for p in adv.written))
            if page is not None:
                say(f"report: {page}")
        if adv.errors:
            raise typer.Exit(FAILURE)

