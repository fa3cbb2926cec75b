"""Every CLI command starts by importing the package and the CLI: neither may load numpy or
pyarrow (~0.13 s on this machine), which only the commands that build a table need
(`shortflow.arrow_table`, imported inside the functions that use it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import shortflow
from shortflow import _core

HEAVY = ("numpy", "pyarrow", "pandas", "matplotlib", "distributed")


def _loaded_after(statement: str) -> dict[str, bool]:
    code = f"import json, sys\n{statement}\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded: dict[str, bool] = json.loads(out.stdout)
    return loaded


def test_importing_the_package_and_the_cli_loads_no_table_library() -> None:
    loaded = _loaded_after("import shortflow, shortflow.cli")
    assert not any(loaded.values()), f"loaded at import: {[m for m, v in loaded.items() if v]}"


def test_the_check_sees_a_table_library_once_a_table_is_built() -> None:
    # The same check, after the module that builds tables: it must see them (else the
    # test above could pass by looking at the wrong interpreter).
    loaded = _loaded_after("import shortflow.arrow_table")
    assert loaded["numpy"] and loaded["pyarrow"]


def test_a_command_parses_its_arguments_without_pydantic() -> None:
    # typer 0.29 converts every argument through pydantic, ~0.08 s of imports in every
    # command; the pin (pyproject) keeps a release that does not. Checked after a whole
    # command, parse included: importing the CLI alone never loaded it.
    code = (
        "import json, sys\n"
        "sys.argv = ['shortflow', 'analyze', '--columns']\n"
        "from shortflow.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps({m: m in sys.modules for m in ('pydantic', 'typer')}), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stderr.strip().splitlines()[-1])
    assert loaded["typer"], "the command did not run through typer"
    assert not loaded["pydantic"], "a command's argument parsing imported pydantic"


def test_analyze_that_only_prints_loads_no_table_library(tmp_path: Path) -> None:
    # `shortflow analyze TRACE --worst 0` with nothing to write needs no table: the core
    # gives none (no numpy array is made) and the summary is printed from its counts.
    # numpy and pyarrow were ~0.12 s of the 0.19 s such a command took on a small capture.
    # (The worst connections, printed by default, come from a digest: numpy and pyarrow.)
    trace = tmp_path / "t.pcap"
    shortflow.generate(trace, connections=20)
    # The app itself, not `main`: `main` ends the process at once after such a command.
    code = (
        "import json, sys\n"
        "from shortflow.cli import app\n"
        f"app(args=['analyze', {str(trace)!r}, '--worst', '0', '--table1'], standalone_mode=False)\n"
        f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "connection tries total\t20" in out.stdout, out.stdout
    loaded = json.loads(out.stderr.strip().splitlines()[-1])
    assert not any(loaded.values()), f"loaded by a printing analyze: {[m for m, v in loaded.items() if v]}"


def test_an_analysis_without_its_table_makes_an_empty_one_when_asked(tmp_path: Path) -> None:
    trace = tmp_path / "t.pcap"
    shortflow.generate(trace, connections=20)
    a = shortflow.analyze(trace, table=False)
    assert a.rows == 0 and a.summary["connection_tries"] == 20
    assert a.table.num_rows == 0
    assert a.table.column_names == [c[0] for c in _core.table_schema()]
    full = shortflow.analyze(trace)
    assert a.table.schema.equals(full.table.schema, check_metadata=True)
    assert full.rows == full.table.num_rows == 20


def _threads_after_numpy(env: dict[str, str]) -> tuple[int, str]:
    code = ("import os\nimport shortflow.cli\nimport numpy\n"
            "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS', 'unset'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    n, setting = out.stdout.split()
    return int(n), setting


def test_the_cli_keeps_numpy_to_one_blas_thread() -> None:
    # OpenBLAS starts a thread for each further core at import, and they spin ~0.1 s of
    # CPU on the cores an analysis is using; the CLI does no linear algebra.
    if (os.cpu_count() or 1) < 2 or not Path("/proc/self/task").is_dir():
        pytest.skip("one core (OpenBLAS starts no thread of its own) or no /proc to count threads in")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    assert _threads_after_numpy(env) == (1, "1")
    # A user's own setting is kept, and then OpenBLAS does start its threads (so the
    # count above sees them when they are there).
    threads, setting = _threads_after_numpy({**env, "OPENBLAS_NUM_THREADS": "2"})
    assert setting == "2" and threads >= 2
