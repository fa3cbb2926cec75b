"""Fuzzing the command line: random option values and file names full of rich-markup
characters, for every sub-command. Whatever comes in, the answer is an exit status of 1 or
2 and a plain message on stderr: never a traceback, never an "internal error", and a file
name with brackets is shown as it was written (not eaten as markup, not crashing on it).

Side effects are stubbed (BPF attach, namespaces, iptables, exec of the daemon): the test
checks what the CLI says, not what the kernel does, and must never change this host.
"""

from __future__ import annotations

import io
import string
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shortflow.reproduce.real
import shortflow.synopt
import shortflow.testbed
import shortflow.testbed.clean
import shortflow.testbed.compare
import shortflow.tune
from shortflow.cli import run
from shortflow.exceptions import PrivilegeError, ShortflowError, SynoptError

MARKUP = "[]/\\"
#: File names: letters, markup characters, spaces, a few non-ASCII; no '/' (a directory)
#: and no leading '-' (an option).
NAME = st.text(alphabet=string.ascii_letters + "[]\\ ._ëµ=:", min_size=1, max_size=24).filter(
    lambda s: not s.startswith("-") and s.strip() not in ("", ".", ".."))
#: Option values: anything printable, numbers of every size, durations and sizes of every kind.
NUMBER = st.one_of(st.integers(min_value=-(2**70), max_value=2**70).map(str),
                   st.floats(allow_nan=True, allow_infinity=True).map(repr))
UNITS = st.sampled_from(["", "s", "ms", "ns", "us", "min", "h", "B", "kB", "GB", "MiB", "Mbit", "[red]", "parsecs"])
VALUE = st.one_of(
    st.text(alphabet=string.printable + "µë", max_size=30),
    NUMBER,
    st.tuples(NUMBER, UNITS).map("".join),
    st.sampled_from(["-", "[/red]", "[bold]x", "0s", "0B", "99999999999999999999s", "4294967296", "-1", "nan"]),
)


def _stub(error: type[ShortflowError]) -> Any:
    def stub(*_: object, **__: object) -> None:
        raise error("side effects are stubbed in this test")
    return stub


@pytest.fixture(autouse=True)
def no_side_effects(monkeypatch: pytest.MonkeyPatch) -> None:
    for module, name, error in (
        (shortflow.tune, "apply", ShortflowError), (shortflow.tune, "plan", ShortflowError),
        (shortflow.tune, "revert", ShortflowError), (shortflow.tune, "reload_prefixes", ShortflowError),
        (shortflow.testbed, "run", ShortflowError), (shortflow.testbed.compare, "compare", ShortflowError),
        (shortflow.testbed.clean, "clean", PrivilegeError), (shortflow.synopt, "exec_daemon", SynoptError),
        (shortflow.reproduce.real, "add_real_column", ShortflowError),
    ):
        monkeypatch.setattr(module, name, _stub(error))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("fuzz")
    # A trace that is no trace, and a scenario that is no scenario.
    (d / "bad.pcap").write_bytes(b"\x00\x01[red]not a capture[/red]\n" * 4)
    (d / "bad.toml").write_text('name = "[/red]"\n[path]\nrtt = "[bold]"\n')
    return d


