"""A SYN flood to a silent port through a router-mode synopt: the daemon stays up, holds at
most --max-held copies (and --prefix-budget per source /24; the newest are shed beyond),
its memory stays bounded, and its counters add up.
Short (2 s) here; `benches/synopt_flood.py` runs the issue's 50,000 SYNs/s for 10 s."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from shortflow import synopt
from shortflow.exceptions import SynoptError
from shortflow.testbed import names as N
from shortflow.testbed.system import in_ns
from shortflow.testbed.topology import Topology
from synopt_bed import Bed

pytestmark = pytest.mark.netns

SILENT_PORT = 9


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def flood(rate: int, seconds: float, max_held: int, delay_ms: int = 50) -> tuple[dict[str, Any], dict[str, Any], list[int]]:
    """Runs the flood; returns (generator result, daemon counters, RSS samples in kB)."""
    try:
        exe = Path(synopt.binary())
    except SynoptError as e:
        pytest.skip(str(e))
    gen = exe.with_name("shortflow-synflood")
    with Topology() as topo:
        topo.set_route("client", [])
        topo.set_route("server", [])
        # Silent: the server drops the port's SYNs (no RST), so no copy is ever answered.
        in_ns(topo.names.ns("server"), "iptables", "-A", "INPUT", "-p", "tcp", "--dport", str(SILENT_PORT),
              "-m", "comment", "--comment", f"{topo.names.prefix}silent", "-j", "DROP")
        b = Bed(topo, None)  # type: ignore[arg-type]
        d = b.start_synopt("router", "-d", str(delay_ms), "-r", "3", "--router", "-p", str(SILENT_PORT),
                           "--max-held", str(max_held), "--no-ipv6")
        g = topo.spawn("synflood", "client", [str(gen), "--src", N.CLIENT_IP, "--sources", "200", "--dst", N.SERVER_IP,
                                              "--port", str(SILENT_PORT), "--rate", str(rate), "--seconds", str(seconds)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        samples = []
        while g.poll() is None:
            samples.append(rss_kb(d.pid))
            time.sleep(0.1)
        out, err = g.communicate()
        assert g.returncode == 0, err
        time.sleep(0.5 + 4 * delay_ms / 1000)  # every copy expires 4 delays after its SYN
        assert d.poll() is None, "the daemon survived the flood"
        samples.append(rss_kb(d.pid))
        stats, _ = b.stop_synopt(d)
    return json.loads(out), stats, samples


def test_flood_through_router_mode_is_bounded_and_counted():
    rate, seconds, cap = 50_000, 2.0, 4_000  # a copy lives 200 ms (3 resends 50 ms apart, then expiry)
    sent, s, rss = flood(rate, seconds, cap)
    assert sent["sent"] >= 0.99 * rate * seconds and sent["errors"] == 0, sent
    # Every copy received was one of the flood's SYNs: each a new copy taken or shed.
    assert s["packets"] == s["copies_taken"] + s["shed"] + s["duplicates"], s
    assert s["copies_taken"] + s["shed"] >= 0.95 * sent["sent"], (s, sent)
    # Every copy ended one way: answered, expired or replaced (none still held at the end).
    assert s["held"] == 0 and s["answered"] == 0, s
    assert s["copies_taken"] == s["expired"] + s["replaced"], s
    assert s["held_max"] <= cap and s["shed"] > 0, s
    assert s["resends"] > 0 and s["send_errors"] == 0, s
    # Copies the kernel could not deliver (the packets went on regardless): counted.
    assert s["bypassed"] + s["packets"] >= sent["sent"], s
    # Memory: bounded by the cap, not by the SYNs seen (100,000 copies would be > 20 MB).
    assert max(rss) < 24_000, rss
