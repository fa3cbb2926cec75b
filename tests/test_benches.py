"""Every benchmark command BENCHMARKS.md lists runs here at a smoke size (seconds), so that
none stops working unseen (`benches/synopt_flood.py` once failed at once, unnoticed, when
the test's `flood()` it imports changed shape). The page and `SMOKE` must name the
same commands: a benchmark added to the page without a smoke run fails
`test_every_benchmark_on_the_page_has_a_smoke_run`.

The smoke runs check that the command ends well and prints its result, not its figures:
those depend on the machine."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "BENCHMARKS.md"


def ns3_missing() -> str | None:
    """Why `benches/sim_vs_ns3.py` cannot build its ns-3 peer here, or None."""
    if shutil.which("pkg-config") is None or shutil.which("g++") is None:
        return "needs pkg-config and g++ (`make bench-deps` installs them with ns-3)"
    r = subprocess.run(["pkg-config", "--exists", "ns3-core", "ns3-internet"], capture_output=True)
    return None if r.returncode == 0 else "needs ns-3 (Debian's libns3-dev; `make bench-deps` installs it)"


#: Each command of the page → its smoke run: the script's arguments at a smoke size (the
#: words after `python`, or after `shortflow` for the CLI; TMP is a temporary directory;
#: CAPTURES one holding two small captures), or an existing test that runs the command's
#: work at a smaller size (the command itself takes minutes and has no smaller form).
SMOKE: dict[str, list[str] | str] = {
    ".venv/bin/python benches/run.py --repeat 3": ["benches/run.py", "--packets", "20000", "--repeat", "1", "--data", "TMP"],
    ".venv/bin/python benches/tshark_sweep.py DIR": ["benches/tshark_sweep.py", "CAPTURES"],
    ".venv/bin/python benches/analyze_pairs.py --pairs 7 --filter 'tcp port 80'":
        ["benches/analyze_pairs.py", "--packets", "20000", "--pairs", "1", "--data", "TMP", "--filter", "tcp port 80"],
    "sudo .venv/bin/python benches/netem_accuracy.py handshake 10ms 20ms 50ms 100ms":
        ["benches/netem_accuracy.py", "handshake", "20ms", "--count", "3"],
    "sudo .venv/bin/python benches/netem_accuracy.py delay 10ms 20ms 50ms 100ms":
        ["benches/netem_accuracy.py", "delay", "10ms", "--count", "20"],
    "sudo .venv/bin/python benches/netem_accuracy.py rate 20000 40000 60000 80000 100000 0":
        ["benches/netem_accuracy.py", "rate", "5000", "--seconds", "1"],
    ".venv/bin/python benches/sim_vs_ns3.py": ["benches/sim_vs_ns3.py", "--connections", "300", "--ns3-connections", "20"],
    ".venv/bin/python benches/sim_vs_ns3.py --web": ["benches/sim_vs_ns3.py", "--web", "--duration", "5", "--pairs", "4"],
    ".venv/bin/python benches/doc001_load.py": ["benches/doc001_load.py", "4"],
    ".venv/bin/python benches/advise_speed.py --connections 20000 --repeat 3":
        ["benches/advise_speed.py", "--connections", "50", "--repeat", "1", "--data", "TMP"],
    ".venv/bin/shortflow reproduce 001": "tests/test_sim_web.py::test_reproduce_001_quick",
    ".venv/bin/shortflow reproduce 004": "tests/test_sim_web.py::test_reproduce_004_quick",
    "sudo .venv/bin/shortflow reproduce 000 --real": "tests/test_testbed_compare.py::test_reproduce_real_column_for_a_table4_row",
    "sudo .venv/bin/python benches/sim_vs_real.py": ["benches/sim_vs_real.py"],
    "sudo .venv/bin/python benches/sim_vs_real.py --random 200 --seed 1 --out DIR":
        ["benches/sim_vs_real.py", "--random", "2", "--seed", "1", "--out", "TMP"],
    "sudo .venv/bin/python benches/sim_vs_real.py --knobs 300 --out DIR":
        ["benches/sim_vs_real.py", "--knobs", "2", "--out", "TMP"],
    "sudo .venv/bin/python benches/sim_vs_real.py --knobs 300 --cc-mix --seed S --out DIR":
        ["benches/sim_vs_real.py", "--knobs", "2", "--cc-mix", "--out", "TMP"],
    "sudo .venv/bin/python benches/synopt_precision.py 60 200 [--load]": ["benches/synopt_precision.py", "5", "100"],
    "sudo .venv/bin/python benches/synopt_flood_fair.py 100000 10 [--daemon none | --daemon "
    "target/nfqueue-baseline/shortflow-synopt]": ["benches/synopt_flood_fair.py", "3000", "1.5"],
    "sudo .venv/bin/python benches/synopt_flood.py 50000 10 65536 200 50000 10 10000 200":
        ["benches/synopt_flood.py", "5000", "1", "1000", "50"],
    "sudo .venv/bin/python benches/synopt_table4.py": ["benches/synopt_table4.py", "1 SYN/ACK lost"],
    "sudo .venv/bin/python benches/sfr_tail_loss.py 10 2": ["benches/sfr_tail_loss.py", "1", "2"],
    "sudo .venv/bin/python benches/watch_load.py bench-data/bench-178571.pcap --pps 100000 --packets 1000000 --pairs 3":
        ["benches/watch_load.py", "--syn-flood", "2000", "--pps", "20000", "--pairs", "1"],
}

#: What each smoke run must print (the result line or table heading it exists for).
PRINTS = {
    "benches/run.py": "| tcptrace -l -n |",
    "benches/tshark_sweep.py": "files compared",
    "benches/analyze_pairs.py": "| analyze --filter 'tcp port 80' / tcpdump -r -w /dev/null |",
    "benches/netem_accuracy.py": " mean ",
    "benches/sim_vs_ns3.py": "ns-3",
    "benches/doc001_load.py": "nominal load",
    "benches/advise_speed.py": "replays/s",
    "benches/sim_vs_real.py": "agree",
    "benches/synopt_precision.py": "resend_error_ms",
    "benches/synopt_flood_fair.py": "legit_connect_s",
    "benches/synopt_flood.py": "counters_add_up",
    "benches/synopt_table4.py": "| 1 SYN/ACK lost |",
    "benches/sfr_tail_loss.py": "median",
    "benches/watch_load.py": "median_of",
}

#: Smoke runs that need root and network namespaces (the testbed).
NETNS = ("netem_accuracy", "sim_vs_real", "synopt_", "sfr_tail_loss", "watch_load")


def page_commands() -> set[str]:
    """The commands the page lists: every code span that runs something from the tree."""
    spans = re.findall(r"`([^`]+)`", PAGE.read_text())
    return {" ".join(s.split()) for s in spans if s.startswith((".venv/bin/", "sudo .venv/bin/"))}


def test_every_benchmark_on_the_page_has_a_smoke_run() -> None:
    listed = page_commands()
    assert listed == set(SMOKE), (f"on the page without a smoke run: {sorted(listed - set(SMOKE))}; "
                                  f"smoke runs of commands not on the page: {sorted(set(SMOKE) - listed)}")


def test_the_page_is_a_results_page() -> None:
    assert len(PAGE.read_text().splitlines()) <= 300


@pytest.mark.parametrize("ref", sorted({v for v in SMOKE.values() if isinstance(v, str)}))
def test_a_smoke_run_named_by_reference_exists(ref: str) -> None:
    path, _, name = ref.partition("::")
    assert re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.M), ref


def smoke_cases() -> list[object]:
    out = []
    for argv in SMOKE.values():
        if isinstance(argv, str):
            continue
        marks = [pytest.mark.netns] if any(n in argv[0] for n in NETNS) else []
        out.append(pytest.param(argv, id=" ".join(argv), marks=marks))
    return out


@pytest.fixture
def captures(tmp_path: Path) -> Path:
    import shortflow

    d = tmp_path / "captures"
    d.mkdir()
    shortflow.generate(d / "a.pcap", connections=20, seed=1, syn_loss=0.2)
    shortflow.generate(d / "b.pcapng", connections=20, seed=2, format="pcapng", synack_loss=0.2)
    return d


@pytest.mark.parametrize("argv", smoke_cases())
def test_smoke(argv: list[str], tmp_path: Path, captures: Path) -> None:
    if argv[0] == "benches/sim_vs_ns3.py" and (why := ns3_missing()):
        pytest.skip(why)
    if argv[0] == "benches/tshark_sweep.py" and shutil.which("tshark") is None:
        pytest.skip("needs tshark (`make deps` installs it)")
    args = [str(tmp_path / "out") if a == "TMP" else str(captures) if a == "CAPTURES" else a for a in argv]
    r = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
    assert r.returncode == 0, f"{' '.join(argv)}: exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    assert PRINTS[argv[0]] in r.stdout, r.stdout[-2000:]
