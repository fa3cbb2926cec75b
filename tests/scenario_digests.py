"""Digests of what the shipped scenarios produce: `shortflow simulate NAME --json -`,
`shortflow testbed plan NAME --json -` and the plan's table, one SHA-256 each. A change
that must not move any output (a refactoring of the host layer or the knob table) is
checked by writing the digests before it and comparing after:

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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "python" / "shortflow" / "scenarios"


def commands(name: str) -> dict[str, list[str]]:
    exe = str(Path(sys.executable).with_name("shortflow"))
    return {
        "simulate --json": [exe, "simulate", name, "--json", "-"],
        "testbed plan --json": [exe, "testbed", "plan", name, "--json", "-"],
        "testbed plan": [exe, "testbed", "plan", name],
    }


def digests() -> dict[str, str]:
    out = {}
    for path in sorted(SCENARIOS.glob("*.toml")):
        for what, args in commands(path.stem).items():
            r = subprocess.run(args, capture_output=True, cwd=ROOT, env={**os.environ, "COLUMNS": "200"})
            # The exit code and stderr are part of the output: a refusal must stay a refusal.
            h = hashlib.sha256(r.stdout + b"\0" + r.stderr + b"\0" + str(r.returncode).encode())
            out[f"{path.stem} {what}"] = h.hexdigest()
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
