"""A live interface read into the core's tracker, a slice at a time: the rows of the
connections that ended in each slice, as an Arrow table with `analyze`'s columns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from shortflow import _core
from shortflow.arrow_table import table as arrow_table


@dataclass(frozen=True)
class WatchConfig:
    interface: str
    filter: str | None = None
    snaplen: int = 256
    promiscuous: bool = False
    buffer_bytes: int = 64 << 20
    idle_timeout_s: float | None = None
    close_linger_s: float | None = None
    max_connections: int = 200_000
    #: Keep every packet read here (pcap, nanosecond timestamps): `analyze` on it gives
    #: the rows the watch gave.
    pcap: str | None = None


class LiveAnalysis:
    """One interface, analysed as its packets come. `poll` reads for a while and returns
    the connections that ended meanwhile; `finish` ends the open ones (at the last packet's
    time, as a capture file's end does) and returns them with the summary of all."""

    def __init__(self, config: WatchConfig) -> None:
        self.config = config
        self._core = _core.Watcher(
            config.interface, snaplen=config.snaplen, promiscuous=config.promiscuous,
            buffer_bytes=config.buffer_bytes, filter=config.filter, idle_timeout_s=config.idle_timeout_s,
            close_linger_s=config.close_linger_s, max_connections=config.max_connections, pcap=config.pcap)

    def _table(self, columns: dict[str, Any]) -> pa.Table:
        raw = {"columns": columns, "dictionaries": _dictionaries()}
        return arrow_table(raw, [self.config.interface])

    def poll(self, seconds: float) -> pa.Table:
        self._core.run_for(seconds)
        return self._table(self._core.take_ended())

    def stats(self) -> dict[str, Any]:
        return dict(self._core.stats())

    def finish(self) -> tuple[pa.Table, dict[str, Any], dict[str, Any]]:
        columns, summary, stats = self._core.finish()
        return self._table(columns), dict(summary), dict(stats)


def _dictionaries() -> dict[str, list[str]]:
    return dict(_core.table_dictionaries())
