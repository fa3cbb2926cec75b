"""`shortflow reproduce --real`: the same scenario file and overrides as each row's
simulator run, on the real kernel in the testbed's namespaces."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from shortflow.exceptions import ScenarioError
from shortflow.reproduce.rows import Row, run_case
from shortflow.scenario import Scenario
from shortflow.testbed.compare import agrees

#: Table 4 measures the time until the client sends its GET, counted from its first SYN.
MEASURE = "request_sent_s"

#: Why a real figure is later than the simulator's, by the SYN RTO the case runs with.
#: Linux's timer wheel (kernel/time/timer.c) files a timer of 512-4095 jiffies at level 2,
#: whose granularity is 64 jiffies (256 ms at HZ 250): a 3, 6 or 12 s timer fires up to
#: 256 ms late, once per timeout. The 1 s timers (250 jiffies, level 1) are 32 ms coarse.
TIMER_WHEEL = ("Linux's timer wheel fires a 3/6/12 s timer up to 256 ms late (level-2 granularity of "
               "64 jiffies at HZ 250), once per timeout; the simulator's timers are exact")


def add_real_column(rows: list[Row], progress: Callable[[int, int, Row], None] | None = None) -> None:
    """Runs every row's case on the real kernel and sets `real` (or `real_note`);
    `progress(done, total, row)` before each."""
    from shortflow import testbed

    for i, r in enumerate(rows):
        if progress:
            progress(i, len(rows), r)
        name = r.scenario.removeprefix("scenarios/").removesuffix(".toml")
        overrides, sim = list(r.overrides), r.ours
        try:
            try:
                s = testbed.load(Scenario.builtin(name, overrides))
            except ScenarioError as e:
                if not getattr(e, "key", "").endswith(".linux_handshake"):
                    raise
                # The kernel has Linux's handshake rules only; the RFC stacks' timers run on
                # them. The comparison is with the simulator on the same rules.
                overrides += LINUX_HANDSHAKE
                s = testbed.load(Scenario.builtin(name, overrides))
                sim = run_case(name, overrides)[0].connections[0][MEASURE]
        except ScenarioError as e:
            # What the real kernel cannot run (e.g. a profile Linux cannot mimic). The SYN
            # optimizer rows run: the testbed starts `shortflow synopt` on the row's side.
            r.real_note = str(e).split(": ", 1)[-1]
            continue
        result = testbed.run(s)
        c = result["connections"][0]
        r.real = c.get(MEASURE)
        if r.figure in TUNE_FIGURES and "without optimizer" in r.case:
            r.real_tune = _with_tune(name, r, overrides)
        notes = []
        if overrides != r.overrides:
            same = sim is not None and r.ours is not None and abs(sim - r.ours) < 1e-6
            notes.append(LINUX_HANDSHAKE_NOTE + (" (the simulator's figure is the same with them)" if same
                                                 else f" (the simulator gives {sim:.3f} s with them)"))
        if r.real is None:
            notes.append(f"the real connection did not complete ({c.get('error') or 'no request seen'})")
        elif sim is not None and not agrees(MEASURE, sim, r.real):
            late = max(s.client["rto"]["initial"], s.server["rto"]["initial"]) > 1e9 and r.real > sim
            notes.append(f"{r.real - sim:+.3f} s: " + (TIMER_WHEEL if late else "unexplained: see BENCHMARKS.md"))
        r.real_note = "; ".join(notes)


#: What a row whose stack has no Linux handshake rules runs with on the kernel.
LINUX_HANDSHAKE = ["client.linux_handshake=true", "server.linux_handshake=true"]
LINUX_HANDSHAKE_NOTE = ("run with Linux's handshake rules (client/server.linux_handshake=true: tcp_check_req, "
                        "tcp_rtt_tsopt_us, tcp_init_transfer), the only ones the kernel has")


#: The SYN RTO `shortflow tune` sets in the "with tune" column: the optimizer's delay.
TUNE_SYN_RTO_S = 0.2
#: The paper's two tables (the 2008 stack) get the column; today's stacks do not.
TUNE_FIGURES = ("table4-client", "table4-server")


def _with_tune(name: str, r: Row, overrides: list[str]) -> float | None:
    """The row's case with `shortflow tune --syn-rto 200ms` attached to a cgroup holding the
    processes of the table's side (client: its SYNs; server: its SYN/ACKs). The side's own
    SYN RTO is set to Linux's 1 s so that the testbed does not set one with its own BPF."""
    from shortflow import testbed, tune
    from shortflow.host import cgroup2_root
    from shortflow.testbed.names import RunNames

    side = "server" if "-server" in r.figure else "client"
    s = testbed.load(Scenario.builtin(name, [*overrides, f"{side}.syn_rto=1s"]))
    cgroup = cgroup2_root() / f"{RunNames.fresh().prefix}tune"
    cgroup.mkdir()
    try:
        with tempfile.TemporaryDirectory(prefix="shortflow-tune-") as tmp:
            state = Path(tmp) / "state.json"
            # --force: the 1 ms LAN of Table 4 is far below 200 ms, but the host's own
            # connections (measured by the safety check) are not what this cgroup holds.
            tune.apply(tune.TuneSettings(syn_rto_s=TUNE_SYN_RTO_S, cgroup=cgroup), state_path=state, force=True)
            try:
                c = testbed.run(s, cgroup=str(cgroup), cgroup_roles=(side,))["connections"][0]
            finally:
                tune.revert(state_path=state)
    finally:
        cgroup.rmdir()
    value = c.get(MEASURE)
    return float(value) if value is not None else None
