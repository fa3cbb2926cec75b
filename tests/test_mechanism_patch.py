"""A mechanism is a plug-in: `tests/data/patches/dummy-mechanism.patch` adds one (a test
fixture, never applied to the project: the server resends its first unacknowledged segment
`after` it last sent data) as a contributor would, in two files: its scenario keys beside
the other mechanisms' (crates/scenario/src/scenario/mechanisms.rs) and its behaviour in a
file of its own (crates/sim/src/mechanisms/dummy.rs), which also says where it runs and its
place in the timer order; the simulator's build finds the file. Nothing else in the
simulator changes. Applied to a copy of the tree, the copy's simulator takes the new key and its value
moves the run's completion; this build refuses the key."""

from __future__ import annotations

from pathlib import Path

from patch_fixture import PATCHES, TAIL_LOSS, copy_applied, mean_complete, needs_cargo, refused_here, touched

PATCH = PATCHES / "dummy-mechanism.patch"


def test_the_patch_touches_its_keys_and_a_file_of_its_own() -> None:
    patch = PATCH.read_text()
    assert touched(patch) == [
        "crates/scenario/src/scenario/mechanisms.rs",
        "crates/sim/src/mechanisms/dummy.rs",
    ]
    removed = [line for line in patch.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert not removed, removed
    # The world, the event loop, the report and the mechanism list are not touched: the
    # trait's hooks suffice and the build registers the file.
    assert "world.rs" not in patch and "report.rs" not in patch and "mechanisms/mod.rs" not in patch


@needs_cargo
def test_the_copy_runs_the_new_mechanism_and_this_build_refuses_it(tmp_path: Path) -> None:
    scenario = tmp_path / "tail.toml"
    scenario.write_text(TAIL_LOSS)
    key = 'mechanisms.dummy={after="30ms"}'
    assert "mechanisms.dummy: unknown key" in refused_here(scenario, key)

    copy = copy_applied(tmp_path, PATCH)
    plain = mean_complete(copy, "mechanism-fixture", scenario)
    early = mean_complete(copy, "mechanism-fixture", scenario, key)
    later = mean_complete(copy, "mechanism-fixture", scenario, 'mechanisms.dummy={after="90ms"}')
    # Without it the RTO (200 ms and more) repairs the tail; with it the resend leaves
    # `after` the last send: 60 ms later for 90 ms than for 30 ms, both before the RTO.
    assert plain > 0.2, plain
    assert early < later < plain, (early, later, plain)
    assert abs((later - early) - 0.060) < 1e-6, (early, later)
