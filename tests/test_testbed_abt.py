"""Connection vectors on the real kernel (root, namespaces): the testbed's own a-b-t client
and server replay a tmix vector file through the testbed's link emulator, and the
analyzer reads the captures back into the same vectors — every size exact, every quiet
time within one round trip — sequential (keep-alive) and concurrent, with losses; each
exchange's time account against the replay's own truth (the server's think times, the
client's pauses); a reader that stops reading (zero window) and a RST after idle."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import shortflow
from shortflow import _core
from shortflow.analyze import CAUSES

pytestmark = pytest.mark.netns

SHORTFLOW = [sys.executable, "-m", "shortflow"]
RTT_US = 20_000

SEQUENTIAL = """\
SEQ 0 3 0 0
w 0 0
r 20000
l 0.000000 0.000000
> 350
t 25000
< 14000
t 400000
> 420
t 0
< 90000
t 600000
> 200
t 150000
< 3000
SEQ 200000 2 1 0
w 0 0
r 20000
l 0.000000 0.000000
> 700
t 60000
< 50000
t 300000
> 90
t 10000
< 800
"""

#: Both sides send on their own clocks: the server answers as soon as it accepts, while
#: the client's 60 kB is still on its way (several round trips), so both have data
#: outstanding at once on the wire.
CONCURRENT = """\
CONC 0 2 2 0 0
w 0 0
r 20000
l 0.000000 0.000000
c> 60000
t> 900000
c> 1000
t> 0
c< 12000
t< 600000
c< 2000
t< 0
"""


def scenario(tmp_path: Path, vectors: str, extra: str = "") -> Path:
    (tmp_path / "in.abt").write_text(vectors)
    s = tmp_path / "s.toml"
    s.write_text(f'[path]\nrtt = "{RTT_US}us"\nbandwidth = "50Mbit"\n{extra}\n'
                 '[workload]\nkind = "abt"\nfile = "in.abt"\nclose = "client"\n')
    return s


def replay(s: Path, pcaps: Path) -> dict[str, Any]:
    out = s.parent / "result.json"
    r = subprocess.run([*SHORTFLOW, "-q", "testbed", "run", str(s), "--pcap-dir", str(pcaps), "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    result: dict[str, Any] = json.loads(out.read_text())
    assert not [c for c in result["connections"] if c.get("error")], result
    return result


def vectors_back(pcap: Path, tmp_path: Path) -> list[dict[str, Any]]:
    out = tmp_path / f"{pcap.stem}.abt"
    r = subprocess.run([*SHORTFLOW, "-q", "analyze", str(pcap), "--abt", str(out)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return _core.abt_parse(out.read_text())


def same_sequential(sent: list[dict[str, Any]], got: list[dict[str, Any]]) -> None:
    assert len(got) == len(sent)
    for a, b in zip(sent, got):
        assert [(e[0], e[2]) for e in b["epochs"]] == [(e[0], e[2]) for e in a["epochs"]], "sizes exact"
        assert abs(b["start_us"] - a["start_us"]) <= RTT_US
        for k, (ea, eb) in enumerate(zip(a["epochs"], b["epochs"])):
            assert abs(eb[1] - ea[1]) <= RTT_US, f"epoch {k}: the server's wait {eb} vs {ea}"
            if k + 1 < len(a["epochs"]):
                assert abs(eb[3] - ea[3]) <= RTT_US, f"epoch {k}: the client's wait {eb} vs {ea}"


@pytest.mark.parametrize("side", ["client", "server"])
def test_sequential_vectors_come_back_from_the_kernel(tmp_path: Path, side: str) -> None:
    result = replay(scenario(tmp_path, SEQUENTIAL), tmp_path / "pcap")
    assert [len(c["exchanges"]) for c in result["connections"]] == [3, 2]
    same_sequential(_core.abt_parse(SEQUENTIAL), vectors_back(tmp_path / "pcap" / f"{side}-side.pcap", tmp_path))


#: Three connections over their own RTTs on a 20 ms path: 20, 90 and 180 ms.
OWN_RTTS = """\
SEQ 0 2 0 0
r 90000
> 300
t 30000
< 20000
t 700000
> 300
t 0
< 4000
SEQ 100000 1 1 0
r 180000
> 500
t 50000
< 60000
SEQ 200000 1 2 0
r 20000
> 200
t 10000
< 1000
"""


def test_each_connection_runs_over_its_vectors_own_rtt(tmp_path: Path) -> None:
    # The emulator adds each vector's RTT beyond path.rtt to its connection's packets:
    # the capture gives back each vector's r (within 10 % and 2 ms) and its quiet times
    # within its own round trip.
    replay(scenario(tmp_path, OWN_RTTS), tmp_path / "pcap")
    sent = _core.abt_parse(OWN_RTTS)
    got = sorted(vectors_back(tmp_path / "pcap" / "client-side.pcap", tmp_path), key=lambda v: v["start_us"])
    assert len(got) == len(sent)
    for a, b in zip(sent, got):
        assert abs(b["min_rtt_us"] - a["min_rtt_us"]) <= 0.1 * a["min_rtt_us"] + 2000, (a, b)
        assert [(e[0], e[2]) for e in b["epochs"]] == [(e[0], e[2]) for e in a["epochs"]], "sizes exact"
        for k, (ea, eb) in enumerate(zip(a["epochs"], b["epochs"])):
            assert abs(eb[1] - ea[1]) <= a["min_rtt_us"], (k, a, b)


def test_concurrent_vectors_come_back_from_the_kernel(tmp_path: Path) -> None:
    replay(scenario(tmp_path, CONCURRENT), tmp_path / "pcap")
    (sent,) = _core.abt_parse(CONCURRENT)
    (got,) = vectors_back(tmp_path / "pcap" / "client-side.pcap", tmp_path)
    assert "concurrent" in got, got
    for side in (0, 1):
        assert [b for b, _ in got["concurrent"][side]] == [b for b, _ in sent["concurrent"][side]], "sizes exact"
        # A side's wait runs from its ADU's last byte leaving, as the analyzer sees it on
        # the wire: within one round trip, even after the client's 60 kB of slow start.
        for (_, wa), (_, wb) in zip(sent["concurrent"][side][:-1], got["concurrent"][side][:-1]):
            assert abs(wb - wa) <= RTT_US, (sent, got)


#: Over 250 ms the client's 15 kB is acknowledged a round trip after it left, so of its
#: 0.6 s wait only ~0.35 s is a rest of the whole connection (nothing outstanding either
#: way): its own quiet time, from its last byte, is what tells its next ADU apart.
LONG_PATH_CONCURRENT = """\
CONC 0 3 1 0 0
w 0 0
r 250000
l 0.000000 0.000000
c> 150000
t> 760000
c> 15000
t> 600000
c> 60000
t> 0
c< 15000
t< 0
"""


@pytest.mark.parametrize("side", ["client", "server"])
def test_a_concurrent_sides_adus_are_told_apart_by_its_own_quiet_time_over_a_long_path(tmp_path: Path, side: str) -> None:
    replay(scenario(tmp_path, LONG_PATH_CONCURRENT), tmp_path / "pcap")
    (sent,) = _core.abt_parse(LONG_PATH_CONCURRENT)
    (got,) = vectors_back(tmp_path / "pcap" / f"{side}-side.pcap", tmp_path)
    assert [[b for b, _ in s] for s in got["concurrent"]] == [[b for b, _ in s] for s in sent["concurrent"]], got
    for (_, wa), (_, wb) in zip(sent["concurrent"][0][:-1], got["concurrent"][0][:-1]):
        assert abs(wb - wa) <= 250_000, (sent, got)


def test_concurrent_vectors_come_back_through_losses(tmp_path: Path) -> None:
    # Both sides' segments dropped by the emulator: a resend neither adds to an ADU nor
    # ends one; seen at the client, the client's drops come after the capture point, so
    # its waits run from the ADU's last new byte as the kernel sent it.
    replay(scenario(tmp_path, CONCURRENT, "[drop]\ndata = [3]\nclient_data = [6, 20]"), tmp_path / "pcap")
    (sent,) = _core.abt_parse(CONCURRENT)
    (got,) = vectors_back(tmp_path / "pcap" / "client-side.pcap", tmp_path)
    for side in (0, 1):
        assert [b for b, _ in got["concurrent"][side]] == [b for b, _ in sent["concurrent"][side]], "sizes exact"
    for (_, wa), (_, wb) in zip(sent["concurrent"][0][:-1], got["concurrent"][0][:-1]):
        assert abs(wb - wa) <= RTT_US, (sent, got)
    a = shortflow.analyze(str(tmp_path / "pcap" / "client-side.pcap"))
    assert sum(a.table.column("retx_timeout_c2s").to_pylist() + a.table.column("retx_fast_c2s").to_pylist()
               + a.table.column("retx_tlp_c2s").to_pylist()) >= 1


def test_vectors_come_back_through_losses_and_the_exchanges_account_matches_the_replay(tmp_path: Path) -> None:
    # Server data segments dropped by the emulator: the repairs cost time, the sizes and
    # quiet times stay the replay's.
    s = scenario(tmp_path, SEQUENTIAL, "[drop]\ndata = [4, 30]")
    replay(s, tmp_path / "pcap")
    sent = _core.abt_parse(SEQUENTIAL)
    got = vectors_back(tmp_path / "pcap" / "server-side.pcap", tmp_path)
    for a, b in zip(sent, got):
        assert [(e[0], e[2]) for e in b["epochs"]] == [(e[0], e[2]) for e in a["epochs"]], "sizes exact"
    a = shortflow.analyze(str(tmp_path / "pcap" / "server-side.pcap"))
    x = a.exchanges.to_pylist()
    assert sum(r["time_timeout_s"] + r["time_fast_retransmit_s"] + r["time_tlp_s"] for r in x) > 0
    # Per exchange, as the replay ran it: seen at the server, the server's think time is
    # the application's (its delayed ACK aside, ≤ 40 ms) and the client's pause before the
    # next request idle, each within a round trip.
    by_conn: dict[int, list[dict[str, Any]]] = {}
    for r in x:
        by_conn.setdefault(r["conn_id"], []).append(r)
    for v, rows in zip(sent, (by_conn[k] for k in sorted(by_conn))):
        assert len(rows) == len(v["epochs"])
        for k, (e, r) in enumerate(zip(v["epochs"], rows)):
            assert abs(r["time_application_s"] - e[1] / 1e6) <= (RTT_US / 1e6) + 0.045, (k, e, r)
            assert abs(sum(r[f"time_{c}_s"] for c in CAUSES) - r["duration_s"]) < 1e-6
            if k > 0:
                pause = v["epochs"][k - 1][3] / 1e6
                assert abs(r["time_idle_s"] - pause) <= RTT_US / 1e6 + 0.005, (k, pause, r)


def test_a_reader_that_stops_reading_closes_its_window(tmp_path: Path) -> None:
    from shortflow.testbed import abt_run, load

    # The reader stops for 400 ms with a buffer smaller than the response: the server fills
    # the window, holds the last sliver (below one segment: the sender's silly-window
    # avoidance, until its probe timer sends it) and then meets a zero window until the
    # reader resumes.
    stall_s = 0.4
    s = load(scenario(tmp_path, "SEQ 0 1 0 0\nr 20000\n> 300\nt 0\n< 40000\n"))
    abt_run.run(s, tmp_path / "pcap", {"stall_ms": stall_s * 1e3})
    a = shortflow.analyze(str(tmp_path / "pcap" / "client-side.pcap"))
    (row,) = a.exchanges.to_pylist()
    assert (row["request_bytes"], row["response_bytes"]) == (300, 40000)
    assert a.table.column("zero_window_stalls").to_pylist()[0] >= 1
    assert row["time_zero_window_s"] > RTT_US / 1e6, row
    # The user waits out the stall: the response ends after it.
    assert row["duration_s"] >= stall_s, row


def test_a_reset_after_idle_ends_the_last_exchange_idle(tmp_path: Path) -> None:
    from shortflow.testbed import abt_run, load

    s = load(scenario(tmp_path, "SEQ 0 2 0 0\nr 20000\n> 300\nt 0\n< 5000\nt 200000\n> 100\nt 0\n< 700\nt 1500000\n"))
    abt_run.run(s, tmp_path / "pcap", {"reset": True})
    a = shortflow.analyze(str(tmp_path / "pcap" / "client-side.pcap"))
    assert a.table.column("outcome").to_pylist() == ["rst"]
    rows = a.exchanges.to_pylist()
    assert [(r["request_bytes"], r["response_bytes"]) for r in rows] == [(300, 5000), (100, 700)]
    # The last exchange's span holds the client's pause before its request (0.2 s) and the
    # 1.5 s rest before the RST: both idle, nobody waiting.
    assert abs(rows[1]["time_idle_s"] - 1.7) <= RTT_US / 1e6 + 0.005, rows[1]
    assert abs(rows[1]["think_before_s"] - 0.2) <= RTT_US / 1e6, rows[1]
    assert rows[1]["time_teardown_s"] < 0.01


def test_the_syn_optimizer_runs_beside_the_abt_peers(tmp_path: Path) -> None:
    # The scenario's SYN optimizer runs in the server's namespace for an a-b-t replay as it
    # does for nginx: the lost SYN/ACK is resent after its 200 ms, not the kernel's 1 s.
    extra = ('[drop]\nsynack = [1]\n[mechanisms.syn_optimizer]\nside = "server"\ndelay = "200ms"\nretries = 3\n')
    result = replay(scenario(tmp_path, SEQUENTIAL, extra), tmp_path / "pcap")
    assert result["synopt"]["resends"] >= 1, result.get("synopt")
    t = shortflow.analyze(str(tmp_path / "pcap" / "server-side.pcap")).table.to_pylist()
    gaps = [g for c in t for g in c["synack_gaps_s"]]
    assert gaps and abs(gaps[0] - 0.2) < 0.05, gaps
