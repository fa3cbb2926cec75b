"""The watch loop: read a slice, count what ended, write it, redraw; on SIGTERM (or the
`duration` given, or Ctrl-C) end the open connections and flush everything once."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import pyarrow as pa

from shortflow.watch.live import LiveAnalysis
from shortflow.watch.metrics import WatchMetrics
from shortflow.watch.rotate import RotatingParquet

#: How long each slice reads before the rows are counted and the screen redrawn.
SLICE_S = 0.5


@dataclass
class WatchResult:
    summary: dict[str, Any]
    stats: dict[str, Any]
    files: list[Path] = field(default_factory=list)
    rows: int = 0
    stopped_by: str = ""


def run(analysis: LiveAnalysis, *, metrics: WatchMetrics | None = None, out: RotatingParquet | None = None,
        duration_s: float | None = None, on_slice: Callable[[pa.Table, dict[str, Any]], None] | None = None) -> WatchResult:
    """Watches the opened interface until SIGTERM, SIGINT or `duration_s`; returns what the
    run saw. Every connection — ended during the run or open at its end — is counted once
    in `metrics` and written once to `out`."""
    stop = threading.Event()
    stopped_by = ["duration"]

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stopped_by[0] = signal.Signals(signum).name
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    started = time.monotonic()
    rows_written = 0
    try:
        while not stop.is_set():
            left = None if duration_s is None else duration_s - (time.monotonic() - started)
            if left is not None and left <= 0:
                break
            rows = analysis.poll(SLICE_S if left is None else min(SLICE_S, left))
            stats = analysis.stats()
            rows_written += _count(rows, stats, metrics, out)
            if on_slice is not None:
                on_slice(rows, stats)
        rows, summary, stats = analysis.finish()
        rows_written += _count(rows, stats, metrics, out)
        if on_slice is not None:
            on_slice(rows, stats)
    finally:
        if out is not None:
            out.close()
        for s, h in previous.items():
            signal.signal(s, h)
    return WatchResult(summary, stats, list(out.written) if out else [], rows_written, stopped_by[0])


def _count(rows: pa.Table, stats: dict[str, Any], metrics: WatchMetrics | None, out: RotatingParquet | None) -> int:
    if metrics is not None:
        metrics.add_ended(rows)
        metrics.add_stats(stats)
    if out is not None:
        out.write(rows)
    return int(rows.num_rows)
