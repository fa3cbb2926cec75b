"""The bad-scenario corpus: one file (or override) per class of nonsense, each with the
clean error or warning it must give, through `shortflow simulate` as a user runs it.

Each case checks the exit status, that the message names the file and the key (or the
line and column), and that it says what is allowed; none may print a traceback.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from shortflow.cli import run
from shortflow.exceptions import ScenarioError
from shortflow.scenario import Scenario
from shortflow.simulate import simulate

SHORTFLOW = [sys.executable, "-m", "shortflow"]
BASE = '[path]\nrtt = "20ms"\n'

#: (case, file text, exit status, phrases the stderr must hold)
CORPUS = [
    ("zero SYN RTO", BASE + '[client]\nsyn_rto = "0ms"\n', 2,
     ["client.syn_rto", "0s is outside its range 1ms to 120s"]),
    # (A zero *minimum* RTO is document 004's noMINRTO: allowed.)
    ("zero-byte response", BASE + '[workload]\nresponse = "0B"\n', 2,
     ["workload.response", "0B is outside its range 1B to 1000000000B"]),
    ("size beyond 2^53", BASE + '[workload]\nresponse = "100000000000000000000000B"\n', 2,
     ["workload.response", "the largest is 2^53"]),
    ("a billion connections", BASE + "[workload]\nconnections = 1000000000\n", 2,
     ["workload.connections", "outside its range 1 to 1000000"]),
    ("kernel-sized retries", BASE + "[client]\nsyn_retries = 4294967295\n", 2,
     ["client.syn_retries", "outside its range 0 to 127"]),
    ("optimizer retries", BASE + '[mechanisms]\nsyn_optimizer = { side = "client", delay = "1ns", retries = 4294967295 }\n',
     2, ["mechanisms.syn_optimizer"]),
    ("negative initial window", BASE + "[client]\ninitial_window = -1\n", 2,
     ["client.initial_window", "-1: expected a number of segments (at least 1) or \"rfc3390\""]),
    ("duration beyond the clock", BASE + '[client]\nsyn_rto = "99999999999999999999s"\n', 2,
     ["client.syn_rto", "is too long (the largest is 292 years)"]),
    ("delayed ACK of a second", BASE + '[client]\ndelayed_ack_timeout = "1s"\n', 2,
     ["client.delayed_ack_timeout", "RFC 1122"]),
    ("TOML syntax", BASE + "[workload\nresponse = 1\n", 2, ["line 3, column", "not valid TOML"]),
    ("unit-less number", '[path]\nrtt = 20\n', 2, ["path.rtt", "no unit"]),
    ("markup in a value", BASE + '[client]\nstack = "[/red]"\n', 2, ['client.stack: unknown stack profile "[/red]"']),
    ("markup in the name", 'name = "[bold]x[/bold]"\n' + BASE + '[client]\nsyn_rto = "0s"\n', 2, ["client.syn_rto"]),
]


def simulate_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`shortflow simulate ARGS` in this process (as `main()` runs it: same exit status)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = run(["simulate", *args])
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_the_installed_command_exits_with_the_same_status(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('time_limit = "500ms"\n' + BASE + "[drop]\nsyn = [1]\n")
    r = subprocess.run([*SHORTFLOW, "simulate", str(path), "-q"], capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 3 and r.stderr.startswith("warning: the run reached its time_limit"), r.stderr


@pytest.mark.parametrize(("case", "text", "status", "phrases"), CORPUS, ids=[c[0] for c in CORPUS])
def test_each_class_gives_its_clean_error(tmp_path: Path, case: str, text: str, status: int, phrases: list[str]) -> None:
    path = tmp_path / "s[1].toml"
    path.write_text(text)
    r = simulate_cli(str(path), "-q")
    assert r.returncode == status, (case, r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    assert r.stderr.startswith(f"error: {path}: "), (case, r.stderr)
    for phrase in phrases:
        assert phrase in r.stderr, (case, phrase, r.stderr)


def test_a_huge_key_is_not_echoed_whole(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(BASE + "k" * 1_000_000 + " = 1\n")
    r = simulate_cli(str(path))
    assert r.returncode == 2 and "unknown key" in r.stderr and "…" in r.stderr
    assert len(r.stderr) < 1000, len(r.stderr)


def test_files_that_are_no_scenario(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    big.write_text("# padding\n" * 500_000)
    for path, phrase in ((big, "larger than 4 MiB"), (Path("/dev/zero"), "larger than 4 MiB"),
                         (tmp_path, "is a directory"), (tmp_path / "none.toml", "No such file")):
        r = simulate_cli(str(path))
        assert r.returncode == 2 and phrase in r.stderr, (path, r.stderr)
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe[path]")
    r = simulate_cli(str(binary))
    assert r.returncode == 2 and "byte 0: not UTF-8 text" in r.stderr


def test_time_limit_with_connections_incomplete_warns_and_exits_3(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    # The first SYN is lost and the retry comes 1 s later, after the run's end.
    path.write_text('time_limit = "500ms"\n' + BASE + "[drop]\nsyn = [1]\n")
    r = simulate_cli(str(path), "--json", "-")
    assert r.returncode == 3, r.stderr
    assert "warning: the run reached its time_limit (0.500000s) with 1 of 1 connections incomplete" in r.stderr
    report = json.loads(r.stdout)
    assert report["summary"]["time_limit_reached"] is True
    assert report["warnings"] and "time_limit" in report["warnings"][0]
    # Complete within the limit: no warning, exit 0.
    r = simulate_cli(str(path), "--set", "time_limit=10s", "--json", "-")
    assert r.returncode == 0 and not r.stderr and json.loads(r.stdout)["warnings"] == []


def test_memory_and_event_budgets_stop_cleanly_with_what_to_change(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(BASE + "[workload]\nconnections = 100000\n")
    r = simulate_cli(str(path), "--max-memory", "1MB")
    assert r.returncode == 1, r.stderr
    assert "100000 connections need about" in r.stderr and "lower workload.connections or raise --max-memory" in r.stderr
    r = simulate_cli(str(path), "--max-events", "50000")
    assert r.returncode == 1 and "raise --max-events" in r.stderr, r.stderr
    r = simulate_cli(str(path), "--max-memory", "lots")
    assert r.returncode == 2 and "--max-memory" in r.stderr


@pytest.mark.parametrize(("workload", "keys"), [
    ('kind = "bulk"\nflows = 1000000\nsize = "100kB"', "workload.flows"),
    ('kind = "poisson"\nconnections_per_second = 1000000000\nduration = "10s"',
     "workload.connections_per_second, workload.duration or workload.max_connections"),
])
def test_max_memory_holds_runs_whose_connections_are_not_known_before(tmp_path: Path, workload: str,
                                                                       keys: str) -> None:
    # A million bulk flows at once, Poisson arrivals at 10^9/s: the connections open pile up
    # from the first instant. The run stops with exit 1 and the keys to lower, its whole
    # process (the interpreter's ~25 MB too) within 1.25 times the limit.
    path = tmp_path / "s.toml"
    path.write_text(BASE + "[workload]\n" + workload + "\n")
    measure = ("import resource, subprocess, sys; "
               "r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
               "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); print(r.stderr)")
    out = subprocess.run([sys.executable, "-c", measure, sys.executable, "-m", "shortflow", "simulate", str(path),
                          "--max-memory", "256MB", "--json", os.devnull], capture_output=True, text=True,
                         check=True).stdout
    status, peak_kib = out.splitlines()[0].split()
    assert status == "1", out
    assert f"raise --max-memory, or lower time_limit or {keys}" in out
    assert int(peak_kib) * 1024 <= 1.25 * 256e6, f"{int(peak_kib) / 1024:.0f} MiB"


def test_python_api_takes_one_override_as_a_string() -> None:
    """A plain string is one override, not one per character."""
    s = Scenario.from_text(BASE, source="s.toml", overrides="drop.syn=[1]")
    assert s.overrides == ("drop.syn=[1]",)
    assert simulate(s, "client.stack=linux").scenario.overrides == ("drop.syn=[1]", "client.stack=linux")
    with pytest.raises(ScenarioError, match="client.syn_rto"):
        Scenario.from_text(BASE, overrides="client.syn_rto=0s")


def test_scenario_reference_is_in_the_repository() -> None:
    """The README's links stay inside the repository (docs/)."""
    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    assert "../shared" not in readme
    for doc in ("docs/scenario.md", "docs/documents.md"):
        assert doc in readme and (root / doc).is_file(), doc
