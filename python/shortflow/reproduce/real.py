"""`shortflow reproduce --real`: the same scenario file and overrides as each row's
simulator run, on the real kernel in the testbed's namespaces."""

from __future__ import annotations

from collections.abc import Callable

from shortflow.exceptions import ScenarioError
from shortflow.reproduce import Row
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
        try:
            s = testbed.load(Scenario.builtin(name, r.overrides))
        except ScenarioError as e:
            # What the real kernel cannot run (e.g. a profile Linux cannot mimic). The SYN
            # optimizer rows run: the testbed starts `shortflow synopt` on the row's side.
            r.real_note = str(e).split(": ", 1)[-1]
            continue
        result = testbed.run(s)
        c = result["connections"][0]
        r.real = c.get(MEASURE)
        if r.real is None:
            r.real_note = f"the real connection did not complete ({c.get('error') or 'no request seen'})"
        elif r.ours is not None and not agrees(MEASURE, r.ours, r.real):
            late = max(s.client.effective_syn_rto_s, s.server.effective_syn_rto_s) > 1.0 and r.real > r.ours
            r.real_note = f"{r.real - r.ours:+.3f} s: " + (TIMER_WHEEL if late else "unexplained: see BENCHMARKS.md")
