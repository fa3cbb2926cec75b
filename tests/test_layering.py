"""The floors of the house (design.md), enforced: no module or crate imports upward.

Python: import-linter's contracts in pyproject.toml (host <- testbed, tune <- front door;
testbed and tune independent) and no import cycle between the package's modules (grimp's
import graph, the one import-linter reads). Rust: the workspace's dependency graph from
`cargo metadata`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]

# Each crate and the shortflow crates it may depend on (floors below it only).
ALLOWED = {
    "shortflow-wire": set(),
    "shortflow-scenario": set(),
    # The daemons' operating-system edges (clock, waits, signals): below both, on nothing.
    "shortflow-sys": set(),
    "shortflow-trace": {"shortflow-wire", "shortflow-scenario"},
    "shortflow-sim": {"shortflow-wire", "shortflow-scenario", "shortflow-trace"},
    # The daemons read packets through the wire layer, never through the analyzer.
    "shortflow-netem": {"shortflow-sys", "shortflow-wire", "shortflow-scenario", "shortflow-sim"},
    "shortflow-synopt": {"shortflow-sys", "shortflow-wire", "shortflow-scenario"},
    "shortflow-py": {"shortflow-wire", "shortflow-scenario", "shortflow-trace", "shortflow-sim", "shortflow-netem",
                     "shortflow-synopt"},
}


def test_python_import_contracts() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    r = subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm,
    iterative): each is a set of modules that import each other, directly or not."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_cycle_finder_finds_cycles() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_python_import_cycle() -> None:
    """No module imports one that imports it back, directly or through others (imports under
    `TYPE_CHECKING` count too), subpackages' `__init__` included. Not counted: an import of
    the top package itself (`from shortflow import _core` reaches the extension module
    through it, and Python runs a package's `__init__` before any of its modules)."""
    graph = grimp.build_graph("shortflow")
    edges = {m: {i for i in graph.find_modules_directly_imported_by(m) if i != "shortflow"} for m in graph.modules}
    assert _cycles(edges) == [], "modules importing each other: move the shared piece to a module below both"


@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not on PATH")
def test_rust_crates_depend_only_downward() -> None:
    meta = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
                                     cwd=ROOT, capture_output=True, text=True, check=True).stdout)
    crates = {p["name"]: {d["name"] for d in p["dependencies"] if d["name"].startswith("shortflow-")}
              for p in meta["packages"]}
    assert set(crates) == set(ALLOWED), "a crate was added or removed: give it its floor in ALLOWED"
    for name, deps in crates.items():
        assert deps <= ALLOWED[name], f"{name} depends upward on {sorted(deps - ALLOWED[name])}"
