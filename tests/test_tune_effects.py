"""Each `shortflow tune` knob checked by what the kernel then does, with and without tune in
the same test: the RTO a connection gets (`tcpi_rto`), the window after idle
(`tcpi_snd_cwnd`), the ACK delay seen on the wire. The program is attached to a cgroup the
test creates; only the probe processes the test starts in that cgroup, in namespaces the test
created, are touched. "Without" is the same run on a port the program's scope leaves alone
(or the same namespace before `apply`)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from leftover_snapshot import bpf_pins
from netns import Pair, namespace_pair
from shortflow.host import cgroup2_root
from shortflow.tcp import read_pcap
from shortflow.testbed.names import PREFIX, RUN_ID_PREFIX_ENV
from shortflow.tune import TuneSettings, apply, revert, status

pytestmark = pytest.mark.netns

PROBE = Path(__file__).with_name("tcp_effect_probe.py")
JIFFY_MS = 4  # HZ 250 on this machine; timers land on this grid


@pytest.fixture
def cgroup() -> Iterator[Path]:
    tag = os.environ.get(RUN_ID_PREFIX_ENV, "")
    cg = cgroup2_root() / f"{PREFIX}{(tag + os.urandom(3).hex())[:6]}-tfx"
    cg.mkdir()
    yield cg
    cg.rmdir()


@pytest.fixture
def pair() -> Iterator[Pair]:
    with namespace_pair() as p:
        yield p


def _spawn(pair: Pair, ns: str, cgroup: Path | None, *args: str) -> subprocess.Popen[str]:
    """The probe in `ns`, inside `cgroup` (entered before exec, so every socket it opens is
    the cgroup's; `ip netns exec` remounts /sys, so it is entered from outside)."""
    def enter() -> None:
        if cgroup is not None:
            (cgroup / "cgroup.procs").write_text(str(os.getpid()))

    p = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, str(PROBE), *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=enter)
    pair.procs.append(p)
    return p


def exchange(pair: Pair, cgroup: Path | None, port: int, *, request: int = 300, response: int = 20_000,
             idle_s: float = 0.0, cc: str = "", dribble: tuple[int, float] | None = None,
             source: str = "") -> tuple[dict, dict]:
    """One connection client -> server on `port`: (server's TCP_INFO record, client's)."""
    if dribble:
        request = dribble[0] * 100
    read_delay = dribble[0] * dribble[1] + 0.1 if dribble else 0.0
    srv = _spawn(pair, pair.server, cgroup, "server", str(port), str(request), str(response), str(idle_s), cc,
                 str(read_delay))
    assert srv.stdout is not None
    assert srv.stdout.readline().strip() == "listening", srv.communicate(timeout=5)
    extra = [str(dribble[0]), str(dribble[1]), source] if dribble else []
    cli = _spawn(pair, pair.client, cgroup, "client", pair.server_ip, str(port), str(request), *extra)
    c_out, c_err = cli.communicate(timeout=60)
    s_out, s_err = srv.communicate(timeout=60)
    assert cli.returncode == 0 and srv.returncode == 0, (c_err, s_err)
    return json.loads(s_out.splitlines()[-1]), json.loads(c_out.splitlines()[-1])


def ms(v_us: int) -> float:
    return v_us / 1000


def test_rto_min_moves_the_rto_of_both_ends_on_its_port_only(tmp_path, cgroup, pair):
    state = tmp_path / "state.json"
    apply(TuneSettings(rto_min_s=0.05, port=8080, cgroup=cgroup), state_path=state)
    try:
        tuned_s, tuned_c = exchange(pair, cgroup, 8080)
        plain_s, plain_c = exchange(pair, cgroup, 8081)
        counters = status(state_path=state)["bpf"]["counters"]
    finally:
        revert(state_path=state)
    # veth RTT is tens of µs: the RTO is the floor plus a jiffy or two.
    for side in (tuned_s["sent"], tuned_c["done"]):
        assert 50 <= ms(side["rto_us"]) <= 50 + 2 * JIFFY_MS, side
    for side in (plain_s["sent"], plain_c["done"]):
        assert 200 <= ms(side["rto_us"]) <= 200 + 2 * JIFFY_MS, side
    assert counters["rto_min_set"] >= 2 and counters["setsockopt_errors"] == 0, counters


