"""A knob added to the kernel table is one edit: `tests/data/patches/dummy-kernel-knob.patch`
adds one row (a dummy pairing, never applied to the project: the stack-profile field
`ack.quick_acks` set by the sysctl net.ipv4.tcp_comp_sack_nr, 1 to 64, Linux's default 8)
and the assertion of its test, both in crates/scenario/src/kernel.rs. Applied to a copy of
the tree, with no other file touched:
- the simulator: the copy's `linux` stack profile (what every Linux host of a scenario
  starts from) holds quick_acks 8, the row's default, where this build's holds 16;
- realize: given the copy's table and profile, a scenario asking for 16 quick ACKs gets the
  sysctl in its plan, and 100 is refused with the row's range;
- tune: `--set quick_acks=16` is taken, and its dry run shows the sysctl's change.
The copy is checked with its own `cargo test` and the JSON it serves (the scenario crate's
`reference` example); Python reads the table only through that JSON (`host.knobs._table`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from patch_fixture import PATCHES, cargo, copy_applied, needs_cargo, touched
from shortflow import _core, tune
from shortflow.exceptions import TuneError
from shortflow.host import knobs, sysctl
from shortflow.testbed import load, realize
from shortflow.testbed.realize import RealizeError
from shortflow.tune.settings import TuneSettings, parse_set

PATCH = PATCHES / "dummy-kernel-knob.patch"
SYSCTL = "net.ipv4.tcp_comp_sack_nr"


def test_the_patch_touches_one_table_file_and_its_test() -> None:
    patch = PATCH.read_text()
    assert touched(patch) == ["crates/scenario/src/kernel.rs"]
    hunks = re.findall(r"^@@ .* @@(.*)$", patch, re.M)
    # One hunk in the table, one in the table's test module.
    assert len(hunks) == 2 and "KERNEL_KNOBS" in hunks[0] and "mod tests" in hunks[1], hunks
    added = [line[1:] for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++")]
    removed = [line for line in patch.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert sum("KernelKnob {" in line for line in added) == 1 and not removed
    assert sum("assert" in line for line in added) == 1


def _cargo(copy: Path, *args: str) -> str:
    return cargo(copy, "knob-fixture", *args)


@needs_cargo
def test_one_table_row_reaches_the_simulator_realize_and_tune(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ours_linux = json.loads(_core.stack_profiles())["linux"]["config"]
    assert ours_linux["ack"]["quick_acks"] == 16
    with pytest.raises(TuneError, match="--set 'quick_acks=16': expected NAME=VALUE"):
        parse_set("quick_acks=16")

    copy = copy_applied(tmp_path, PATCH)
    _cargo(copy, "test", "-q", "-p", "shortflow-scenario", "--lib", "kernel::")
    served = json.loads(_cargo(copy, "run", "-q", "-p", "shortflow-scenario", "--example", "reference", "kernel"))
    linux = json.loads(_cargo(copy, "run", "-q", "-p", "shortflow-scenario", "--example", "reference", "linux"))
    # The copy serves this build's table plus exactly the one row.
    ours = json.loads(_core.kernel_knobs())
    new = [k for k in served["knobs"] if k not in ours["knobs"]]
    assert [(k["field"], k["knob"]) for k in new] == [("ack.quick_acks", SYSCTL)]
    assert served["constants"] == ours["constants"]
    # The simulator's linux stack takes the row's default; nothing else of it moved.
    assert linux["ack"]["quick_acks"] == 8
    assert {**linux, "ack": {**linux["ack"], "quick_acks": 16}} == ours_linux

    # The copy's table and profile in place of this build's: realize and tune decide from them.
    monkeypatch.setattr(knobs, "_table", lambda: served)
    monkeypatch.setattr(realize, "linux_profile", lambda: linux)
    knobs.knob.cache_clear()
    try:
        # (The scenario is resolved by this build, whose linux hosts take 16: the client is
        # given the copy's default.)
        plan = load("002-initial-window", ["server.quick_acks=16", "client.quick_acks=8"]).plan
        assert plan is not None and plan.server.sysctls[SYSCTL] == 16 and SYSCTL not in plan.client.sysctls
        decided = {d.key: (d.action, d.knob, d.value) for d in plan.decisions}
        assert decided["server.ack.quick_acks"] == ("set", SYSCTL, "16")
        assert decided["client.ack.quick_acks"] == ("same", SYSCTL, "8")
        with pytest.raises(RealizeError, match=rf"server.ack.quick_acks: 100: {SYSCTL} takes 1 to 64"):
            load("002-initial-window", ["server.quick_acks=100"])

        s = TuneSettings(sysctls=dict([parse_set("quick_acks=16")]))
        lines = tune.plan(s).lines()
        assert lines == [f"sysctl {SYSCTL}: {sysctl.read(SYSCTL)!r} -> '16'"]
        with pytest.raises(TuneError, match=rf"--set quick_acks=65: {SYSCTL} takes 1 to 64 \(a dummy pairing"):
            tune.plan(TuneSettings(sysctls=dict([parse_set("quick_acks=65")])))
    finally:
        knobs.knob.cache_clear()
