"""Connection vectors round the simulator and back, as a user runs them: a tmix vector file
→ `shortflow simulate` (workload kind = "abt") with `--pcap` → `shortflow analyze --abt`
→ the same vectors: every request and response size exact, every quiet time within one
round trip, each connection's RTT its own; with losses too. And `analyze --out` writes the
exchanges table beside the connections table."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from shortflow import _core

SHORTFLOW = [sys.executable, "-m", "shortflow"]

#: Three keep-alive connections over 20, 80 and 200 ms, one with a single exchange.
VECTORS = """\
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
t 1200000
> 200
t 150000
< 3000
SEQ 300000 1 1 0
w 0 0
r 80000
l 0.000000 0.000000
> 700
t 60000
< 250000
SEQ 900000 2 2 0
w 0 0
r 200000
l 0.000000 0.000000
> 120
t 10000
< 5000
t 2500000
> 90
t 300000
< 800
"""


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([*SHORTFLOW, *map(str, args)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:{r.stdout}\nstderr:{r.stderr}"
    return r


def roundtrip(tmp_path: Path, extra: str, point: str, vectors: str = VECTORS) -> tuple[list[dict], list[dict]]:
    (tmp_path / "in.abt").write_text(vectors)
    scenario = tmp_path / "s.toml"
    scenario.write_text(f"""
