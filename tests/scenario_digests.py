"""Digests of what the shipped scenarios produce (`shortflow simulate NAME --json -`,
`shortflow testbed plan NAME --json -` and the plan's table) and of what the analyzer makes
of the real captures in tests/data/real/ (`analyze --summary-json -`, the answer's text
with its diagnosis, `analyze -l`, and the `--out` Parquet tables read back as sorted rows),
one SHA-256 each. A change that must not move any output (a refactoring of the host layer,
the knob table or the result schemas) is checked by writing the digests before it and
comparing after:

    python tests/scenario_digests.py > before.json
    ... change ...
    python tests/scenario_digests.py --compare before.json

Exits 1 naming every output whose digest moved. Plain text, plain commands: the digests
come from the installed `shortflow` command, as a user runs it."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "python" / "shortflow" / "scenarios"
CAPTURES = ROOT / "tests" / "data" / "real"


def commands(name: str) -> dict[str, list[str]]:
    exe = str(Path(sys.executable).with_name("shortflow"))
    return {
        "simulate --json": [exe, "simulate", name, "--json", "-"],
        "testbed plan --json": [exe, "testbed", "plan", name, "--json", "-"],
        "testbed plan": [exe, "testbed", "plan", name],
    }


def analyzer_commands(capture: Path) -> dict[str, list[str]]:
    exe = str(Path(sys.executable).with_name("shortflow"))
    name = str(capture.relative_to(ROOT))
    return {
        "analyze --summary-json": [exe, "analyze", name, "--summary-json", "-"],
        "analyze": [exe, "analyze", name, "--table1"],
        "analyze -l": [exe, "analyze", name, "-l"],
    }


def run_digest(args: list[str]) -> str:
    r = subprocess.run(args, capture_output=True, cwd=ROOT, env={**os.environ, "COLUMNS": "200"})
    # The exit code and stderr are part of the output: a refusal must stay a refusal.
    return hashlib.sha256(r.stdout + b"\0" + r.stderr + b"\0" + str(r.returncode).encode()).hexdigest()


def parquet_digests(capture: Path) -> dict[str, str]:
    """`analyze --out DIR`'s two Parquet tables, each read back as its rows in sorted
    order (the file's bytes hold the version and the command line, and its row order is
    the analyzer's to choose)."""
    import pyarrow.parquet as pq

    exe = str(Path(sys.executable).with_name("shortflow"))
    out = {}
    with tempfile.TemporaryDirectory(prefix="shortflow-digests-") as tmp:
        r = subprocess.run([exe, "analyze", str(capture.relative_to(ROOT)), "--out", tmp, "-q"], capture_output=True,
                           cwd=ROOT)
        for table in ("connections", "exchanges"):
            path = Path(tmp) / f"{table}.parquet"
            if r.returncode != 0 or not path.exists():
                rows = [f"exit {r.returncode}", r.stderr.decode(errors="replace")]
            else:
                t = pq.read_table(path)
                rows = sorted(json.dumps(row, sort_keys=True, default=str) for row in t.to_pylist())
                rows.insert(0, json.dumps([f"{f.name}: {f.type}" for f in t.schema]))
            out[f"analyze --out {table}.parquet"] = hashlib.sha256("\n".join(rows).encode()).hexdigest()
    return out


def digests() -> dict[str, str]:
    out = {}
    for path in sorted(SCENARIOS.glob("*.toml")):
        for what, args in commands(path.stem).items():
            out[f"{path.stem} {what}"] = run_digest(args)
    for capture in sorted(CAPTURES.glob("*.pcap*")):
        for what, args in analyzer_commands(capture).items():
            out[f"{capture.name} {what}"] = run_digest(args)
        for what, h in parquet_digests(capture).items():
            out[f"{capture.name} {what}"] = h
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compare", type=Path, help="digests written earlier: exit 1 naming each output that moved")
    a = ap.parse_args()
    now = digests()
    if a.compare is None:
        json.dump(now, sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
        return 0
    before = json.loads(a.compare.read_text())
    moved = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
    for k in moved:
        print(f"moved: {k}")
    print(f"{len(now) - len(moved)} of {len(now)} outputs byte-identical")
    return 1 if moved else 0


if __name__ == "__main__":
    sys.exit(main())
