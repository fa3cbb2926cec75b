"""`watch --top`: one screen, redrawn each second — the time account of the last minute
and the worst connections that ended in it."""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import pyarrow as pa
from rich.console import Group
from rich.table import Table
from rich.text import Text

from shortflow.analyze import CAUSES, WAITED_CAUSES
from shortflow.units import format_seconds

WINDOW_S = 60.0
WORST = 10


class TopView:
    def __init__(self) -> None:
        self._recent: deque[tuple[float, pa.Table]] = deque()

    def add(self, rows: pa.Table) -> None:
        now = time.monotonic()
        if rows.num_rows:
            self._recent.append((now, rows))
        while self._recent and now - self._recent[0][0] > WINDOW_S:
            self._recent.popleft()

    def render(self, interface: str, stats: dict[str, Any], rate_pps: float) -> Group:
        tables = [t for _, t in self._recent]
        head = Text(f"shortflow watch {interface} · {rate_pps:,.0f} packets/s · open {stats['open_connections']:,} · "
                    f"ended {stats['ended']:,} · ring drops {stats['ring_drops']:,} · interface drops "
                    f"{stats['interface_drops']:,} · evicted {stats['evicted']:,}")
        account = Table()
        account.add_column("cause")
        account.add_column("time", justify="right")
        account.add_column("share", justify="right")
        totals = {c: sum(float(pa.compute.sum(t.column(f"time_{c}_s")).as_py() or 0) for t in tables) for c in CAUSES}
        waited = sum(totals[c] for c in WAITED_CAUSES) or 1.0
        for cause in sorted(WAITED_CAUSES, key=lambda c: -totals[c]):
            if totals[cause] > 0:
                account.add_row(cause.replace("_", " "), format_seconds(totals[cause]), f"{100 * totals[cause] / waited:.0f} %")
        worst = Table()
        for col in ("client", "server", "duration", "main cause"):
            worst.add_column(col)
        rows = [r for t in tables for r in t.select(["client_ip", "client_port", "server_ip", "server_port", "duration_s",
                                                      *(f"time_{c}_s" for c in WAITED_CAUSES if c != "network")]).to_pylist()]
        rows.sort(key=lambda r: -r["duration_s"])
        for r in rows[:WORST]:
            cause, secs = max(((c, r[f"time_{c}_s"]) for c in WAITED_CAUSES if c != "network"), key=lambda kv: kv[1])
            main = f"{cause.replace('_', ' ')} {format_seconds(secs)}" if secs > 0 else "the path"
            worst.add_row(f"{r['client_ip']}:{r['client_port']}", f"{r['server_ip']}:{r['server_port']}",
                          format_seconds(r["duration_s"]), main)
        return Group(head, Text(f"time account of the connections ended in the last {WINDOW_S:.0f} s", style="bold"),
                     account, Text(f"worst {WORST} connections ended in the last {WINDOW_S:.0f} s", style="bold"), worst)
