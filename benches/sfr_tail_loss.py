"""Super Fast Retransmit on the real kernel (document 001): the shipped scenario
`001-sfr-tail-loss` (one 10 kB response over an emulated 60 ms RTT whose last data segment
is lost, the tail loss probe off on the server: net.ipv4.tcp_early_retrans=0, so that only
the RTO repairs it); completion time without and with `shortflow tune --sfr-factor 2`,
alternated, N runs each. Root. The simulator's figures for the same file:
`shortflow simulate 001-sfr-tail-loss [--set 'mechanisms.sfr={factor=2}']`.

    sudo .venv/bin/python benches/sfr_tail_loss.py [N] [FACTOR]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

from shortflow import testbed
from shortflow.host import cgroup2_root
from shortflow.scenario import Scenario
from shortflow.testbed.names import PREFIX
from shortflow.tune import TuneSettings, apply, revert

SCENARIO = "001-sfr-tail-loss"


def once(tmp: Path, cgroup: Path, sfr: float | None) -> dict:
    state = tmp / "state.json"
    if sfr is not None:
        apply(TuneSettings(cgroup=cgroup, sfr_factor=sfr, port=8080), state_path=state)
    try:
        r = testbed.run(testbed.load(Scenario.builtin(SCENARIO)), cgroup=str(cgroup))
    finally:
        if sfr is not None:
            revert(state_path=state)
    (c,) = r["connections"]
    return c


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    factor = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    cg = cgroup2_root() / f"{PREFIX}bench-sfr"
    cg.mkdir()
    try:
        with tempfile.TemporaryDirectory() as d:
            runs: dict[str, list[dict]] = {"linux": [], f"sfr x{factor:g}": []}
            for _ in range(n):
                runs["linux"].append(once(Path(d), cg, None))
                runs[f"sfr x{factor:g}"].append(once(Path(d), cg, factor))
    finally:
        cg.rmdir()
    for name, cs in runs.items():
        done = [c["complete_s"] for c in cs]
        print(f"{name:10s} complete_s median {statistics.median(done):.3f} min {min(done):.3f} max {max(done):.3f} "
              f"timeouts {[c['timeouts'] for c in cs]} retransmissions {[c['retransmissions'] for c in cs]}")


if __name__ == "__main__":
    main()
