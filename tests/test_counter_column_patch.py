"""A counter column is one declaration: `tests/data/patches/dummy-counter-column.patch`
adds `dummy_packets_both_ways` (a dummy: a connection's packets_c2s plus packets_s2c, never
applied to the project) to crates/trace/src/diag/counters.rs, and touches no other file.
Applied to a copy of the tree, the copy's extension module is built and the package run
with it, as a user runs it:
- `analyze --columns` lists the column with its meaning;
- the Python API's table has it, each row's value packets_c2s + packets_s2c;
- `--summary-json` has its total after the diagnosis' counts, in the document and in each
  file's section, and two traces' totals add up (the files' sections to the document's).
Without the patch, this build has no such column or key."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import shortflow
from patch_fixture import copy_applied, touched
from shortflow.analyze import SUMMARY_KEYS, schema_rows

ROOT = Path(__file__).resolve().parents[1]
PATCH = ROOT / "tests" / "data" / "patches" / "dummy-counter-column.patch"
NAME = "dummy_packets_both_ways"
CAPTURES = [ROOT / "tests" / "data" / "real" / "pcap2har-pcapr-losses-keepalive.pcap",
            ROOT / "tests" / "data" / "real" / "three_http_streams.pcap"]

needs_cargo = pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not on PATH")


def test_the_patch_is_one_declaration_in_one_file() -> None:
    patch = PATCH.read_text()
    assert touched(patch) == ["crates/trace/src/diag/counters.rs"]
    added = [line[1:] for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++")]
    removed = [line for line in patch.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert not removed and len(added) == 2, added
    assert added[0].strip().startswith("///") and added[1].strip().startswith(f"{NAME}:")


def test_this_build_has_no_dummy_counter() -> None:
    assert NAME not in [r[0] for r in schema_rows()] and NAME not in SUMMARY_KEYS
    doc = shortflow.analyze(CAPTURES[0])
    assert NAME not in doc.table.column_names


def _built_copy(tmp: Path) -> Path:
    """The package with the extension module of a patched copy of the Rust workspace."""
    tree = copy_applied(tmp, PATCH)
    # A target directory of the fixture's own under the checkout's: kept between runs.
    target = ROOT / "target" / "counter-fixture"
    env = {**os.environ, "CARGO_TARGET_DIR": str(target), "PYO3_PYTHON": sys.executable}
    r = subprocess.run(["nice", "cargo", "build", "-q", "-p", "shortflow-py"], cwd=tree, capture_output=True,
                       text=True, env=env, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    pkg = tmp / "pkg"
    shutil.copytree(ROOT / "python" / "shortflow", pkg / "shortflow",
                    ignore=shutil.ignore_patterns("__pycache__", "_core*.so"))
    shutil.copy2(target / "debug" / "lib_core.so", pkg / "shortflow" / "_core.abi3.so")
    return pkg


def _run(pkg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(pkg), "COLUMNS": "200"}
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)


@needs_cargo
def test_one_declaration_reaches_the_table_columns_and_summary(tmp_path: Path) -> None:
    pkg = _built_copy(tmp_path)

    r = _run(pkg, "-m", "shortflow", "analyze", "--columns")
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.split()[:1] == [NAME])
    assert "uint32" in line and "packets_c2s plus packets_s2c" in line, line

    out = tmp_path / "summary.json"
    r = _run(pkg, "-m", "shortflow", "analyze", *map(str, CAPTURES), "--summary-json", str(out), "-q")
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    keys = list(doc)
    # The diagnosis' counts, then the counter, then the time account.
    assert keys.index("tick_receivers") + 1 == keys.index(NAME) == keys.index("duration_s") - 1, keys
    assert [k for k in keys if k != NAME] == list(SUMMARY_KEYS)
    sections = [f[NAME] for f in doc["files"]]
    assert sum(sections) == doc[NAME] and all(n > 0 for n in sections), (sections, doc[NAME])

    # The Python API: the column, row by row, and the summary's total of it.
    script = textwrap.dedent(f"""
        import json, sys, shortflow
        from shortflow.analyze import summary_document
        a = shortflow.analyze(sys.argv[1])
        t = a.table
        print(json.dumps({{"column": t.column({NAME!r}).to_pylist(),
                          "c2s": t.column("packets_c2s").to_pylist(), "s2c": t.column("packets_s2c").to_pylist(),
                          "total": summary_document(a)[{NAME!r}]}}))
    """)
    r = _run(pkg, "-c", script, str(CAPTURES[0]))
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["column"] == [a + b for a, b in zip(got["c2s"], got["s2c"])] and len(got["column"]) == 17
    assert got["total"] == sum(got["column"]) == doc["files"][0][NAME]
    # The same numbers this build's analysis has, from its own columns.
    ours = shortflow.analyze(CAPTURES[0]).table
    assert got["c2s"] == ours.column("packets_c2s").to_pylist() and got["s2c"] == ours.column("packets_s2c").to_pylist()