def test_super_fast_retransmit_moves_the_rto_of_the_sender(tmp_path, cgroup, pair):
    """On veth the handshake RTT is ~50 µs, so RTT x 2 is below the kernel's floor of 2
    jiffies: the sender's RTO becomes the floor (8 ms) plus the RTT, rounded up to jiffies,
    instead of 200 ms; the port outside the scope keeps 200 ms."""
    state = tmp_path / "state.json"
    apply(TuneSettings(sfr_factor=2.0, sfr_cutout_bytes=10_000_000, port=8080, cgroup=cgroup), state_path=state)
    try:
        c0 = status(state_path=state)["bpf"]["counters"]  # apply's own test connection counted
        tuned_s, tuned_c = exchange(pair, cgroup, 8080)
        plain_s, _ = exchange(pair, cgroup, 8081)
        c1 = status(state_path=state)["bpf"]["counters"]
        c = {k: c1[k] - c0[k] for k in c1}
    finally:
        revert(state_path=state)
    assert 2 * JIFFY_MS <= ms(tuned_s["sent"]["rto_us"]) <= 4 * JIFFY_MS, tuned_s
    assert 2 * JIFFY_MS <= ms(tuned_c["done"]["rto_us"]) <= 4 * JIFFY_MS, tuned_c
    assert 200 <= ms(plain_s["sent"]["rto_us"]) <= 200 + 2 * JIFFY_MS, plain_s
    # Floors at listen and connect, SFR after each handshake, nothing refused.
    assert c["sfr_floor_set"] >= 2 and c["sfr_set"] == 2 and c["setsockopt_errors"] == 0, c


def test_super_fast_retransmit_cutout_restore_cannot_raise_the_rto_again(tmp_path, cgroup, pair):
    """Past the cut-out the minimum RTO goes back to 200 ms, but the kernel raises a
    connection's rttvar only when its RTT varies: the RTO stays where SFR put it. This test
    pins that down (README: what the restore costs)."""
    state = tmp_path / "state.json"
    apply(TuneSettings(sfr_factor=2.0, sfr_cutout_bytes=10_000, port=8080, cgroup=cgroup), state_path=state)
    try:
        tuned_s, _ = exchange(pair, cgroup, 8080, response=200_000)
        c = status(state_path=state)["bpf"]["counters"]
    finally:
        revert(state_path=state)
    assert c["sfr_restored"] >= 1, c
    assert ms(tuned_s["closed"]["rto_us"]) <= 4 * JIFFY_MS, tuned_s


def test_delack_max_shortens_the_ack_delay_on_the_wire(tmp_path, cgroup, pair):
    """Lone 100-byte segments 60 ms apart: once quick-ACK mode is over Linux delays each
    ACK by its ato (40 ms); with --delack-max 8ms the ACK leaves within ~2 jiffies."""
    state = tmp_path / "state.json"
    pcap = tmp_path / "acks.pcap"
    apply(TuneSettings(delack_max_s=0.008, port=8080, cgroup=cgroup), state_path=state)
    try:
        with pair.capture(pair.server, pair.server_dev, pcap, "tcp"):
            exchange(pair, cgroup, 8080, response=10, dribble=(24, 0.06))
            exchange(pair, cgroup, 8081, response=10, dribble=(24, 0.06))
    finally:
        revert(state_path=state)
    delays = ack_delays(pcap)
    tuned, plain = delays[8080][16:], delays[8081][16:]  # past quick-ACK mode (16 segments, TCP_MAX_QUICKACKS)
    assert tuned and plain
    assert max(tuned) <= 8 + 2 * JIFFY_MS, delays
    # Linux's ato is 40 ms; under CPU contention a late segment now and then is ACKed with
    # the next one, so the median says it.
    assert statistics.median(plain) >= 30, delays


