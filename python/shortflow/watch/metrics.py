"""The Prometheus (OpenMetrics) face of `watch`: counters moved only when a connection
ends, so that a later re-classification never has to take a count back, and labels
bounded (at most `MAX_PORTS` server ports, the rest as "other")."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pyarrow as pa
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from shortflow.analyze import CAUSES

#: Server ports with a label of their own; traffic to any other is "other".
MAX_PORTS = 20
OTHER = "other"
#: The retransmission classes of the table's ``retx_<class>_c2s|s2c`` columns.
RETRANSMISSION_CLASSES = ("timeout", "fast", "tlp", "path_mtu", "unprompted", "spurious")

RTT_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
IW_BUCKETS = (1, 2, 3, 4, 5, 10, 16, 32, 64, 128)
DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


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


class WatchMetrics:
    def __init__(self, ports: Ports | None = None) -> None:
        self.registry = CollectorRegistry()
        self.ports = ports or Ports()
        r = self.registry
        self.connections = Counter("shortflow_connections", "Connections ended", ["port"], registry=r)
        self.seconds = Counter("shortflow_connection_seconds", "Connection time by cause of the time account (each "
                               "instant of a connection in one cause)", ["cause", "port"], registry=r)
        self.handshake = Counter("shortflow_handshake_retransmissions", "SYN and SYN/ACK retransmissions",
                                 ["kind", "port"], registry=r)
        self.retransmissions = Counter("shortflow_retransmissions", "Data retransmissions by class",
                                       ["class", "port"], registry=r)
        self.drops = Counter("shortflow_capture_drops", "Packets the capture lost: its ring full, or the interface's",
                             ["where"], registry=r)
        self.evicted = Counter("shortflow_evicted_connections", "Connections ended early to bound memory "
                               "(--max-connections)", registry=r)
        self.packets = Counter("shortflow_packets", "Packets read from the interface", registry=r)
        self.open = Gauge("shortflow_open_connections", "Connections open in the tracker", registry=r)
        self.rtt = Histogram("shortflow_handshake_rtt_seconds", "Handshake RTT at the capture point", ["port"],
                             buckets=RTT_BUCKETS, registry=r)
        self.iw = Histogram("shortflow_initial_window_segments", "The server's first flight", ["port"],
                            buckets=IW_BUCKETS, registry=r)
        self.duration = Histogram("shortflow_connection_duration_seconds", "First to last packet", ["port"],
                                  buckets=DURATION_BUCKETS, registry=r)
        self._last_stats: dict[str, int] = {}
        self._lock = threading.Lock()

    def add_ended(self, rows: pa.Table) -> None:
        """Counts the connections of `rows`, each as it ended."""
        if rows.num_rows == 0:
            return
        cols = {name: rows.column(name).to_numpy(zero_copy_only=False) for name in _NEEDED}
        labels = [self.ports.label(int(p)) for p in cols["server_port"]]
        with self._lock:
            for i, port in enumerate(labels):
                self.connections.labels(port).inc()
                for cause in CAUSES:
                    v = float(cols[f"time_{cause}_s"][i])
                    if v > 0:
                        self.seconds.labels(cause, port).inc(v)
                syn_rtx, synack_rtx = int(cols["syn_count"][i]) - 1, int(cols["synack_count"][i]) - 1
                if syn_rtx > 0:
                    self.handshake.labels("syn", port).inc(syn_rtx)
                if synack_rtx > 0:
                    self.handshake.labels("synack", port).inc(synack_rtx)
                for klass in RETRANSMISSION_CLASSES:
                    n = int(cols[f"retx_{klass}_c2s"][i]) + int(cols[f"retx_{klass}_s2c"][i])
                    if n:
                        self.retransmissions.labels(klass, port).inc(n)
                rtt = float(cols["handshake_rtt_s"][i])
                if np.isfinite(rtt):
                    self.rtt.labels(port).observe(rtt)
                if int(cols["iw_segments"][i]) > 0:
                    self.iw.labels(port).observe(int(cols["iw_segments"][i]))
                self.duration.labels(port).observe(float(cols["duration_s"][i]))

    def add_stats(self, stats: dict[str, Any]) -> None:
        """The capture's running counts: counters move by what grew since the last call."""
        with self._lock:
            for key, counter in (("ring_drops", self.drops.labels("ring")),
                                 ("interface_drops", self.drops.labels("interface")),
                                 ("evicted", self.evicted), ("packets", self.packets)):
                grew = int(stats[key]) - self._last_stats.get(key, 0)
                if grew > 0:
                    counter.inc(grew)
                self._last_stats[key] = int(stats[key])
            self.open.set(int(stats["open_connections"]))

    def serve(self, host: str, port: int) -> None:
        """The endpoint, on a thread of its own (`/metrics`)."""
        start_http_server(port, addr=host, registry=self.registry)


_NEEDED = ("server_port", "syn_count", "synack_count", "handshake_rtt_s", "iw_segments", "duration_s",
           *(f"time_{c}_s" for c in CAUSES),
           *(f"retx_{k}_{d}" for k in RETRANSMISSION_CLASSES for d in ("c2s", "s2c")))
