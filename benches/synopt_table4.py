"""Document 000's Table 4 on the real kernel: seconds from the first SYN until the HTTP GET
is sent, per loss case, without and with `shortflow synopt -d 200 -r 3` on the client side
(`-c`) and on the server side (`-s`). Testbed namespaces, link RTT 20 ms with scripted drops
(`shortflow-netem`), nginx, curl; times from the router's client-side capture. The kernel
here is Linux 6.18 (SYN RTO 1 s, linear for the first retries), not 2008's 3 s.

    sudo .venv/bin/python benches/synopt_table4.py ["1 SYN lost" ...]

Cases named on the command line run alone (the test suite's smoke run takes one).
"""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import shortflow
from synopt_bed import bed

CASES = {
    "1 SYN lost": "syn = [1]",
    "1 SYN/ACK lost": "synack = [1]",
    "1 SYN + 1 SYN/ACK lost": "syn = [1]\nsynack = [1]",
    "3 SYNs lost": "syn = [1, 2, 3]",
    "3 SYN/ACKs lost": "synack = [1, 2, 3]",
}
SIDES = {"without": None, "client (-c)": ("client", "-c"), "server (-s)": ("server", "-s")}


def request_after_first_syn(drop: str, side: tuple[str, str] | None) -> float:
    with tempfile.TemporaryDirectory(prefix="sf-bench-") as tmp, bed(Path(tmp), rtt="20ms", drop=drop) as b:
        d = b.start_synopt(side[0], "-d", "200", "-r", "3", side[1], "-p", "80") if side else None
        b.fetch(timeout_s=30)
        if d is not None:
            b.stop_synopt(d)
        (row,) = shortflow.analyze(b.caps.stop()["client"]).table.select(["request_sent_s"]).to_pylist()
        assert not math.isnan(row["request_sent_s"]), "the capture shows no request"
        return row["request_sent_s"]


def main() -> None:
    print("| case | " + " | ".join(SIDES) + " |")
    print("|---" * (len(SIDES) + 1) + "|")
    only = sys.argv[1:]
    unknown = [c for c in only if c not in CASES]
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}: choose from {list(CASES)}")
    for case, drop in CASES.items():
        if only and case not in only:
            continue
        cells = [f"{request_after_first_syn(drop, side):.3f} s" for side in SIDES.values()]
        print(f"| {case} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
