"""The issue's flood: SYNs at RATE per second for SECONDS to a silent port, from the client
namespace through a router-mode `shortflow synopt` (-r 3), with a cap on held copies.
Prints the generator's rate, the daemon's counters, its resend lateness and its VmRSS
(sampled every 100 ms). The test `tests/test_synopt_flood.py` is the 2 s version.

    sudo .venv/bin/python benches/synopt_flood.py [RATE SECONDS MAX_HELD DELAY_MS] ...
    sudo .venv/bin/python benches/synopt_flood.py 50000 10 65536 200 50000 10 10000 200
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_synopt_flood import flood


def main() -> None:
    args = [int(a) for a in sys.argv[1:]] or [50_000, 10, 65_536, 200]
    for rate, seconds, cap, delay in zip(args[::4], args[1::4], args[2::4], args[3::4]):
        sent, s, rss, reached = flood(rate, float(seconds), cap, delay)
        adds_up = s["copies_taken"] == s["held"] + s["answered"] + s["expired"] + s["replaced"]
        print(json.dumps({"rate": rate, "seconds": seconds, "max_held": cap, "delay_ms": delay, "generator": sent,
                          "daemon": s, "rss_kB_max": max(rss), "rss_kB_first": rss[0], "counters_add_up": adds_up,
                          "syns_at_server": reached}))


if __name__ == "__main__":
    main()