[path]
rtt = "2ms"
bandwidth = "20Mbit"
[capture]
point = "{point}"
[client]
quickack = true
[workload]
kind = "abt"
file = "in.abt"
close = "client"
{extra}
""")
    run("-q", "simulate", scenario, "--pcap", tmp_path / "x.pcap")
    run("-q", "analyze", tmp_path / "x.pcap", "--abt", tmp_path / "out.abt", "--out", tmp_path / "out")
    return _core.abt_parse(vectors), _core.abt_parse((tmp_path / "out.abt").read_text())


def check(sent: list[dict], got: list[dict]) -> None:
    assert len(got) == len(sent)
    for a, b in zip(sent, got):
        rtt = a["min_rtt_us"] + 2000
        assert [(e[0], e[2]) for e in b["epochs"]] == [(e[0], e[2]) for e in a["epochs"]], "sizes exact"
        # The RTT seen is the vector's (path and its own delay), serialization aside.
        assert abs(b["min_rtt_us"] - rtt) <= 0.1 * rtt + 2000, (a, b)
        # Start times as sent; quiet times within one round trip.
        assert abs(b["start_us"] - a["start_us"]) <= rtt, (a, b)
        for ea, eb in zip(a["epochs"], b["epochs"]):
            assert abs(eb[1] - ea[1]) <= rtt, f"server's wait {eb} vs {ea}"
        for ea, eb in zip(a["epochs"][:-1], b["epochs"][:-1]):
            assert abs(eb[3] - ea[3]) <= rtt, f"client's wait {eb} vs {ea}"


@pytest.mark.parametrize("point", ["client", "server"])
def test_vectors_come_back_from_the_simulator(tmp_path: Path, point: str) -> None:
    sent, got = roundtrip(tmp_path, "", point)
    check(sent, got)
    # The exchanges table beside the connections table, one row per epoch.
    x = pq.read_table(tmp_path / "out" / "exchanges.parquet")
    c = pq.read_table(tmp_path / "out" / "connections.parquet")
    assert x.num_rows == sum(len(v["epochs"]) for v in sent)
    assert c.num_rows == len(sent)
    assert x.schema.field("ttfb_s").metadata[b"unit"] == b"s"


def test_vectors_come_back_through_losses(tmp_path: Path) -> None:
    # Data segments lost at the router: sizes stay exact (a resend counts once), the
    # repairs' time lands in the exchanges' time account, not in the quiet times.
    sent, got = roundtrip(tmp_path, "[drop]\ndata = [3, 9, 40]", "server")
    assert [(e[0], e[2]) for v in got for e in v["epochs"]] == [(e[0], e[2]) for v in sent for e in v["epochs"]]
    x = pq.read_table(tmp_path / "out" / "exchanges.parquet").to_pydict()
    repaired = sum(x["time_timeout_s"]) + sum(x["time_fast_retransmit_s"]) + sum(x["time_tlp_s"])
    assert repaired > 0, "the losses' repairs are in the exchanges' account"
    c = pq.read_table(tmp_path / "out" / "connections.parquet").to_pydict()
    assert sum(c["retx_timeout_s2c"]) + sum(c["retx_fast_s2c"]) + sum(c["retx_tlp_s2c"]) >= 1


def test_a_vector_file_the_simulator_cannot_replay_is_refused_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "bad.abt").write_text("SEQ 0 1 0 0\n> 10\nt x\n< 20\n")
    s = tmp_path / "s.toml"
    s.write_text('[path]\nrtt = "10ms"\n[workload]\nkind = "abt"\nfile = "bad.abt"\n')
    r = subprocess.run([*SHORTFLOW, "simulate", str(s)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "workload.file" in r.stderr and "line 3" in r.stderr and "not a whole number" in r.stderr
    (tmp_path / "conc.abt").write_text("CONC 0 0 0 7 0\n")
    s.write_text('[path]\nrtt = "10ms"\n[workload]\nkind = "abt"\nfile = "conc.abt"\n')
    r = subprocess.run([*SHORTFLOW, "simulate", str(s)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "connection 7: no ADU on either side" in r.stderr, r.stderr


#: Two concurrent connections: both sides write on their own (an upload while a response
#: streams; a server pushing three ADUs after a short request), waits of 0.7-1.2 s (a
#: side's ADUs are told apart by quiet times of 0.5 s or more).
CONCURRENT = """\
CONC 0 2 2 1 0
r 40000
c> 60000
t> 800000
c< 90000
t< 1200000
c> 300
t> 0
c< 2000
t< 0
CONC 500000 1 3 2 0
r 100000
c> 200
t> 0
c< 30000
t< 700000
c< 4000
t< 900000
c< 500
t< 0
"""


def check_concurrent(sent: list[dict], got: list[dict]) -> None:
    assert len(got) == len(sent)
    for a, b in zip(sent, got):
        assert "concurrent" in b, b
        rtt = a["min_rtt_us"] + 2000
        assert abs(b["start_us"] - a["start_us"]) <= rtt, (a, b)
        for side in (0, 1):
            assert [n for n, _ in b["concurrent"][side]] == [n for n, _ in a["concurrent"][side]], "sizes exact"
            for (_, wa), (_, wb) in zip(a["concurrent"][side], b["concurrent"][side]):
                assert abs(wb - wa) <= rtt, f"side {side}: waits {b['concurrent'][side]} vs {a['concurrent'][side]}"


@pytest.mark.parametrize("point", ["client", "server"])
def test_concurrent_vectors_come_back_from_the_simulator(tmp_path: Path, point: str) -> None:
    # Each side's ADUs exact, though the other side's data cuts them into several
    # exchanges, and each wait within one round trip: a side's wait runs from its ADU's
    # last byte leaving to its next ADU's first, in the replay as on the wire.
    sent, got = roundtrip(tmp_path, "", point, CONCURRENT)
    check_concurrent(sent, got)
    x = pq.read_table(tmp_path / "out" / "exchanges.parquet").to_pydict()
    assert any(x["concurrent"][i] for i, conn in enumerate(x["conn_id"]) if conn == 0), "both sides sent at once"


def test_concurrent_vectors_come_back_through_losses(tmp_path: Path) -> None:
    # Segments of both sides lost before the server's capture point: a resend neither
    # adds to an ADU nor ends one, and a side's quiet time runs from its last new byte.
    sent, got = roundtrip(tmp_path, "[drop]\ndata = [2, 30, 61]\nclient_data = [5, 33]", "client", CONCURRENT)
    check_concurrent(sent, got)
    c = pq.read_table(tmp_path / "out" / "connections.parquet").to_pydict()
    resent = [sum(c[f"retx_{k}_{d}"][i] for k in ("timeout", "fast", "tlp") for d in ("c2s", "s2c")) for i in range(2)]
    assert sum(resent) >= 3, resent


def test_concurrent_vectors_are_replayed_each_side_on_its_own(tmp_path: Path) -> None:
    # Each side's bytes exact, and a pushing server's ADUs no sooner than their waits
    # after the one before has left.
    (tmp_path / "in.abt").write_text(CONCURRENT)
    scenario = tmp_path / "s.toml"
    scenario.write_text('[path]\nrtt = "2ms"\nbandwidth = "20Mbit"\n[capture]\npoint = "server"\n'
                        '[workload]\nkind = "abt"\nfile = "in.abt"\nclose = "client"\n')
    run("-q", "simulate", scenario, "--pcap", tmp_path / "x.pcap")
    run("-q", "analyze", tmp_path / "x.pcap", "--out", tmp_path / "out")
    c = pq.read_table(tmp_path / "out" / "connections.parquet").to_pydict()
    assert (c["bytes_c2s"], c["bytes_s2c"]) == ([60300, 200], [92000, 34500])
    # The pusher's ADUs: the last (500 B) goes 0.7 + 0.9 s after the first has left.
    from shortflow.plot.tsg import packets

    pk = packets(tmp_path / "x.pcap", [1])[1]
    data = [(t, n) for t, n, client in zip(pk["ts_ns"], pk["len"], pk["from_client"]) if n and not client]
    sent, first_adu_sent = 0, None
    for t, n in data:
        sent += n
        if sent == 30000:
            first_adu_sent = t
    assert first_adu_sent is not None and data[-1][1] == 500, data
    assert (data[-1][0] - first_adu_sent) / 1e9 >= 1.6 - 1e-6, data[-3:]


def random_vectors(seed: int, n: int = 12, server_delays_us: tuple[int, ...] = (0, 5000, 50000, 300000)) -> str:
    """`n` connection vectors, sequential and concurrent, over paths of 10-250 ms: sizes
    from a request's 100 B to a 150 kB response; concurrent waits of 0.7-2 s, beyond the
    0.5 s a side's ADUs are told apart by; a sequential server's think from
    `server_delays_us`."""
    r = random.Random(seed)
    out, start = [], 0
    for i in range(n):
        rtt = r.choice([10, 30, 80, 150, 250]) * 1000
        if r.random() < 0.5:
            k = r.randint(1, 4)
            epochs = [(r.choice([100, 400, 3000]), r.choice(server_delays_us),
                       r.choice([100, 3000, 15000, 60000, 150000]), round(r.uniform(0.05, 2.0) * 1e6) if j + 1 < k else 0)
                      for j in range(k)]
            out.append(f"SEQ {start} {k} {i} 0\nr {rtt}\n" + "".join(f"> {a}\nt {d}\n< {b}\nt {w}\n" for a, d, b, w in epochs))
        else:
            sides = []
            for _ in range(2):
                k = r.randint(1, 4)
                sides.append([(r.choice([100, 3000, 15000, 60000, 150000]), round(r.uniform(0.7, 2.0) * 1e6) if j + 1 < k else 0)
                              for j in range(k)])
            out.append(f"CONC {start} {len(sides[0])} {len(sides[1])} {i} 0\nr {rtt}\n"
                       + "".join(f"c> {b}\nt> {w}\n" for b, w in sides[0]) + "".join(f"c< {b}\nt< {w}\n" for b, w in sides[1]))
        start += r.randint(100, 900) * 1000
    return "".join(out)


#: The server answers the client's second ADU with 100 B, then pushes 15 kB 0.65 s later of
#: its own accord, over 250 ms: seen near the server, the rest after the ACK of its 100 B
#: is 0.4 s, under the 0.5 s that tells ADUs apart; its own quiet time is 0.65 s.
PUSH_AFTER_ANSWER = """\
CONC 0 2 3 0 0
r 250000
c> 1000
t> 800000
c> 20000
t> 0
c< 1000
t< 1500000
c< 100
t< 650000
c< 15000
t< 0
"""


@pytest.mark.parametrize("point", ["client", "server"])
def test_a_push_after_an_answer_is_told_apart_by_the_servers_own_quiet_time(tmp_path: Path, point: str) -> None:
    sent, got = roundtrip(tmp_path, "", point, PUSH_AFTER_ANSWER)
    check_concurrent(sent, got)


@pytest.mark.parametrize("seed", [8, 10, 19, 21])
@pytest.mark.parametrize("point", ["client", "server"])
def test_random_vectors_through_random_losses_come_back_readable_and_whole(tmp_path: Path, seed: int, point: str) -> None:
    # Losses of every kind at 2 %: whatever the capture point saw, the file analyze
    # writes reads back, and every connection's bytes come back. A sequential vector's
    # sizes are exact; a concurrent side's ADUs may only merge (a loss repair can run
    # across the quiet time that tells two apart), never split. Seeds 10 and 21 (client)
    # have a request whose answer came alone in the next exchange.
    text = random_vectors(seed)
    (tmp_path / "in.abt").write_text(text)
    scenario = tmp_path / "s.toml"
    scenario.write_text(f'seed = {seed}\n[path]\nrtt = "2ms"\nbandwidth = "20Mbit"\n[capture]\npoint = "{point}"\n'
                        '[random_loss]\ndata = 0.02\nclient_data = 0.02\nack = 0.02\nsynack = 0.02\n'
                        '[workload]\nkind = "abt"\nfile = "in.abt"\nclose = "client"\n')
    run("-q", "simulate", scenario, "--pcap", tmp_path / "x.pcap")
    run("-q", "analyze", tmp_path / "x.pcap", "--abt", tmp_path / "out.abt")
    sent = _core.abt_parse(text)
    got = sorted(_core.abt_parse((tmp_path / "out.abt").read_text()), key=lambda v: v["start_us"])
    assert len(got) == len(sent)
    for a, b in zip(sent, got):
        if "epochs" in a:
            assert [(e[0], e[2]) for e in b["epochs"]] == [(e[0], e[2]) for e in a["epochs"]], (a, b)
            continue
        for side in (0, 1):
            # Sides that never had data outstanding at once come back as a sequential
            # vector of the same ADUs, one side's at a time.
            mine = [n for n, _ in a["concurrent"][side]]
            theirs = [n for n, _ in b["concurrent"][side]] if "concurrent" in b else \
                [e[2 * side] for e in b["epochs"] if e[2 * side]]
            assert sum(theirs) == sum(mine) and len(theirs) <= len(mine), (a, b)
            merged, k = [], 0
            for n in theirs:  # each ADU that came back is a run of consecutive ADUs sent
                total = 0
                while total < n:
                    total += mine[k]
                    k += 1
                merged.append(total)
            assert merged == theirs, (a, b)


#: A server that thinks 1.5 s, then 0.8 s, before answering: longer than the 0.5 s rest
#: that tells a side's own ADUs apart.
SLOW_SERVER = """\
SEQ 0 2 0 0
w 0 0
r 40000
l 0.000000 0.000000
> 300
t 1500000
< 20000
t 700000
> 200
t 800000
< 5000
"""


@pytest.mark.parametrize("point", ["client", "server"])
def test_an_answer_after_a_long_think_is_its_requests(tmp_path: Path, point: str) -> None:
    sent, got = roundtrip(tmp_path, "", point, SLOW_SERVER)
    check(sent, got)
    # The exchanges table pairs each request with its answer, the think in its TTFB.
    x = pq.read_table(tmp_path / "out" / "exchanges.parquet").to_pylist()
    assert [(r["request_bytes"], r["response_bytes"]) for r in x] == [(300, 20000), (200, 5000)], x
    rtt = 0.042
    for r, think in zip(x, (1.5, 0.8)):
        assert abs(r["ttfb_s"] - think) <= rtt, (r["ttfb_s"], think)


#: The stacks' knobs a user turns, each beside the vectors' defaults.
KNOBS = {
    "mss-536": '[client]\nmss = "536B"\n[server]\nmss = "536B"\n',
    "sack-off": "[client]\nsack = false\n[server]\nsack = false\n",
    "timestamps-off": "[client]\ntimestamps = false\n[server]\ntimestamps = false\n",
    "bsd-tick-acks": '[client]\ndelayed_ack = "bsd_tick"\n',
    "iw-2": "[server]\ninitial_window = 2\n",
}


@pytest.mark.parametrize("knob", sorted(KNOBS))
@pytest.mark.parametrize("point", ["client", "server"])
def test_random_vectors_come_back_exact_with_the_stacks_knobs_turned(tmp_path: Path, knob: str, point: str) -> None:
    # Seeds none of the other tests use, the segment size, SACK, timestamps, the
    # delayed-ACK clock and the initial window turned, servers thinking up to 1.5 s:
    # without loss every ADU of both kinds of vector comes back with its size, concurrent
    # ones too, and every answer in its request's exchange.
    seed = 302
    text = random_vectors(seed, server_delays_us=(0, 5000, 300000, 700000, 1500000))
    (tmp_path / "in.abt").write_text(text)
    scenario = tmp_path / "s.toml"
    scenario.write_text(f'seed = {seed}\n[path]\nrtt = "2ms"\nbandwidth = "20Mbit"\n[capture]\npoint = "{point}"\n'
                        f'{KNOBS[knob]}[workload]\nkind = "abt"\nfile = "in.abt"\nclose = "client"\n')
    run("-q", "simulate", scenario, "--pcap", tmp_path / "x.pcap")
    run("-q", "analyze", tmp_path / "x.pcap", "--abt", tmp_path / "out.abt", "--out", tmp_path / "out")
    sent = _core.abt_parse(text)
    got = sorted(_core.abt_parse((tmp_path / "out.abt").read_text()), key=lambda v: v["start_us"])
    assert len(got) == len(sent)
    assert any("concurrent" in v for v in sent) and any("epochs" in v for v in sent)
    assert any(e[1] > 500_000 for v in sent for e in v.get("epochs", []))
    # Connections open in the vectors' start order: conn_id k is vector k.
    sequential = {k for k, v in enumerate(sent) if "epochs" in v}
    x = pq.read_table(tmp_path / "out" / "exchanges.parquet").to_pylist()
    apart = [r for r in x if r["conn_id"] in sequential and r["response_bytes"] and not r["request_bytes"]]
    assert not apart, "an answer apart from its request"
    for a, b in zip(sent, got):
        if "epochs" in a:
            assert [(e[0], e[2]) for e in b["epochs"]] == [(e[0], e[2]) for e in a["epochs"]], (a, b)
        else:
            assert [[n for n, _ in side] for side in b["concurrent"]] == [[n for n, _ in side] for side in a["concurrent"]], (a, b)


def test_every_real_captures_vectors_read_back(tmp_path: Path) -> None:
    # What analyze --abt writes of the real captures (tests/data/real, SOURCES.md there)
    # is tmix text that reads back, one vector per connection that carried data.
    import shortflow
    from shortflow.abt import write_abt

    captures = sorted((Path(__file__).parent / "data" / "real").glob("*.pcap*"))
    assert len(captures) >= 40
    written = 0
    for capture in captures:
        a = shortflow.analyze(str(capture))
        n = write_abt(a, tmp_path / "out.abt")
        assert len(_core.abt_parse((tmp_path / "out.abt").read_text())) == n, capture.name
        written += n
    assert written > 100
