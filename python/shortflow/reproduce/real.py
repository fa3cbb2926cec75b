"""`shortflow reproduce --real`: the same scenario file and overrides as each row's
simulator run, on the real kernel in the testbed's namespaces."""

from __future__ import annotations

from collections.abc import Callable

from shortflow.exceptions import ScenarioError
from shortflow.reproduce import Row
from shortflow.scenario import Scenario

#: Table 4 measures the time until the client sends its GET, counted from its first SYN.
MEASURE = "request_sent_s"


def add_real_column(rows: list[Row], progress: Callable[[Row], None] | None = None) -> None:
    """Runs every row's case on the real kernel and sets `real` (or `real_note`)."""
    from shortflow import testbed

    for r in rows:
        if progress:
            progress(r)
        name = r.scenario.removeprefix("scenarios/").removesuffix(".toml")
        try:
            s = testbed.load(Scenario.builtin(name, r.overrides))
        except ScenarioError as e:
            # e.g. the SYN optimizer: on a real host that is `shortflow synopt`, not the testbed.
            r.real_note = str(e).split(": ", 1)[-1]
            continue
        result = testbed.run(s)
        c = result["connections"][0]
        r.real = c.get(MEASURE)
        if r.real is None:
            r.real_note = f"the real connection did not complete ({c.get('error') or 'no request seen'})"
