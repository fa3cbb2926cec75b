"""Every shipped scenario through the one scenario model and `realize`: each StackConfig
field of both hosts is decided (set on the kernel, the kernel's own, no effect here, or
model only), or the run is refused naming the key. And a random valid scenario resolves to
the same thing wherever it is read: file, `--set` overrides, or units spelled differently,
through the Python binding's JSON. No root needed."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shortflow import _core
from shortflow.scenario import Scenario, builtin_names
from shortflow.testbed import load
from shortflow.testbed.realize import RealizeError, linux_knobs

ACTIONS = {"set", "same", "no effect", "model only"}


@pytest.mark.parametrize("name", builtin_names())
def test_every_shipped_scenario_is_realised_or_refused_by_key(name, monkeypatch):
    # The plan must not depend on whether this machine has bpftool and clang.
    monkeypatch.setattr("shortflow.testbed.realize._have_bpf_tools", lambda: True)
    sc = Scenario.builtin(name)  # the model accepts every shipped scenario
    try:
        s = load(sc)
    except RealizeError as e:
        assert e.key and f": {e.key}: " in str(e), str(e)
        return
    assert s.plan is not None
    decided = {d.key: d for d in s.plan.decisions}
    for side in ("client", "server"):
        for f in linux_knobs():
            d = decided.get(f"{side}.{f}")
            assert d is not None, f"{name}: {side}.{f} has no decision"
            assert d.action in ACTIONS
            if d.action == "set":
                assert d.knob, f"{name}: {side}.{f} is set without naming its knob"


def test_plan_sets_what_differs_from_the_kernel():
    s = load(Scenario.builtin("000-table4"), ["client.syn_rto=3s"])
    assert s.plan is not None
    c = s.plan.client
    assert c.syn_rto_s == 3.0
    assert ["rto_min", "1000ms"] == c.route[:2] and "initcwnd" in c.route
    assert c.sysctls["net.ipv4.tcp_sack"] == 0 and c.sysctls["net.ipv4.tcp_syn_linear_timeouts"] == 0
    s = load(Scenario.builtin("000-table4"), ["client.stack=linux", "server.stack=linux"])
    assert s.plan is not None
    assert s.plan.client.route == ["congctl", "cubic"] and s.plan.client.syn_rto_s is None
    assert s.plan.client.sysctls == {"net.ipv4.tcp_no_metrics_save": 1}


def test_bbr_is_set_on_the_route_of_the_side_that_names_it():
    # In a namespace the default may be only an algorithm the root allows
    # (net.ipv4.tcp_allowed_congestion_control, here "reno bbr": BBR would pass, CUBIC gets
    # EPERM); the route's congctl takes any of them and covers accepted connections too.
    s = load(Scenario.builtin("002-initial-window"), ['server.congestion_control="bbr"'])
    assert s.plan is not None
    route = s.plan.server.route
    assert route[route.index("congctl") + 1] == "bbr"
    assert s.plan.client.route[s.plan.client.route.index("congctl") + 1] == "cubic"
    decided = {d.key: d for d in s.plan.decisions}
    assert (decided["server.congestion_control"].action, decided["server.congestion_control"].knob) == ("set", "route congctl")


def test_cli_plan_prints_every_field_and_refuses_by_key(tmp_path):
    from typer.testing import CliRunner

    from shortflow.cli import app

    r = CliRunner().invoke(app, ["testbed", "plan", "002-initial-window", "--json", "-"])
    assert r.exit_code == 0, r.output
    plan = json.loads(r.output)
    assert plan["server"]["route"][plan["server"]["route"].index("initcwnd") + 1] == "2"
    r = CliRunner().invoke(app, ["testbed", "plan", "002-initial-window", "--set", "client.stack=bsd",
                                     "--set", "client.quickack=false"])
    assert r.exit_code == 2 and "client.delayed_ack" in r.output and "bsd_tick" in r.output


def test_knobs_as_the_kernel_applies_them(monkeypatch):
    """A Linux sender takes its peer's MSS, so a smaller advmss of its own leaves
    what it sends alone (route advmss set, its own segments counted at the peer's MSS);
    `mtu` is the route's; SACK off keeps PRR; RACK off is refused where this kernel (6.18)
    runs RACK anyway, and accepted before 6.18 or without SACK."""
    base = Scenario.from_text('[path]\nrtt = "20ms"\n[workload]\nresponse = "20kB"\n[drop]\ndata = [3]\n')
    sets = ["server.mss=800B", "client.mtu=1280B"]
    s = load(base, sets)
    assert s.plan is not None
    assert s.plan.server.route[s.plan.server.route.index("advmss") + 1] == "800"
    assert s.plan.client.route[s.plan.client.route.index("mtu") + 1] == "1280"
    assert s.plan.client.route[s.plan.client.route.index("advmss") + 1] == "1240"
    sack_off = load(base, [*sets, "client.sack=false"])
    assert sack_off.plan is not None
    assert {d.key: d.action for d in sack_off.plan.decisions}["client.recovery"] == "same"
    monkeypatch.setattr("shortflow.testbed.realize._kernel", lambda: (6, 18))
    with pytest.raises(RealizeError) as e:
        load(base, [*sets, "server.rack=false"])
    assert e.value.key == "server.rack" and "RACK whatever net.ipv4.tcp_recovery says" in str(e.value)  # type: ignore[attr-defined]
    assert load(base, [*sets, "server.rack=false", "client.sack=false"]).plan
    monkeypatch.setattr("shortflow.testbed.realize._kernel", lambda: (6, 1))
    plan = load(base, [*sets, "server.rack=false"]).plan
    assert plan is not None and plan.server.sysctls["net.ipv4.tcp_recovery"] == 0


LINUX = ("client.stack=linux", "server.stack=linux")


def test_generator_keys_are_refused_or_carried_honestly():
    # A per-connection delay: the emulator has one delay each way, so the testbed refuses it.
    with pytest.raises(RealizeError) as e:
        load(Scenario.builtin("000-table4"), ["path.rtt_max=900ms"])
    assert e.value.key == "path.rtt_max" and "per connection" in str(e.value)  # type: ignore[attr-defined]
    # A loss of one packet kind is the emulator's own loss model (the simulator's, same seed),
    # and it counts as random loss for the fields that act only then.
    s = load(Scenario.builtin("000-table4"), [*LINUX, "random_loss.synack=0.3"])
    assert s.plan is not None
    assert any(d.key == "random_loss" and d.knob == "shortflow-netem --scenario" for d in s.plan.decisions)
    # Link type and IP version choose the simulator's pcap only.
    s = load(Scenario.builtin("000-table4"), [*LINUX, "capture.link=sll2", "capture.ipv6=true"])
    assert s.plan is not None
    assert any(d.key == "capture" and d.action == "model only" for d in s.plan.decisions)


# -- one resolution wherever the scenario is read ---------------------------------------

def _durations(ms: int) -> st.SearchStrategy[tuple[str, str]]:
    """Two spellings of the same duration."""
    return st.sampled_from([(f"{ms}ms", f"{ms * 1000}us"), (f"{ms}ms", f"{ms / 1000}s"), (f"{ms}ms", f"{ms}e0ms")])


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[dict[str, str], dict[str, str]]:
    """A valid scenario as key → TOML value, twice (the same values, other unit spellings)."""
    a: dict[str, str] = {}
    b: dict[str, str] = {}

    def both(key: str, x: str, y: str | None = None) -> None:
        a[key], b[key] = x, x if y is None else y

    x, y = draw(st.integers(0, 2000).flatmap(_durations))
    both("path.rtt", f'"{x}"', f'"{y}"')
    mbit = draw(st.integers(1, 1000))
    both("path.bandwidth", f'"{mbit}Mbit"', f'"{mbit * 1000}kbit"')
    both("path.queue", f'{{ kind = "droptail", packets = {draw(st.integers(1, 5000))} }}')
    for side in ("client", "server"):
        both(f"{side}.stack", f'"{draw(st.sampled_from(["linux", "rfc2988", "rfc6298", "solaris", "bsd", "windows"]))}"')
        if draw(st.booleans()):
            x, y = draw(st.integers(4, 3000).flatmap(_durations))
            both(f"{side}.rto_min", f'"{x}"', f'"{y}"')
        if draw(st.booleans()):
            both(f"{side}.initial_window", str(draw(st.integers(1, 100))))
        if draw(st.booleans()):
            kb = draw(st.integers(1, 1000))
            both(f"{side}.receive_window", f'"{kb}kB"', f'"{kb * 1000}B"')
    kb = draw(st.integers(1, 2000))
    both("workload.response", f'"{kb}kB"', f'"{kb * 1000}B"')
    both("workload.connections", str(draw(st.integers(1, 20))))
    both("drop.syn", str(sorted(draw(st.sets(st.integers(1, 5), max_size=3)))))
    both("random_loss.forward", repr(draw(st.floats(0, 1))))
    both("seed", str(draw(st.integers(0, 2**63 - 1))))
    return a, b


def _toml(values: dict[str, str]) -> str:
    tables: dict[str, list[str]] = {}
    for key, value in values.items():
        table, _, leaf = key.rpartition(".")
        tables.setdefault(table, []).append(f"{leaf} = {value}")
    top = "\n".join(tables.pop("", []))
    return top + "\n" + "\n".join(f"[{t}]\n" + "\n".join(lines) for t, lines in tables.items()) + "\n"


def _resolve(text: str, overrides: list[str] | None = None) -> dict:
    r = json.loads(_core.resolve_scenario(text, "s.toml", overrides or []))
    return r


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_a_scenario_resolves_identically_wherever_it_is_read(pair):
    a, b = pair
    from_file = _resolve(_toml(a))
    # The same values as --set overrides on a minimal file.
    from_set = _resolve('[path]\nrtt = "1ms"\n', [f"{k}={v}" for k, v in a.items()])
    # The same values with their units spelled differently.
    respelled = _resolve(_toml(b))
    assert from_file == from_set == respelled
    # What Python holds is exactly what the model resolved: a second trip through JSON
    # changes nothing (floats included), and the testbed's view reads the same numbers.
    assert json.loads(json.dumps(from_file)) == from_file
    assert from_file["path"]["rtt"] == int(a["path.rtt"].strip('"').removesuffix("ms")) * 1_000_000


def test_simulate_notes_what_sack_off_implies(tmp_path):
    """`--set server.sack=false` runs (no refusal until recovery, rack and tlp are
    changed too) and says what it implied; a file that turns RACK on beside it is refused in
    one message naming both keys."""
    from typer.testing import CliRunner

    from shortflow.cli import app

    sc = Scenario.from_text('[path]\nrtt = "20ms"\n', overrides=["server.sack=false"])
    assert len(sc.notes) == 1 and "server.rack = false" in sc.notes[0] and "server.tlp = false" in sc.notes[0]
    r = CliRunner().invoke(app, ["simulate", "002-initial-window", "--set", "server.sack=false"])
    assert r.exit_code == 0, r.output
    assert "server.sack = false implies" in r.output
    r = CliRunner().invoke(app, ["simulate", "002-initial-window", "--set", "server.sack=false",
                                 "--set", "server.rack=true", "--set", "server.tlp=true"])
    assert r.exit_code == 2 and "server.rack = true, server.tlp = true" in r.output, r.output


def test_losses_by_byte_are_refused_on_the_testbed():
    """The emulator loses packets by occurrence: a scenario that names lost bytes runs in
    the simulator only, and the testbed says so instead of running it without the losses."""
    with pytest.raises(RealizeError, match=r": drop\.data_bytes: .*by occurrence"):
        load(Scenario.builtin("002-initial-window"), ["drop.data_bytes=[3000]"])
