"""A SYN flood to a silent port through a router-mode synopt: the daemon stays up, holds at
most --max-held copies (and --prefix-budget per source /24; the newest are shed beyond),
its memory stays bounded, and its counters add up.
What it resends is counted where an outsider sees it: the server's packet counter of the
rule that silently drops the port's SYNs (originals + resends that crossed the link).
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


def dropped_syns(topo: Topology) -> int:
    """Packets the server's silent-port rule dropped: every SYN that reached the server."""
    out = in_ns(topo.names.ns("server"), "iptables", "-w", "-L", "INPUT", "-v", "-x", "-n").stdout
    (line,) = [x for x in out.splitlines() if f"{topo.names.prefix}silent" in x]
    return int(line.split()[0])


def flood(rate: int, seconds: float, max_held: int, delay_ms: int = 50) -> tuple[dict[str, Any], dict[str, Any], list[int], int]:
    """Runs the flood; returns (generator result, daemon counters, RSS samples in kB, SYNs
    that reached the server). RSS samples start with the daemon's before the flood."""
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
        samples = [rss_kb(d.pid)]
        while g.poll() is None:
            samples.append(rss_kb(d.pid))
            time.sleep(0.1)
        out, err = g.communicate()
        assert g.returncode == 0, err
        time.sleep(0.5 + 4 * delay_ms / 1000)  # every copy expires 4 delays after its SYN
        assert d.poll() is None, "the daemon survived the flood"
        samples.append(rss_kb(d.pid))
        stats, _ = b.stop_synopt(d)
        seen = dropped_syns(topo)
    return json.loads(out), stats, samples, seen


def test_flood_through_router_mode_is_bounded_and_counted():
    rate, seconds, cap = 50_000, 2.0, 4_000  # a copy lives 200 ms (3 resends 50 ms apart, then expiry)
    sent, s, rss, seen = flood(rate, seconds, cap)
    assert sent["sent"] >= 0.99 * rate * seconds and sent["errors"] == 0, sent
    # Every copy received was one of the flood's SYNs: each a new copy taken or shed.
    assert s["packets"] == s["copies_taken"] + s["shed"] + s["duplicates"], s
    assert s["copies_taken"] + s["shed"] >= 0.95 * sent["sent"], (s, sent)
    # Every copy ended one way: answered, expired or replaced (none still held at the end).
    assert s["held"] == 0 and s["answered"] == 0, s
    assert s["copies_taken"] == s["expired"] + s["replaced"], s
    assert s["held_max"] <= cap and s["shed"] > 0, s
    assert s["resends"] > 0 and s["send_errors"] == 0, s
    # The resends the daemon counts are on the wire: the server got them beside the originals.
    assert seen - sent["sent"] == pytest.approx(s["resends"], rel=0.01, abs=20), (seen, sent, s)
    # Copies the kernel could not deliver (the packets went on regardless): counted.
    assert s["bypassed"] + s["packets"] >= sent["sent"], s
    # Memory: bounded by the cap, not by the SYNs seen (100,000 copies would be > 20 MB).
    assert max(rss) < 24_000, rss


def test_the_hold_cap_bounds_what_is_held_and_resent():
    """Copies that would live 2.4 s (resent at 0.6, 1.2, 1.8 s) under 50,000 SYNs/s for 2 s:
    all 100,000 would be held at once without the cap. With --max-held 2000 at most 2000 are
    held at any time, and a copy outlives the flood, so one generation of 2000 copies is all
    that is ever resent (whether the daemon evicts the oldest or sheds the newest): at most
    3 x 2000 resends reach the server, and the daemon's memory grows by far less than 100,000
    copies would take. Measured with a cap of 1,000,000 instead (delay 500 ms): 300,000
    resends on the wire and +29.5 MB."""
    rate, seconds, cap, delay_ms = 50_000, 2.0, 2_000, 600
    sent, s, rss, seen = flood(rate, seconds, cap, delay_ms)
    resent_on_wire = seen - sent["sent"]
    assert 0 < resent_on_wire <= 3 * cap, (resent_on_wire, s)
    assert s["held_max"] <= cap, s
    # 100,000 copies of a 60-byte SYN and their bookkeeping would be > 10 MB.
    assert max(rss) - rss[0] < 4_000, rss