def ack_delays(pcap: Path) -> dict[int, list[float]]:
    """Per server port: ms from each client data segment to the server's first segment
    acknowledging it."""
    out: dict[int, list[float]] = {}
    waiting: dict[int, list[tuple[int, float]]] = {}
    for seg in read_pcap(pcap):
        if seg.payload and seg.dst_port in (8080, 8081):
            waiting.setdefault(seg.dst_port, []).append((seg.seq + seg.payload, seg.ts))
        elif seg.src_port in (8080, 8081) and seg.flags & 0x10:
            pending = waiting.get(seg.src_port, [])
            while pending and (seg.ack - pending[0][0]) % 2**32 < 2**31:  # ack >= end (mod 2^32)
                _, t = pending.pop(0)
                out.setdefault(seg.src_port, []).append((seg.ts - t) * 1000)
    return out


def test_super_fast_retransmit_repairs_a_tail_loss_earlier_over_60ms(tmp_path, cgroup):
    """The shipped `001-sfr-tail-loss`: the testbed's 60 ms path, the response's last
    segment (the 8th: 10 kB and nginx's headers) lost, no tail loss probe on the server
    (the scenario's `server.tlp = false`): only the server's RTO repairs it.
    Linux: RTO = SRTT + max(2 x RTT, 200 ms) = 260 ms; SFR x2: SRTT + 2 x RTT = 180 ms."""
    from shortflow import testbed
    from shortflow.scenario import Scenario

    s = testbed.load(Scenario.builtin("001-sfr-tail-loss"))
    assert s.plan.server.sysctls.get("net.ipv4.tcp_early_retrans") == 0, s.plan.server  # TLP off by the plan
    plain = testbed.run(s, cgroup=str(cgroup))["connections"][0]
    state = tmp_path / "state.json"
    apply(TuneSettings(cgroup=cgroup, sfr_factor=2.0, port=8080), state_path=state)
    try:
        sfr = testbed.run(s, cgroup=str(cgroup))["connections"][0]
    finally:
        revert(state_path=state)
    for c in (plain, sfr):
        assert c["status"] == 200 and c["timeouts"] == 1 and c["retransmissions"] == 1, c
    # 80 ms earlier, within a few jiffies and the emulator's jitter. The bound above is
    # looser: both RTOs start from their own run's SRTT, and on a loaded machine the two
    # runs' RTT samples differ by tens of ms (CI measured 110.5 ms once).
    assert 0.06 <= plain["complete_s"] - sfr["complete_s"] <= 0.13, (plain, sfr)


