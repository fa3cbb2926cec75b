"""A scenario key is declared once, where its table is read: `tests/data/patches/dummy-scenario-key.patch`
adds one (a test fixture, never applied to the project: `mechanisms.sfr.floor`, the shortest
timeout Super Fast Retransmit arms) in two files: its declaration with its help, unit
(a duration), default and range beside the table's other keys, its resolution beside them
(crates/scenario/src/scenario/mechanisms.rs), and its use (crates/sim/src/mechanisms/sfr.rs).
Applied to a copy of the tree, the copy's reference lists the key with its unit, default,
range and help, a value outside the range is refused, and a value inside moves SFR's
resend; this build refuses the key."""

from __future__ import annotations

from pathlib import Path

from patch_fixture import (
    PATCHES,
    TAIL_LOSS,
    cargo,
    copy_applied,
    mean_complete,
    needs_cargo,
    refused_here,
    run_cargo,
    touched,
)

PATCH = PATCHES / "dummy-scenario-key.patch"


def test_the_patch_touches_the_keys_table_and_the_code_that_uses_it() -> None:
    patch = PATCH.read_text()
    assert touched(patch) == ["crates/scenario/src/scenario/mechanisms.rs", "crates/sim/src/mechanisms/sfr.rs"]
    added = [line[1:] for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++")]
    # One declaration: the field with its help, default and range, nowhere else a list of
    # keys or of ranges.
    assert sum("pub floor: Option<Dur>" in line for line in added) == 1
    assert sum('extend("default" = "0s", "x-range" = ["0s", "1s"]' in line for line in added) == 1
    assert "schema.rs" not in patch and "raw.rs" not in patch and "ranges.rs" not in patch


@needs_cargo
def test_the_copy_documents_and_runs_the_new_key_and_this_build_refuses_it(tmp_path: Path) -> None:
    scenario = tmp_path / "tail.toml"
    scenario.write_text(TAIL_LOSS)
    key = 'mechanisms.sfr={factor=3, floor="100ms"}'
    assert "mechanisms.sfr.floor: unknown key" in refused_here(scenario, key)

    copy = copy_applied(tmp_path, PATCH)
    rows = [r for r in cargo(copy, "key-fixture", "run", "-q", "-p", "shortflow-scenario", "--example", "reference")
            .splitlines() if r.startswith("| `mechanisms.sfr.floor`")]
    assert rows == ["| `mechanisms.sfr.floor` | string | duration | `0s` | 0s to 1s (a test fixture's bound) | "
                    "A test fixture's key: the shortest timeout SFR arms, whatever the handshake RTT. |"], rows
    # The declared range is enforced: the copy refuses a value just past it.
    r = run_cargo(copy, "key-fixture", "run", "-q", "-p", "shortflow-sim", "--example", "speed", "--", str(scenario),
                  'mechanisms.sfr={factor=3, floor="1001ms"}')
    assert r.returncode == 2, r.stdout
    assert "mechanisms.sfr.floor: 1001ms is outside its range 0s to 1s (a test fixture's bound)" in r.stderr, r.stderr
    # SFR's timeout is 3 handshake RTTs (60 ms here); a 100 ms floor resends the tail 40 ms
    # later, a floor below the timeout changes nothing.
    sfr = mean_complete(copy, "key-fixture", scenario, "mechanisms.sfr={factor=3}")
    floored = mean_complete(copy, "key-fixture", scenario, key)
    low = mean_complete(copy, "key-fixture", scenario, 'mechanisms.sfr={factor=3, floor="10ms"}')
    assert abs((floored - sfr) - 0.040) < 1e-3, (sfr, floored)
    assert low == sfr, (sfr, low)
