"""`shortflow tune`'s rules without the kernel: what is refused always, what only without
--force, what cannot honour a scope, what apply warns of, how status explains refusals, and
the route lines revert puts back. Fast; the kernel's side is in test_tune_real.py and
test_tune_effects.py. (Written to kill the mutants `cosmic-ray` left alive: BENCHMARKS.md.)"""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from shortflow.exceptions import TuneError
from shortflow.tune import Plan, notices, program, refusals, routes, scope_refusals
from shortflow.tune.settings import PrefixRule, TuneSettings, hard_limits, unsafe

HZ = 250  # 4 ms jiffies


def net(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    return ipaddress.ip_network(text)


@pytest.mark.parametrize("settings, words", [
    (TuneSettings(syn_rto_s=0.003), ["--syn-rto 3ms", "below one jiffy", "(4 ms at HZ 250)"]),
    (TuneSettings(rto_min_s=0.007), ["--rto-min 7ms", "the kernel takes 8 ms to 200 ms"]),
    (TuneSettings(rto_min_s=0.201), ["--rto-min 201ms"]),
    (TuneSettings(delack_max_s=0.007), ["--delack-max 7ms"]),
    (TuneSettings(delack_max_s=0.25), ["--delack-max 250ms"]),
    (TuneSettings(prefixes=[PrefixRule(net("10.0.0.0/8"), syn_rto_s=0.001)]), ["10.0.0.0/8", "syn_rto 1ms"]),
    (TuneSettings(port=0), ["port=0"]),
    (TuneSettings(port=65536), ["port=65536"]),
    (TuneSettings(sfr_factor=0.5), ["--sfr-factor 0.5", "1 to 100"]),
    (TuneSettings(sfr_factor=101), ["--sfr-factor 101"]),
])
def test_hard_limits_refuse_what_the_kernel_cannot_take(settings, words):
    with pytest.raises(TuneError) as e:
        hard_limits(settings, HZ)
    assert all(w in str(e.value) for w in words), e.value


@pytest.mark.parametrize("settings", [
    TuneSettings(syn_rto_s=0.004), TuneSettings(rto_min_s=0.008), TuneSettings(rto_min_s=0.2),
    TuneSettings(delack_max_s=0.008), TuneSettings(delack_max_s=0.2), TuneSettings(port=1), TuneSettings(port=65535),
    TuneSettings(sfr_factor=1.0), TuneSettings(sfr_factor=100),
    TuneSettings(prefixes=[PrefixRule(net("10.0.0.0/8"), syn_rto_s=0.004)]),
    TuneSettings(syn_rto_s=0.2), TuneSettings(prefixes=[PrefixRule(net("10.0.0.0/8"), syn_rto_s=0.2)]),
])
def test_hard_limits_take_the_edges(settings):
    hard_limits(settings, HZ)


def test_unsafe_names_the_destination_and_the_rtt():
    rtts = {"192.0.2.7": 0.150, "192.0.2.8": 0.020}
    why = unsafe(TuneSettings(syn_rto_s=0.1, rto_min_s=0.1, iw=101), rtts)
    assert len(why) == 3, why
    assert "--syn-rto 100ms" in why[0] and "192.0.2.7" in why[0] and "150.0 ms" in why[0]
    assert "--rto-min 100ms" in why[1] and "192.0.2.7" in why[1] and "(150.0 ms)" in why[1]
    assert "--iw 101" in why[2] and "100 segments" in why[2]
    # At or above the worst RTT, and IW up to 100: nothing to say.
    assert unsafe(TuneSettings(syn_rto_s=0.15, rto_min_s=0.15, iw=100), rtts) == []
    assert unsafe(TuneSettings(syn_rto_s=0.2, rto_min_s=0.2, iw=4), rtts) == []
    assert unsafe(TuneSettings(syn_rto_s=0.001), {}) == []


def test_unsafe_per_prefix_looks_only_inside_the_prefix():
    # Inside 10/8 the farthest is 10.1.2.3 (300 ms), not the highest address (10.9.9.9).
    rtts = {"10.1.2.3": 0.300, "10.9.9.9": 0.020, "192.0.2.1": 0.050}
    rules = [PrefixRule(net("192.0.2.0/24"), syn_rto_s=0.1), PrefixRule(net("10.0.0.0/8"), syn_rto_s=0.1, iw=200)]
    why = unsafe(TuneSettings(prefixes=rules), rtts)
    assert len(why) == 2, why
    assert why[0].startswith("10.0.0.0/8: syn_rto 100ms") and "10.1.2.3" in why[0] and "300.0 ms" in why[0]
    assert why[1].startswith("10.0.0.0/8 200")


def test_quickack_and_slow_start_after_idle_refuse_a_scope():
    assert scope_refusals(TuneSettings(quickack=True, slow_start_after_idle=False)) == []
    assert scope_refusals(TuneSettings(iw=4, port=80)) == []
    both = scope_refusals(TuneSettings(quickack=True, slow_start_after_idle=True, port=80, cgroup=Path("/cg")))
    assert len(both) == 2
    assert "--quickack cannot honour --scope cgroup=/cg, port=80" in both[0] and "--delack-max" in both[0]
    assert "--slow-start-after-idle cannot honour --scope cgroup=/cg, port=80" in both[1]
    assert "port=80" in scope_refusals(TuneSettings(slow_start_after_idle=False, port=80))[0]


def test_apply_warns_what_a_knob_will_not_do():
    assert notices(TuneSettings(iw=4, sfr_factor=2.0), None, "bbr") == []
    (q,) = notices(TuneSettings(quickack=True), [routes.Route("-4", "eth0", "10.0.0.1")], "cubic")
    assert "default via 10.0.0.1 dev eth0" in q
    (q,) = notices(TuneSettings(quickack=True), [], "cubic")
    assert "(none)" in q
    assert notices(TuneSettings(slow_start_after_idle=True), None, "cubic") == []
    (b,) = notices(TuneSettings(slow_start_after_idle=False), None, "bbr")
    assert "bbr" in b
    (f,) = notices(TuneSettings(sfr_factor=2.5), None, "bbr")
    assert "--sfr-factor 2.5" in f and "2 x handshake RTT" in f
    # A SYN RTO shorter than any WAN's round trip is said, not applied in silence.
    (r,) = notices(TuneSettings(syn_rto_s=0.005), None, "cubic")
    assert r.startswith("--syn-rto 5ms is shorter than the round trip to most peers"), r
    assert notices(TuneSettings(syn_rto_s=0.2), None, "cubic") == []
    (r,) = notices(TuneSettings(prefixes=[PrefixRule(ipaddress.ip_network("10.0.0.0/8"), None, 0.01)]), None, "cubic")
    assert "10.0.0.0/8: syn_rto 10ms" in r


def test_status_explains_each_refused_knob():
    counters = dict.fromkeys(program.COUNTERS, 0)
    assert refusals(counters, {}) == []
    assert refusals(None, {}) == []
    counters.update(rto_min_refused=2, iw_refused=1)
    lines = refusals(counters, {"rto_min_refused": -22, "iw_refused": -95})
    assert len(lines) == 2
    assert "TCP_BPF_IW" in lines[0] and "1 times" in lines[0] and "errno 95" in lines[0]
    assert "TCP_BPF_RTO_MIN" in lines[1] and "2 times" in lines[1] and "TCP_TIMEOUT_MIN" in lines[1]


def test_config_of_the_settings_field_by_field():
    """What tune writes into `struct config` of tune.bpf.c, member by member (the map's
    bytes, laid out by its BTF, are checked on the kernel in test_bpf_loader.py)."""
    s = TuneSettings(syn_rto_s=0.2, iw=4, rto_min_s=0.05, delack_max_s=0.01, sfr_factor=2.5, sfr_cutout_bytes=9000, port=443)
    assert [v for _, v in program.config_of(s, HZ).fields()] == [50, 4, 50_000, 10_000, 250, 9000, 50_000, 443, 8000]
    assert [v for _, v in program.config_of(TuneSettings(iw=10), 1000).fields()] == \
        [0, 10, 0, 0, 0, 0, program.DEFAULT_RTO_MIN_US, 0, 2000]


def test_route_metrics_asked_for_and_a_route_rendered_from_its_parts():
    s = TuneSettings(iw=20, rto_min_s=0.05, quickack=True)
    assert routes.route_options(s, with_iw_and_rto=True) == {"initcwnd": 20, "rto_min": 50, "quickack": 1}
    assert routes.route_options(s, with_iw_and_rto=False) == {"quickack": 1}
    r = routes.Route("-4", "eth0", "10.0.0.1", proto=16, metric=100,
                     metrics=(("mtu", 1400, True), ("rto_min", 300, True), ("congctl", "cubic", True)))
    # rto_min is always locked and `ip route` takes no `lock` before it; the others keep theirs.
    assert r.show() == "default via 10.0.0.1 dev eth0 proto dhcp metric 100 mtu lock 1400 rto_min 300ms congctl lock cubic"
    assert r.with_metrics({"initcwnd": 20, "mtu": 1300, "quickack": 0}).show() == \
        "default via 10.0.0.1 dev eth0 proto dhcp metric 100 mtu 1300 initcwnd 20 rto_min 300ms congctl lock cubic"
    assert routes.Route.from_json(r.as_json()) == r


def test_what_needs_the_bpf_program_and_what_is_nothing():
    assert TuneSettings().empty() and not TuneSettings().needs_bpf
    bpf = [TuneSettings(syn_rto_s=0.2), TuneSettings(delack_max_s=0.04), TuneSettings(sfr_factor=2.0),
           TuneSettings(prefixes=[PrefixRule(net("10.0.0.0/8"), iw=4)]), TuneSettings(port=80),
           TuneSettings(cgroup=Path("/cg"))]
    routes_only = [TuneSettings(iw=4), TuneSettings(rto_min_s=0.05), TuneSettings(quickack=True),
                   TuneSettings(slow_start_after_idle=False), TuneSettings(slow_start_after_idle=True)]
    for s in bpf:
        assert s.needs_bpf and not s.empty(), s
    for s in routes_only:
        assert not s.needs_bpf and not s.empty(), s


@pytest.mark.parametrize("text, words", [
    ('"10.0.0.0/8" = {}', ["10.0.0.0/8", "expected"]),
    ('"10.0.0.0/8" = 4', ["10.0.0.0/8", "expected"]),
    ('"10.0.0.0/8" = { iw = true }', ["10.0.0.0/8.iw", "True"]),
    ('"10.0.0.0/8" = { iw = "4" }', ["10.0.0.0/8.iw"]),
    ('"10.0.0.0/8" = { syn_rto = "fast" }', ["10.0.0.0/8.syn_rto"]),
    ('"10.0.0.0/8" = { iw = ', ["not valid TOML"]),
])
def test_prefix_file_refusals(tmp_path, text, words):
    from shortflow.tune.settings import load_prefixes

    p = tmp_path / "p.toml"
    p.write_text(text + "\n")
    with pytest.raises(TuneError) as e:
        load_prefixes(p)
    assert str(p) in str(e.value) and all(w in str(e.value) for w in words), e.value


def test_prefix_file_edges(tmp_path):
    from shortflow.tune.settings import load_prefixes

    p = tmp_path / "p.toml"
    p.write_text('"10.0.0.0/8" = { iw = 1 }\n')
    assert load_prefixes(p) == [PrefixRule(net("10.0.0.0/8"), 1, None)]
    with pytest.raises(TuneError, match="cannot read"):
        load_prefixes(tmp_path / "missing.toml")


def test_a_dry_run_shows_each_bpf_knob_as_current_to_new():
    # The values the kernel table carries (TCP_TIMEOUT_INIT, TCP_INIT_CWND, TCP_RTO_MIN,
    # TCP_DELACK_MAX): what the connections in scope had before.
    p = Plan(TuneSettings(syn_rto_s=0.2, iw=4, rto_min_s=0.05, delack_max_s=0.04, port=443,
                          prefixes=[PrefixRule(net("10.0.0.0/8"), 20, None)]), Path("/sys/fs/cgroup/web"))
    line, prefix = p.lines()
    assert line == ("attach BPF sock_ops `tune` to cgroup /sys/fs/cgroup/web, port 443 only (kernel's value -> new): "
                    "syn_rto 1000ms -> 200ms, iw 10 -> 4, rto_min 200ms -> 50ms, delack_max 200ms -> 40ms"), line
    assert prefix == "  prefix 10.0.0.0/8: iw 10 -> 20, syn_rto 1000ms -> 200ms", prefix