def tune_cli(pair: Pair, ns: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`shortflow tune` run inside namespace `ns` (where its routes and sysctls act)."""
    return subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-m", "shortflow", "tune", *args],
                          capture_output=True, text=True, timeout=60)


def test_quickack_acts_on_the_default_routes_peers_only_and_refuses_a_scope(tmp_path, pair):
    """`--quickack` is the default routes' metric in the namespace where it is applied: a
    peer reached through the default route gets every ACK at once, a peer on the link's own
    route keeps Linux's delayed ACKs; with a --scope it is refused."""
    r = tune_cli(pair, pair.server, "apply", "--quickack", "--scope", "port=8080", "--state", str(tmp_path / "x.json"))
    assert r.returncode == 2 and "cannot honour --scope" in r.stderr and "--delack-max" in r.stderr, r.stderr
    # A second client address, reached from the server through its default route only.
    pair.exec(pair.client, "ip", "addr", "add", "10.231.5.1/32", "dev", pair.client_dev)
    pair.exec(pair.server, "ip", "route", "add", "default", "via", pair.client_ip, "dev", pair.server_dev)
    state = tmp_path / "state.json"
    pcap = tmp_path / "acks.pcap"
    r = tune_cli(pair, pair.server, "apply", "--quickack", "--state", str(state))
    assert r.returncode == 0 and "only peers through the default routes" in r.stderr, r.stderr
    try:
        with pair.capture(pair.server, pair.server_dev, pcap, "tcp"):
            exchange(pair, None, 8080, response=10, dribble=(24, 0.06), source="10.231.5.1")
            exchange(pair, None, 8081, response=10, dribble=(24, 0.06))  # the link's own route
    finally:
        r = tune_cli(pair, pair.server, "revert", "--state", str(state))
        assert r.returncode == 0, r.stderr
    delays = ack_delays(pcap)
    assert max(delays[8080]) <= 2, delays  # every ACK at once, past the 16 quick ACKs too
    assert statistics.median(delays[8081][16:]) >= 30, delays
    assert "quickack" not in pair.exec(pair.server, "ip", "route").stdout


@pytest.mark.parametrize("cc", ["cubic", "bbr"])
def test_slow_start_after_idle_collapses_cubics_window_only(tmp_path, pair, cc):
    """300 kB sent, 0.5 s idle (more than the RTO), one more segment: with slow start after
    idle on (Linux's default), CUBIC's window is halved for every RTO the idle lasted, down to
    the initial window (tcp_cwnd_restart(): 0.5 s over a 204 ms RTO, two halvings); `tune apply --slow-start-after-idle off` in the namespace keeps it.
    BBR keeps its window either way, and apply says so."""
    state = tmp_path / "state.json"
    on_s, _ = exchange(pair, None, 8080, response=300_000, idle_s=0.5, cc=cc)
    r = tune_cli(pair, pair.server, "apply", "--slow-start-after-idle", "off", "--state", str(state))
    assert r.returncode == 0, r.stderr
    assert ("bbr, which keeps its window" in r.stderr) == (pair.exec(
        pair.server, "sysctl", "-n", "net.ipv4.tcp_congestion_control").stdout.strip() == "bbr"), r.stderr
    try:
        off_s, _ = exchange(pair, None, 8081, response=300_000, idle_s=0.5, cc=cc)
    finally:
        assert tune_cli(pair, pair.server, "revert", "--state", str(state)).returncode == 0
    assert pair.exec(pair.server, "sysctl", "-n", "net.ipv4.tcp_slow_start_after_idle").stdout.strip() == "1"
    before_on, after_on = on_s["before_idle_send"]["snd_cwnd"], on_s["after_idle_send"]["snd_cwnd"]
    before_off, after_off = off_s["before_idle_send"]["snd_cwnd"], off_s["after_idle_send"]["snd_cwnd"]
    assert before_on > 20 and before_off > 20, (on_s, off_s)
    # BBR's window follows its own model and moves by a segment or two between rounds; what
    # matters is that the idle did not collapse it.
    def kept(before: int, after: int) -> bool:
        return after == before if cc == "cubic" else abs(after - before) <= max(2, before // 20)

    assert kept(before_off, after_off), off_s
    if cc == "cubic":
        assert after_on == max(before_on >> 2, 10), on_s
    else:
        assert kept(before_on, after_on), on_s


def test_apply_fails_when_the_kernel_refuses_a_knob(tmp_path, cgroup, monkeypatch):
    """A value past our own limits (500 ms of delayed-ACK maximum, above TCP_DELACK_MAX):
    the kernel refuses it for apply's test connection, so apply fails, says which knob and
    why, and leaves nothing attached; with --force it applies and status explains the
    refusals."""
    import shortflow.tune as tune

    monkeypatch.setattr(tune, "hard_limits", lambda s, hz: None)
    state = tmp_path / "state.json"
    pins_before = bpf_pins()
    with pytest.raises(tune.TuneError) as e:
        apply(TuneSettings(delack_max_s=0.5, cgroup=cgroup), state_path=state)
    assert "TCP_BPF_DELACK_MAX" in str(e.value) and "EINVAL" in str(e.value), e.value
    assert not state.exists() and bpf_pins() == pins_before
    assert "sock_ops" not in subprocess.run(["bpftool", "cgroup", "show", str(cgroup)], capture_output=True,
                                            text=True).stdout
    result = apply(TuneSettings(delack_max_s=0.5, cgroup=cgroup), state_path=state, force=True)
    try:
        assert any("TCP_BPF_DELACK_MAX" in r for r in result["bpf"]["selfcheck_refusals"]), result
        st = status(state_path=state)
        assert st["bpf"]["counters"]["delack_max_refused"] >= 2, st  # both ends of the probe
        assert any("TCP_BPF_DELACK_MAX" in r and "times" in r for r in st["bpf"]["refusals"]), st
    finally:
        revert(state_path=state)
