"""What `shortflow analyze` prints first: what was read, where the users' time went (the
time account) and the worst connections, each with the command that draws it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from shortflow import _core
from shortflow.analyze import CAUSE_WORDS
from shortflow.cli.common import say
from shortflow.units import format_seconds

if TYPE_CHECKING:
    from shortflow.worst import Connection

#: A capture point in a few words.
#: Each capture point in words, as the core names them.
VANTAGE_WORDS: dict[str, str] = dict(_core.VANTAGE_WORDS)


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'s' * (n != 1)}"


def print_headline(doc: dict[str, Any], *, filter_expr: str | None, packets_read: int) -> None:
    """What was read: packets, connections and their handshakes, the capture point, and
    what a filter kept."""
    kept = ""
    if filter_expr is not None:
        kept = f" (--filter {filter_expr!r} kept them of {packets_read:,} read)"
    tries = doc["connection_tries"]
    say(f"{_plural(doc['packets'], 'packet')}{kept}, {_plural(doc['connections'], 'connection')}: "
        f"{tries:,} connection {'try' if tries == 1 else 'tries'}, "
        f"{doc['successful']:,} with a completed handshake, {doc['unsuccessful']:,} without")
    basis = doc["vantage_basis"].removeprefix("undecided: ")
    say(f"capture point: {VANTAGE_WORDS[doc['vantage']]} ({basis})")


def main_lost_cause(doc: dict[str, Any]) -> str | None:
    """The cause other than the path that took the most of the time users waited (None
    when nothing did)."""
    from shortflow.analyze import WAITED_CAUSES

    lost = [(doc["time_lost_s"][c], c) for c in WAITED_CAUSES if c != "network" and doc["time_lost_s"][c] > 0]
    return max(lost)[1] if lost else None


def print_time_account(doc: dict[str, Any]) -> None:
    """The time users waited, cause by cause, largest first (seconds and shares), then
    the time nobody waited through."""
    from shortflow.analyze import CAUSES, WAITED_CAUSES

    waited = doc["waited_s"]
    n = doc["connections"]
    if not waited > 0:
        say(f"users waited no time over {_plural(n, 'connection')} (no connection had data, or none was timed)")
    else:
        say(f"users waited {format_seconds(waited)} in all over {_plural(n, 'connection')} "
            "(first SYN to last data byte):")
        rows = sorted(((doc["time_lost_s"][c], c) for c in WAITED_CAUSES if doc["time_lost_s"][c] > 0), reverse=True)
        for seconds, cause in rows:
            share = seconds / waited
            pct = f"{share:.0%}" if share >= 0.005 else "<1%"
            say(f"  {pct:>4}  {format_seconds(seconds):>9}  {CAUSE_WORDS[cause]}")
    apart = [(doc["time_lost_s"][k], k) for k in CAUSES if k not in WAITED_CAUSES and doc["time_lost_s"][k] > 0]
    if apart:
        say("apart, nobody waiting: " + ", ".join(f"{CAUSE_WORDS[k]} {format_seconds(v)}" for v, k in apart))


def print_worst(worst: list[Connection], *, asked: int, filter_expr: str | None, tracking: Sequence[str] = ()) -> None:
    """The worst connections, each on two lines: who, how long, what it lost to, and the
    command that draws its time-sequence graph (with `tracking`: the analysis' timeouts
    given other than their defaults, as options)."""
    if asked <= 0:
        return
    if not worst:
        say("no connection lost time to anything but the path")
        return
    say(f"the {_plural(len(worst), 'worst connection') if len(worst) > 1 else 'worst connection'}, "
        "by time lost to something other than the path:")
    width = max(len(str(w.conn_id)) for w in worst)
    for w in worst:
        other = w.lost_s - w.main_cause_s
        rest = f" (and {format_seconds(other)} to other causes)" if other > 0.001 * w.lost_s else ""
        say(f"  conn {w.conn_id:<{width}}  {w.client} → {w.server}  lasted {format_seconds(w.duration_s)}: "
            f"{CAUSE_WORDS[w.main_cause]} {format_seconds(w.main_cause_s)}{rest}")
        say(f"  {' ' * (width + 5)}  {w.graph_command(filter_expr=filter_expr, tracking=tracking)}")
