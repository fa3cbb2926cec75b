"""The floors of the house (docs/architecture.md), enforced: no module or crate imports upward.

Python: import-linter's contracts in pyproject.toml (host <- testbed, tune <- front door;
testbed and tune independent) and no import cycle between the package's modules (grimp's
import graph, the one import-linter reads). Rust: the workspace's dependency graph from
`cargo metadata`."""

from __future__ import annotations

import ast
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
    # The BPF loader (aya): the kernel's BPF system calls, beside the daemons' edges.
    "shortflow-bpf": set(),
    "shortflow-trace": {"shortflow-wire", "shortflow-scenario"},
    "shortflow-sim": {"shortflow-wire", "shortflow-scenario", "shortflow-trace"},
    # The daemons read packets through the wire layer, never through the analyzer.
    "shortflow-netem": {"shortflow-sys", "shortflow-wire", "shortflow-scenario", "shortflow-sim"},
    "shortflow-synopt": {"shortflow-sys", "shortflow-wire", "shortflow-scenario"},
    "shortflow-py": {"shortflow-wire", "shortflow-scenario", "shortflow-trace", "shortflow-sim", "shortflow-netem",
                     "shortflow-synopt", "shortflow-bpf"},
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


PACKAGE = ROOT / "python" / "shortflow"
HOST = PACKAGE / "host"
#: Ways to run a command (or replace this process with one) that only the host layer uses.
COMMAND_CALLS = {("os", "system"), ("os", "popen"), ("pty", "spawn")}
#: The machine's own tools: a command line for one of them is written in the host layer only.
SYSTEM_TOOLS = {"ip", "sysctl", "nft", "iptables", "bpftool", "mount", "umount", "tc", "ss"}


def side_effects(tree: ast.AST) -> list[tuple[int, str]]:
    """Where a module's code reaches the machine other than through `shortflow.host`: an
    import of `subprocess` (or a name from it), a call of os.system / os.popen /
    pty.spawn (or of those names imported bare), a command line for one of the machine's
    tools (`["ip", "route", …]`), and a string naming a path under /proc/sys in a module
    that also writes files (write_text, write_bytes, open(..., 'w'))."""
    found: list[tuple[int, str]] = []
    bare: set[str] = set()
    proc_sys: list[int] = []
    writes = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "subprocess":
                    found.append((node.lineno, f"import {a.name}"))
        elif isinstance(node, ast.ImportFrom) and node.module:
            root = node.module.split(".")[0]
            if root == "subprocess":
                found.append((node.lineno, f"from {node.module} import …"))
            for a in node.names:
                if (root, a.name) in COMMAND_CALLS:
                    bare.add(a.asname or a.name)
                    found.append((node.lineno, f"from {root} import {a.name}"))
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and (f.value.id, f.attr) in COMMAND_CALLS:
                found.append((node.lineno, f"{f.value.id}.{f.attr}()"))
            elif isinstance(f, ast.Name) and f.id in bare:
                found.append((node.lineno, f"{f.id}()"))
            if isinstance(f, ast.Attribute) and f.attr in ("write_text", "write_bytes"):
                writes = True
            if isinstance(f, ast.Name) and f.id == "open" and any(
                    isinstance(a, ast.Constant) and isinstance(a.value, str) and set(a.value) & set("wax")
                    for a in node.args[1:2] + [k.value for k in node.keywords if k.arg == "mode"]):
                writes = True
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("/proc/sys"):
            proc_sys.append(node.lineno)
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts and isinstance(node.elts[0], ast.Constant) \
                and node.elts[0].value in SYSTEM_TOOLS and len(node.elts) > 1:
            found.append((node.lineno, f"a command line for {node.elts[0].value}"))
    if writes:
        found += [(line, "a path under /proc/sys in a module that writes files") for line in proc_sys]
    return sorted(found)


def test_side_effect_finder_finds_each_kind() -> None:
    src = """
import subprocess as sp
from os import popen
import os, pty
from pathlib import Path
os.system("true"); pty.spawn(["sh"]); popen("ls")
Path("/proc/sys/net/ipv4/tcp_sack").write_text("0")
run(["sysctl", "-w", "net.ipv4.tcp_sack=0"])
"""
    kinds = sorted(what for _, what in side_effects(ast.parse(src)))
    assert kinds == sorted(["import subprocess", "from os import popen", "os.system()", "pty.spawn()", "popen()",
                            "a path under /proc/sys in a module that writes files",
                            "a command line for sysctl"])
    # Reading /proc/sys and naming os.environ are not side effects.
    assert side_effects(ast.parse("from pathlib import Path\nPath('/proc/sys/x').read_text()\nimport os\nos.environ")) == []


def test_only_the_host_layer_runs_commands_or_writes_sysctls() -> None:
    """No module of the package outside `shortflow/host/` imports subprocess, calls
    os.system, os.popen or pty.spawn, or writes under /proc/sys: the host layer is the only
    place shortflow acts on the machine (its commands, its children, its kernel settings)."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if HOST in path.parents:
            continue
        for line, what in side_effects(ast.parse(path.read_text(), str(path))):
            offenders.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    assert offenders == [], "move these into shortflow.host:\n" + "\n".join(offenders)
