"""The Prometheus (OpenMetrics) face of `watch`: counters moved only when a connection
ends, so that a later re-classification never has to take a count back, and labels
bounded (at most `MAX_PORTS` server ports, the rest as "other").

The rows of a slice are added up with numpy, a group per port label, and the totals kept
here are what the endpoint serves (a collector of our own): counting row by row through
prometheus_client's objects cost more CPU than the analysis itself under a flood."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from shortflow.analyze import CAUSES

#: Server ports with a label of their own; traffic to any other is "other".
MAX_PORTS = 20
OTHER = "other"
#: The retransmission classes of the table's ``retx_<class>_c2s|s2c`` columns.
RETRANSMISSION_CLASSES = ("timeout", "fast", "tlp", "path_mtu", "unprompted", "spurious")

#: name → (help, column, upper bounds of the buckets)
HISTOGRAMS: dict[str, tuple[str, str, tuple[float, ...]]] = {
    "shortflow_handshake_rtt_seconds": ("Handshake RTT at the capture point", "handshake_rtt_s",
                                        (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)),
    "shortflow_initial_window_segments": ("The server's first flight, in segments", "iw_segments",
                                          (1, 2, 3, 4, 5, 10, 16, 32, 64, 128)),
    "shortflow_connection_duration_seconds": ("First to last packet", "duration_s",
                                              (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)),
}


class Ports:
    """The label of a server port: its number for the first `MAX_PORTS` seen (or those
    given), "other" after."""

    def __init__(self, fixed: list[int] | None = None) -> None:
        self.fixed = fixed is not None
        self.known: dict[int, str] = {p: str(p) for p in (fixed or [])[:MAX_PORTS]}

    def label(self, port: int) -> str:
        name = self.known.get(port)
        if name is None:
            if self.fixed or len(self.known) >= MAX_PORTS:
                return OTHER
            name = self.known[port] = str(port)
        return name


class WatchMetrics(Collector):
    def __init__(self, ports: Ports | None = None) -> None:
        self.ports = ports or Ports()
        self._lock = threading.Lock()
        #: (metric, (label values…)) → total
        self._counters: dict[tuple[str, tuple[str, ...]], float] = {
            # Served from the start, at 0: "no drops" is a figure to read, not a missing series.
            ("shortflow_capture_drops", ("ring",)): 0.0, ("shortflow_capture_drops", ("interface",)): 0.0,
            ("shortflow_evicted_connections", ()): 0.0, ("shortflow_packets", ()): 0.0}
        #: (metric, port) → (counts per bucket, the last one +Inf; sum)
        self._histograms: dict[tuple[str, str], tuple[np.ndarray, float]] = {}
        self._open = 0
        self._last_stats: dict[str, int] = {}
        self.registry = CollectorRegistry()
        self.registry.register(self)

    def _add(self, metric: str, labels: tuple[str, ...], v: float) -> None:
        # A port's series exist from its first connection on, at 0 where nothing happened:
        # a rate over them reads 0, not "no data".
        key = (metric, labels)
        self._counters[key] = self._counters.get(key, 0.0) + v

    def add_ended(self, rows: pa.Table) -> None:
        """Counts the connections of `rows`, each as it ended."""
        if rows.num_rows == 0:
            return
        col = {name: rows.column(name).to_numpy(zero_copy_only=False) for name in _NEEDED}
        ports, inverse = np.unique(col["server_port"], return_inverse=True)
        with self._lock:
            for k, port_number in enumerate(ports):
                port = self.ports.label(int(port_number))
                g = inverse == k
                self._add("shortflow_connections", (port,), float(g.sum()))
                for cause in CAUSES:
                    self._add("shortflow_connection_seconds", (cause, port), float(col[f"time_{cause}_s"][g].sum()))
                self._add("shortflow_handshake_retransmissions", ("syn", port),
                          float(np.maximum(col["syn_count"][g].astype(np.int64) - 1, 0).sum()))
                self._add("shortflow_handshake_retransmissions", ("synack", port),
                          float(np.maximum(col["synack_count"][g].astype(np.int64) - 1, 0).sum()))
                for klass in RETRANSMISSION_CLASSES:
                    n = col[f"retx_{klass}_c2s"][g].astype(np.int64).sum() + col[f"retx_{klass}_s2c"][g].astype(np.int64).sum()
                    self._add("shortflow_retransmissions", (klass, port), float(n))
                for name, (_, column, bounds) in HISTOGRAMS.items():
                    values = col[column][g].astype(np.float64)
                    values = values[np.isfinite(values)]
                    if column == "iw_segments":
                        values = values[values > 0]  # no data sent: no first flight
                    if not len(values):
                        continue
                    counts = np.bincount(np.searchsorted(bounds, values, side="left"), minlength=len(bounds) + 1)
                    old, total = self._histograms.get((name, port), (np.zeros(len(bounds) + 1, np.int64), 0.0))
                    self._histograms[(name, port)] = (old + counts, total + float(values.sum()))

    def add_stats(self, stats: dict[str, Any]) -> None:
        """The capture's running counts: counters move by what grew since the last call."""
        with self._lock:
            for key, metric, labels in (("ring_drops", "shortflow_capture_drops", ("ring",)),
                                        ("interface_drops", "shortflow_capture_drops", ("interface",)),
                                        ("evicted", "shortflow_evicted_connections", ()),
                                        ("packets", "shortflow_packets", ())):
                grew = int(stats[key]) - self._last_stats.get(key, 0)
                if grew > 0:
                    self._add(metric, labels, float(grew))
                self._last_stats[key] = int(stats[key])
            self._open = int(stats["open_connections"])

    def collect(self) -> Iterator[Any]:
        with self._lock:
            counters = dict(self._counters)
            histograms = dict(self._histograms)
            open_now = self._open
        for metric, (help_text, labels) in _COUNTERS.items():
            counter = CounterMetricFamily(metric, help_text, labels=list(labels))
            for (name, values), total in sorted(counters.items()):
                if name == metric:
                    counter.add_metric(list(values), total)
            yield counter
        yield GaugeMetricFamily("shortflow_open_connections", "Connections open in the tracker", value=open_now)
        for metric, (help_text, _, bounds) in HISTOGRAMS.items():
            histogram = HistogramMetricFamily(metric, help_text, labels=["port"])
            for (name, port), (counts, total) in sorted(histograms.items(), key=lambda kv: kv[0]):
                if name == metric:
                    cumulative = np.cumsum(counts)
                    buckets = [(_le(b), float(c)) for b, c in zip(bounds, cumulative[:-1])] + [("+Inf", float(cumulative[-1]))]
                    histogram.add_metric([port], buckets, total)
            yield histogram

    def serve(self, host: str, port: int) -> None:
        """The endpoint, on a thread of its own (`/metrics`)."""
        start_http_server(port, addr=host, registry=self.registry)


def _le(bound: float) -> str:
    return f"{bound:g}" if bound != int(bound) else f"{bound:.1f}"


#: Counter families: name (without `_total`) → (help, label names).
_COUNTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "shortflow_connections": ("Connections ended", ("port",)),
    "shortflow_connection_seconds": ("Connection time by cause of the time account (each instant of a connection "
                                     "in one cause)", ("cause", "port")),
    "shortflow_handshake_retransmissions": ("SYN and SYN/ACK retransmissions", ("kind", "port")),
    "shortflow_retransmissions": ("Data retransmissions by class", ("class", "port")),
    "shortflow_capture_drops": ("Packets the capture lost: its ring full, or the interface's", ("where",)),
    "shortflow_evicted_connections": ("Connections ended early to bound memory (--max-connections)", ()),
    "shortflow_packets": ("Packets read from the interface", ()),
}

_NEEDED = ("server_port", "syn_count", "synack_count", *(spec[1] for spec in HISTOGRAMS.values()),
           *(f"time_{c}_s" for c in CAUSES),
           *(f"retx_{k}_{d}" for k in RETRANSMISSION_CLASSES for d in ("c2s", "s2c")))