def invoke(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = run(argv)
    return code, out.getvalue(), err.getvalue()


def check(argv: list[str], *, codes: tuple[int, ...] = (1, 2), named: str | None = None) -> None:
    code, out, err = invoke(argv)
    assert "Traceback" not in out + err, (argv, err)
    assert "internal error" not in err, (argv, err)
    assert code in codes, (argv, code, out, err)
    if code != 0:
        assert err.strip(), (argv, "no message on stderr")
    if named is not None and code != 0 and len(named) < 60:
        # The name as written: brackets neither eaten nor interpreted.
        assert named in err or named.strip() in err, (argv, err)


FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(name=NAME, idle=VALUE, linger=VALUE, fmt=VALUE, workers=VALUE)
def test_analyze(workdir: Path, name: str, idle: str, linger: str, fmt: str, workers: str) -> None:
    missing = str(workdir / name)
    check(["analyze", missing], named=name)
    check(["analyze", str(workdir / "bad.pcap"), "--idle-timeout", idle, "--close-linger", linger,
           "--format", fmt, "--workers", workers, "--summary-json", str(workdir / "no-dir" / name)])
    check(["analyze", str(workdir / "bad.pcap"), "--out", str(workdir / "bad.pcap")])


@FUZZ
@given(name=NAME, sets=st.lists(VALUE, max_size=3), mem=VALUE, events=VALUE)
def test_simulate(workdir: Path, name: str, sets: list[str], mem: str, events: str) -> None:
    check(["simulate", str(workdir / name)], named=name)
    argv = ["simulate", str(workdir / "bad.toml"), "--max-memory", mem, "--max-events", events]
    for s in sets:
        argv += ["--set", s]
    check(argv)
    (workdir / "s.toml").write_text(f'name = {name!r}\n[path]\nrtt = "20ms"\n')
    check(["simulate", str(workdir / "s.toml"), "--set", f"client.syn_rto={idle_or(sets)}", "--json",
           str(workdir / "missing-dir" / "x.json")], named=None)


def idle_or(values: list[str]) -> str:
    return values[0] if values else "0ms"


@FUZZ
@given(name=NAME, values=st.lists(VALUE, min_size=8, max_size=8))
def test_generate(workdir: Path, name: str, values: list[str]) -> None:
    options = ["--connections", "--seed", "--rtt-min", "--client-rto", "--vantage", "--link", "--format", "--snaplen"]
    argv = ["generate", str(workdir / "no-such-dir" / name)]
    for opt, v in zip(options, values):
        argv += [opt, v]
    check(argv)


@FUZZ
@given(document=VALUE, name=NAME)
def test_reproduce(workdir: Path, document: str, name: str) -> None:
    if document in ("000", "002", "003", "all"):
        return
    check(["reproduce", document])
    check(["reproduce", "003", "--real", "--json", str(workdir / "nodir" / name)])


@FUZZ
@given(name=NAME, sets=st.lists(VALUE, max_size=2), run_id=VALUE)
def test_testbed(workdir: Path, name: str, sets: list[str], run_id: str) -> None:
    check(["testbed", "run", str(workdir / name)], named=name)
    check(["testbed", "run", str(workdir / "bad.toml")])
    argv = ["testbed", "compare", str(workdir / name)]
    for s in sets:
        argv += ["--set", s]
    check(argv)
    check(["testbed", "clean", "--run", run_id])


@FUZZ
@given(values=st.lists(VALUE, min_size=7, max_size=7), name=NAME, dry=st.booleans(), force=st.booleans())
def test_tune(workdir: Path, values: list[str], name: str, dry: bool, force: bool) -> None:
    options = ["--syn-rto", "--iw", "--rto-min", "--delack-max", "--sfr-factor", "--sfr-cutout", "--scope"]
    argv = ["tune", "apply"] + ["--dry-run"] * dry + ["--force"] * force
    for opt, v in zip(options, values):
        argv += [opt, v]
    check(argv)
    check(["tune", "apply", "--iw-map", str(workdir / name)], named=name)
    check(["tune", "reload", "--iw-map", str(workdir / name), "--state", str(workdir / name)])
    check(["tune", "revert", "--state", str(workdir / name)])
    # Nothing applied is an answer (exit 0), as a JSON document with --json.
    check(["tune", "status", "--json", "--state", str(workdir / "nothing" / name)], codes=(0,))


@FUZZ
@given(values=st.lists(VALUE, min_size=6, max_size=6), mode=st.sampled_from(["-c", "-s", "--router"]))
def test_synopt(values: list[str], mode: str) -> None:
    options = ["-d", "-r", "-p", "--max-held", "--queue-num", "--rt-priority"]
    argv = ["synopt", mode]
    for opt, v in zip(options, values):
        argv += [opt, v]
    check(argv)


@FUZZ
@given(args=st.lists(VALUE, min_size=1, max_size=4))
def test_any_words(args: list[str]) -> None:
    """Arbitrary words after `shortflow` and after each sub-command."""
    for prefix in ([], ["analyze"], ["simulate"], ["tune", "status"], ["testbed"], ["--log-level"]):
        code, out, err = invoke([*prefix, *args])
        assert "Traceback" not in out + err and "internal error" not in err, (prefix + args, err)
        assert code in (0, 1, 2), (prefix + args, code, err)


def test_markup_in_a_file_name_is_shown_as_written(workdir: Path) -> None:
    for name in ("d[red]x.pcap", "a[bold]b.pcap", "e[/red].pcap", "[/]x"):
        (workdir / name).parent.mkdir(exist_ok=True)
        (workdir / name).write_bytes(b"hello, not a capture")
        code, _, err = invoke(["analyze", str(workdir / name)])
        assert code == 1 and f"{workdir / name}: byte 0: not a pcap or pcapng file" in err, err


def test_conventions() -> None:
    code, out, _ = invoke(["--version"])
    assert code == 0 and out.startswith("shortflow ")
    code, _, err = invoke(["--log-level", "loud", "tune", "status"])
    assert code == 2 and "--log-level" in err
    code, out, _ = invoke(["--help"])
    assert code == 0 and "--install-completion" in out
