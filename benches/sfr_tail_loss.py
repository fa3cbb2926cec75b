"""Super Fast Retransmit on the real kernel (document 001): one 10 kB response over an
emulated 60 ms RTT whose last data segment is lost, with the tail loss probe off on the
server (net.ipv4.tcp_early_retrans=0) so that only the RTO repairs it; completion time
without and with `shortflow tune --sfr-factor 2`, alternated, N runs each. Root.

    sudo .venv/bin/python benches/sfr_tail_loss.py [N] [FACTOR]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import textwrap
from pathlib import Path

from shortflow import testbed
from shortflow.host import cgroup2_root
from shortflow.testbed.names import PREFIX
from shortflow.tune import TuneSettings, apply, revert

SCENARIO = """
    [path]
    rtt = "60ms"
    [client]
    stack = "linux"
    [server]
    stack = "linux"
    [drop]
    data = [{last}]
    [workload]
    request = "300B"
    response = "10kB"
    port = 8080
"""
#: 10 kB of body and nginx's ~240 B of headers: 8 segments of 1460 B; the 8th is lost.
LAST_SEGMENT = 8
NO_TLP = {"server": {"net.ipv4.tcp_early_retrans": 0}}


def once(tmp: Path, cgroup: Path, sfr: float | None) -> dict:
    s = tmp / "sfr.toml"
    s.write_text(textwrap.dedent(SCENARIO.format(last=LAST_SEGMENT)))
    state = tmp / "state.json"
    if sfr is not None:
        apply(TuneSettings(cgroup=cgroup, sfr_factor=sfr, port=8080), state_path=state)
    try:
        r = testbed.run(str(s), cgroup=str(cgroup), sysctls=NO_TLP)
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
