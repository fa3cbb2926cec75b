"""The command line as a newcomer meets it: help that explains itself, scenario
errors that point at the fix, results that say how they were made, and pipes, failures
and Ctrl-C that end the way a shell user expects. Each test looks at what the user sees:
the exit status, the words on stderr, the files written."""

from __future__ import annotations

import io
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import shortflow
import shortflow.testbed.compare
from shortflow.cli import command, common, run
from shortflow.reproduce import RUNS, reproduce
from shortflow.scenario import builtin_names
from shortflow.stats import t975
from shortflow.testbed.compare import Comparison

SHORTFLOW = [sys.executable, "-m", "shortflow"]


def invoke(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = run(list(argv))
    return code, out.getvalue(), err.getvalue()


def cli(*args: str, cwd: Path | None = None, timeout: float = 120, **kw: Any) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "250"}
    return subprocess.run([*SHORTFLOW, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env, **kw)


def commands() -> list[tuple[tuple[str, ...], Any]]:
    """Every command of the tree with its path: groups and leaves."""
    out = []

    def walk(path: tuple[str, ...], cmd: Any) -> None:
        out.append((path, cmd))
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            walk((*path, name), sub)

    walk((), command())
    return out


GROUPS = [path for path, cmd in commands() if getattr(cmd, "commands", None)]
ALL = [path for path, _ in commands()]
LEAVES = [path for path, cmd in commands() if not getattr(cmd, "commands", None)]


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("front") / "t.pcap"
    shortflow.generate(path, connections=300, seed=5, syn_loss=0.1, synack_loss=0.05)
    return path


# -- help ------------------------------------------------------------------------------

@pytest.mark.parametrize("group", GROUPS, ids=lambda p: " ".join(p) or "shortflow")
def test_each_summary_in_a_listing_is_its_whole_first_sentence_on_one_line(group: tuple[str, ...]) -> None:
    r = cli(*group, "--help")
    assert r.returncode == 0, r.stderr
    tree = dict(commands())
    for name, sub in tree[group].commands.items():
        if sub.hidden:
            continue
        paragraph = " ".join(sub.help.split("\n\n")[0].split())
        summary = re.split(r"(?<=[.!?]) (?=[A-Z`])", paragraph, maxsplit=1)[0]
        row = next((line for line in r.stdout.splitlines() if re.match(rf"│ {re.escape(name)} ", line)), None)
        assert row is not None, (name, r.stdout)
        # The whole sentence on the command's own row, not cut at the docstring's line end.
        assert summary in " ".join(row.strip("│ ").split()), (name, summary, row)


def examples_of(epilog: str) -> list[list[str]]:
    """The command lines under "Examples:", as shortflow's arguments ("sudo" and a
    producer piping into shortflow left out)."""
    lines = epilog.split("Examples:", 1)[1].splitlines()
    out = []
    for line in lines:
        if "shortflow " not in line:
            continue
        line = line[line.index("shortflow "):]
        words = shlex.split(line.split(" | ")[0])
        out.append(words[1:])
    return out


@pytest.mark.parametrize("path", ALL, ids=lambda p: " ".join(p) or "shortflow")
def test_every_help_has_examples_that_name_real_options(path: tuple[str, ...]) -> None:
    code, out, err = invoke(*path, "--help")
    assert code == 0, err
    assert "Examples:" in out, out
    found = examples_of(dict(commands())[path].epilog)
    assert found, out
    for words in found:
        # The example is this command's (or, for the whole tool, any command's) ...
        assert [w for w in words if not w.startswith("-")][: len(path)] == list(path), (path, words)
        # ... and click accepts every option in it: --help, eager, ends the command once
        # the line is parsed. Put right after the command's name, so that nothing runs
        # even if the line's last option lacked its value.
        cmd, at = command(), 0
        while at < len(words) and words[at] in ("-v", "-vv", "-q"):  # the tool's own flags
            at += 1
        while at < len(words) and words[at] in (getattr(cmd, "commands", None) or {}):
            cmd = cmd.commands[words[at]]
            at += 1
        code, out2, err2 = invoke(*words[:at], "--help", *words[at:])
        assert code == 0 and "Usage:" in out2, (words, err2)


TYPER_PLACEHOLDERS = re.compile(r"<(?:int|str|text|path|float|integer|int range|float range|choice)>|\bINTEGER\b|\bTEXT\b")


@pytest.mark.parametrize("path", ALL, ids=lambda p: " ".join(p) or "shortflow")
def test_placeholders_are_one_style(path: tuple[str, ...]) -> None:
    code, out, _ = invoke(*path, "--help")
    assert code == 0
    usage = next(line for line in out.splitlines() if "Usage:" in line)
    assert not re.search(r"\{[a-z_]+\}", usage), usage
    assert not TYPER_PLACEHOLDERS.search(out), TYPER_PLACEHOLDERS.search(out)
    cmd = dict(commands())[path]
    ctx = command().make_context("shortflow", ["--help"], resilient_parsing=True)
    for p in cmd.params:
        if getattr(p, "is_flag", False) or getattr(p, "count", False) or getattr(p, "hidden", False):
            continue
        mv = p.make_metavar(ctx)
        assert re.fullmatch(r"\[?[A-Z][A-Z0-9_=,.…\[\]|]*\]?|[a-z]+(\|[a-z]+)+", mv), (path, p.name, mv)


def test_verbose_is_a_flag_and_counts() -> None:
    code, out, _ = invoke("--help")
    row = next(line for line in out.splitlines() if "--verbose" in line)
    assert "int" not in row.lower() and "default" not in row, row
    code, _, err = invoke("-vv", "scenario", "list")
    assert code == 0, err


@pytest.mark.parametrize("where", ["before", "after"])
def test_v_and_q_are_taken_before_and_after_the_sub_command(where: str, trace: Path) -> None:
    def line(flags: list[str], *cmd: str) -> tuple[int, str, str]:
        return invoke(*flags, *cmd) if where == "before" else invoke(*cmd, *flags)

    for flags in (["-v"], ["-vv"], ["-q"], ["-v", "-q"]):
        for cmd in (("scenario", "list"), ("testbed", "plan", "002-initial-window"), ("reproduce", "002"),
                    ("synopt", "status")):
            code, out, err = line(flags, *cmd)
            assert code == 0, (flags, cmd, err)
    # -q means the same on either side: analyze prints no table.
    code, out, err = line(["-q"], "analyze", str(trace))
    assert code == 0 and out == "", (where, out)
    code, out, err = line(["-q"], "simulate", "000-table4")
    assert code == 0 and out == "", (where, out)


def test_simulate_help_lists_the_shipped_scenarios() -> None:
    code, out, _ = invoke("simulate", "--help")
    assert code == 0
    for name in builtin_names():
        assert name in out, name


# -- scenario list / show --------------------------------------------------------------

def test_scenario_list_names_every_shipped_scenario_and_what_it_is() -> None:
    code, out, err = invoke("scenario", "list")
    assert code == 0, err
    rows = {line.split("\t")[0]: line.split("\t") for line in out.splitlines() if not line.startswith("#")}
    for name in builtin_names():
        assert name in rows, name
        assert rows[name][1] == shortflow.Scenario.builtin(name).name
    assert rows["000-table4"][2].startswith("Document 000"), rows["000-table4"]


def test_scenario_show_prints_the_file_and_resolved_gives_the_profiles_numbers() -> None:
    code, out, _ = invoke("scenario", "show", "002-initial-window")
    assert code == 0 and out == shortflow.Scenario.builtin("002-initial-window").text
    code, out, err = invoke("scenario", "show", "000-table4", "--resolved")
    assert code == 0, err
    doc = json.loads(out)
    # 2008's stacks: RFC 2988's initial RTO of 3 s, as a number of nanoseconds.
    assert doc["client"]["profile"] == "rfc2988" and doc["client"]["rto"]["initial"] == 3_000_000_000
    code, out, _ = invoke("scenario", "show", "000-table4", "--resolved", "--set", "client.stack=linux")
    assert json.loads(out)["client"]["rto"]["initial"] == 1_000_000_000
    code, _, err = invoke("scenario", "show", "no-such-scenario")
    assert code == 2 and "no-such-scenario" in err


# -- scenario errors ------------------------------------------------------------------

@pytest.mark.parametrize(("override", "meant"), [
    ("path.bandwith=1Mbit", "path.bandwidth"),
    ("clent.stack=linux", "client.stack"),
    ("client.initial_windw=2", "client.initial_window"),
    ("workload.respons=10kB", "workload.response"),
])
def test_a_mistyped_key_on_set_names_set_and_the_key_meant(override: str, meant: str) -> None:
    code, _, err = invoke("simulate", "000-table4", "--set", override)
    assert code == 2, err
    assert f"--set {override}" in err and f"did you mean {meant}?" in err, err
    assert "000-table4.toml" not in err and "…" not in err, err


def test_a_mistyped_key_in_the_file_names_the_file(tmp_path: Path) -> None:
    s = tmp_path / "s.toml"
    s.write_text('[path]\nrtt = "1ms"\nbandwith = "1Mbit"\n')
    code, _, err = invoke("simulate", str(s), "--set", "path.rtt=2ms")
    assert code == 2 and f"{s}: path.bandwith: unknown key; did you mean path.bandwidth?" in err, err
    assert "--set" not in err.split("(")[0], err


def test_a_mistyped_grid_key_names_grid(tmp_path: Path) -> None:
    code, _, err = invoke("sweep", "000-table4", "--grid", "drop.sin=[1],[2]", "-o", str(tmp_path / "x.parquet"))
    assert code == 2 and "--grid drop.sin=[1]" in err and "did you mean drop.syn?" in err, err


# -- reproducibility ------------------------------------------------------------------

def test_simulate_records_its_overrides_in_the_json_and_the_flows(tmp_path: Path) -> None:
    flows = tmp_path / "f.parquet"
    code, out, err = invoke("simulate", "000-table4", "--set", "drop.syn=[1]", "--set", "path.rtt=20ms",
                            "--json", "-", "--flows", str(flows))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["overrides"] == ["drop.syn=[1]", "path.rtt=20ms"] and doc["scenario_source"] == "scenarios/000-table4.toml"
    meta = pq.read_metadata(flows).metadata
    assert json.loads(meta[b"overrides"]) == ["drop.syn=[1]", "path.rtt=20ms"]
    assert meta[b"scenario"] == b"scenarios/000-table4.toml"


SMALL = """
time_limit = "20s"
[path]
rtt = "50ms"
bandwidth = "10Mbit"
[random_loss]
forward = 0.1
[workload]
response = "30kB"
connections = 6
interval = "10ms"
"""


def test_sweep_types_its_grid_keeps_its_making_and_intervals_are_students_t(tmp_path: Path) -> None:
    s = tmp_path / "small.toml"
    s.write_text(SMALL)
    out = tmp_path / "s.parquet"
    r = cli("sweep", str(s), "--grid", "workload.connections=2,4,10", "--grid", "path.rtt=50ms,200ms", "--seeds", "3",
            "--workers", "1", "--set", "random_loss.reverse=0.05", "-o", str(out), timeout=300)
    assert r.returncode == 0, r.stderr
    t = pq.read_table(out)
    assert str(t.schema.field("workload.connections").type) == "int64"
    assert str(t.schema.field("path.rtt").type) == "double"
    assert (t.schema.field("path.rtt").metadata or {})[b"unit"] == b"s"
    assert sorted(set(t.column("path.rtt").to_pylist())) == [0.05, 0.2]
    meta = t.schema.metadata
    assert json.loads(meta[b"grid"]) == {"workload.connections": ["2", "4", "10"], "path.rtt": ["50ms", "200ms"]}
    assert json.loads(meta[b"overrides"]) == ["random_loss.reverse=0.05"] and meta[b"seeds"] == b"3"
    assert b"sweep" in meta[b"command"]
    # The printed interval: t_{0.975, 2} · sd / √3 of the three seeds' means, per point.
    printed = {}
    for line in r.stdout.splitlines():
        cells = line.split("\t")
        if len(cells) == 6 and cells[0] != "workload.connections":
            printed[(int(cells[0]), float(cells[1]))] = float(cells[3])
    assert len(printed) == 6, r.stdout
    rows = t.to_pylist()
    for (n, rtt), ci in printed.items():
        xs = [x["mean_complete_s"] for x in rows if x["workload.connections"] == n and x["path.rtt"] == rtt]
        m = sum(xs) / 3
        sd = math.sqrt(sum((x - m) ** 2 for x in xs) / 2)
        assert ci == pytest.approx(t975(2) * sd / math.sqrt(3), rel=1e-6), (n, rtt, xs, ci)
    assert any(ci > 0 for ci in printed.values())


# -- pipes and failures -------------------------------------------------------------------

def test_out_dash_writes_the_table_to_standard_output(trace: Path, tmp_path: Path) -> None:
    r = cli("analyze", str(trace), "--out", "-", "--format", "jsonl", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(rows) >= 300 and all("conn_id" in row for row in rows)
    assert not (tmp_path / "-").exists()
    r = cli("analyze", str(trace), "--out", "-", "--format", "csv", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("conn_id") or "conn_id" in r.stdout.splitlines()[0]
    r = cli("analyze", str(trace), "--out", "-", cwd=tmp_path)
    assert r.returncode == 2 and "--format csv" in r.stderr and not (tmp_path / "-").exists()


@pytest.mark.parametrize("args", [["analyze", "TRACE"], ["scenario", "keys"], ["analyze", "TRACE", "--out", "-", "--format", "csv"]])
def test_a_reader_that_closes_the_pipe_is_no_failure(trace: Path, args: list[str]) -> None:
    """`shortflow analyze … | head`: the reader goes away before the output is written."""
    argv = [str(trace) if a == "TRACE" else a for a in args]
    for _ in range(3):
        read, write = os.pipe()
        os.close(read)  # every write finds the pipe closed
        p = subprocess.Popen([*SHORTFLOW, *argv], stdout=write, stderr=subprocess.PIPE, text=True)
        os.close(write)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0 and err == "", (p.returncode, err)


def test_a_file_that_is_no_trace_gets_its_error_and_no_table(tmp_path: Path) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("these are notes, not a capture\n" * 20)
    code, out, err = invoke("analyze", str(bad))
    assert code == 1 and "not a pcap or pcapng file" in err, err
    assert out == "", out


def test_a_run_where_nothing_completes_warns_and_fails() -> None:
    code, out, err = invoke("simulate", "000-table4", "--set", "random_loss.forward=1.0")
    assert code == 1, (out, err)
    assert "none of the 1 connections completed" in err and "random_loss.forward=1.0" in err, err
    code, _, err = invoke("simulate", "000-table4", "--set", "drop.syn=[1]")
    assert code == 0 and "none of" not in err


def test_compare_names_the_phase_that_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = {"id": 0, "syn_transmissions": 1, "synack_transmissions": 1, "request_sent_s": 0.0204, "complete_s": 0.0610,
            "retransmissions": 0, "timeouts": 0, "fast_retransmits": 0, "tlp_probes": 0, "dsacks": 0}
    real = {**conn, "syn_transmissions": 2, "request_sent_s": 1.0210, "complete_s": 1.0620}
    verdicts = [{k: True for k in conn if k != "id"} | {"syn_transmissions": False, "request_sent_s": False,
                                                      "complete_s": False}]
    c = Comparison("s", "s.toml", [], [conn], [real], verdicts=verdicts)
    monkeypatch.setattr(shortflow.testbed.compare, "compare", lambda *a, **k: c)
    code, out, err = invoke("testbed", "compare", "000-table4")
    assert code == 1, err
    said = out.splitlines()[-1]
    assert said.startswith("disagree in the handshake (conn 0: SYNs 1 simulated, 2 real; conn 0: request (s) 0.0204 "
                           "simulated, 1.0210 real), the transfer (conn 0: complete (s) 0.0610 simulated, 1.0620 real)"), said


@pytest.mark.parametrize("args", [["simulate", "001-sfr-web", "--set", 'workload.duration="3000s"'],
                                  ["generate", "TMP/big.pcap", "--connections", "50000000", "--snaplen", "64"]],
                         ids=["simulate", "generate"])
def test_ctrl_c_says_interrupted_and_exits_130(args: list[str], tmp_path: Path) -> None:
    """The core's long calls (a run of minutes, a trace of gigabytes) look at no signal:
    Ctrl-C ends the command at once all the same, and a half-written trace is removed."""
    argv = [a.replace("TMP", str(tmp_path)) for a in args]
    p = subprocess.Popen([*SHORTFLOW, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(2.0)
    t = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=20)
    finally:
        p.kill()
        p.wait()
    assert p.returncode == 130 and err.strip().endswith("interrupted"), (p.returncode, err)
    assert time.monotonic() - t < 5
    assert not (tmp_path / "big.pcap").exists()


def test_reproduce_progress_shows_the_count_and_the_time_left(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "PLAIN_PROGRESS_EVERY_S", 0.01)
    code, _, err = invoke("reproduce", "000")
    assert code == 0, err
    counts = re.findall(r"^reproducing: (\d+)/(\d+) \(\d+ s, ETA (?:\d+ min )?\d+ s\) document 000$", err, re.M)
    assert counts, err
    assert all(int(total) == RUNS["000"][0] and 0 < int(done) < int(total) for done, total in counts), counts


@pytest.mark.parametrize("document", ["000", "002", "003"])
def test_reproduce_counts_the_runs_it_makes(document: str) -> None:
    steps: list[int] = []
    reproduce([document], progress=lambda done, total, text: steps.append(done))
    assert steps == list(range(1, RUNS[document][0] + 1)) and RUNS[document][0] == RUNS[document][1]


def test_graph_without_o_says_where_it_wrote(trace: Path, tmp_path: Path) -> None:
    r = cli("graph", str(trace), "--conn", "0", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    png = tmp_path / "conn-0.png"
    assert png.stat().st_size > 1000
    assert str(png) in r.stdout, r.stdout


# -- synopt status, testbed run --set ---------------------------------------------------------

def test_synopt_status_is_a_sub_command_and_the_old_form_works() -> None:
    code, out, _ = invoke("synopt", "--help")
    assert code == 0 and re.search(r"│ status +Print the live counters", out), out
    code, out, _ = invoke("synopt", "status", "--help")
    assert code == 0 and "--json" in out and "--delay" not in out, out
    for argv in (["synopt", "status", "--json"], ["synopt", "--json", "status"]):
        code, out, err = invoke(*argv)
        assert code == 0 and isinstance(json.loads(out), list), (argv, err)


def test_testbed_run_takes_set_and_names_a_typo_there() -> None:
    code, _, err = invoke("testbed", "run", "002-initial-window", "--set", "server.initial_windw=2")
    assert code == 2 and "--set server.initial_windw=2" in err and "did you mean server.initial_window?" in err, err


@pytest.mark.netns
def test_testbed_run_with_set_runs_the_override_and_records_it() -> None:
    r = cli("testbed", "run", "002-initial-window", "--set", "drop.syn=[1]", "--json", "-", timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["overrides"] == ["drop.syn=[1]"]
    assert doc["connections"][0]["syn_transmissions"] == 2, doc["connections"][0]
