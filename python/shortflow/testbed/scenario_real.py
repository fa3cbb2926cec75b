"""The part of a scenario file the real-kernel testbed needs.

The simulator owns the full scenario format; this module reads only what the testbed acts
on and refuses, naming the key and the file, anything the real kernel here cannot do (or
that the testbed does not know): a silently ignored key would make the two worlds disagree
without saying why.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shortflow import _core
from shortflow.exceptions import ScenarioError
from shortflow.scenario import Scenario
from shortflow.units import parse_duration, parse_rate, parse_size


@dataclass(frozen=True)
class StackProfile:
    """What a named stack profile means on the real kernel.

    ``syn_rto_s``: the initial SYN (and SYN/ACK) retransmission timeout; Linux's default is
    1 s (RFC 6298 (5.7)); anything else needs BPF sock_ops TIMEOUT_INIT.
    ``rto_min_s``: the RTO floor (route ``rto_min``); Linux's default is 200 ms.
    """

    syn_rto_s: float
    rto_min_s: float
    source: str


#: Profiles Linux can mimic. rfc2988: 3 s initial RTO (RFC 2988 (2.1)) and a 1 s floor
#: (2.4); rfc6298: 1 s initial RTO (RFC 6298 (2.1), (5.7)) and a 1 s floor (2.4);
#: linux: the kernel as it is (1 s SYN RTO, 200 ms floor: include/net/tcp.h TCP_RTO_MIN).
PROFILES = {
    "linux": StackProfile(1.0, 0.2, "Linux defaults (TCP_TIMEOUT_INIT 1 s, TCP_RTO_MIN 200 ms)"),
    "rfc6298": StackProfile(1.0, 1.0, "RFC 6298 (2.1) initial RTO 1 s, (2.4) minimum RTO 1 s"),
    "rfc2988": StackProfile(3.0, 1.0, "RFC 2988 (2.1) initial RTO 3 s, (2.4) minimum RTO 1 s"),
}
#: Profiles whose retransmission rules Linux has no knob for.
UNMIMICKABLE = {
    "solaris": ("Solaris's delayed ACKs (a 200 ms interval, up to 8 segments deferred after the first two) "
                "have no Linux equivalent: Linux's ACK timer adapts (ato) and it ACKs every second segment"),
    "bsd": ("BSD's delayed ACKs on a 200 ms tick since boot, and its SYN ladder (3 s, 3 s, 3 s, ...), "
            "have no Linux knob"),
    "windows": "Windows's SYN retries (2) and its 200 ms delayed-ACK timer have no Linux knob",
}


@dataclass
class Host:
    """One end's stack settings. None: the profile's (or kernel's) value."""

    stack: str = "linux"
    initial_window: int | None = None
    rto_min_s: float | None = None
    syn_rto_s: float | None = None
    quickack: bool | None = None
    slow_start_after_idle: bool | None = None
    congestion_control: str = "cubic"
    #: Payload bytes per segment this host announces (route advmss).
    mss_bytes: int | None = None
    #: The receive window it offers (tcp_rmem and route initrwnd).
    receive_window_bytes: int | None = None
    #: Kernel defaults a scenario may turn off, each with its sysctl (None: the kernel's):
    #: tcp_timestamps, tcp_sack, tcp_window_scaling, tcp_recovery (RACK), tcp_early_retrans (TLP).
    timestamps: bool | None = None
    sack: bool | None = None
    window_scaling: bool | None = None
    rack: bool | None = None
    tlp: bool | None = None

    @property
    def profile(self) -> StackProfile:
        return PROFILES[self.stack]

    @property
    def effective_syn_rto_s(self) -> float:
        return self.syn_rto_s if self.syn_rto_s is not None else self.profile.syn_rto_s

    @property
    def effective_rto_min_s(self) -> float:
        return self.rto_min_s if self.rto_min_s is not None else self.profile.rto_min_s


@dataclass(frozen=True)
class SynOptimizer:
    """`[mechanisms] syn_optimizer`: document 000's tool, run as `shortflow synopt` in the
    namespace of `side` (client, server, or the router for the hosts behind it)."""

    side: str
    delay_s: float
    retries: int
    ports: tuple[int, ...]


@dataclass
class RealScenario:
    """A scenario as the testbed runs it. Drops are 1-based occurrence numbers."""

    path: Path
    name: str
    rtt_s: float
    bandwidth_bps: float | None
    queue_packets: int | None
    client: Host
    server: Host
    drop_syn: list[int] = field(default_factory=list)
    drop_synack: list[int] = field(default_factory=list)
    drop_ack: list[int] = field(default_factory=list)
    drop_data: list[int] = field(default_factory=list)
    loss_forward: float = 0.0
    loss_reverse: float = 0.0
    seed: int = 1
    request_bytes: int = 300
    response_bytes: int = 13549
    #: `workload.response_headers` as the scenario states it (None: not stated).
    response_headers: int | None = None
    connections: int = 1
    interval_s: float = 0.0
    syn_optimizer: SynOptimizer | None = None
    port: int = 80

    @property
    def one_way_delay_s(self) -> float:
        return self.rtt_s / 2


class _Reader:
    """Typed access to one table of the file; every error names file and key."""

    def __init__(self, path: Path, table: dict[str, Any], prefix: str) -> None:
        self.path, self.table, self.prefix = path, table, prefix
        self.used: set[str] = set()

    def fail(self, key: str, why: str) -> ScenarioError:
        return ScenarioError(f"{self.path}: {self.prefix}{key}: {why}")

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
        self.used.add(key)
        if key not in self.table:
            return default
        value = self.table[key]
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise self.fail(key, f"expected {getattr(kind, '__name__', kind)}, found {value!r}")
        return value

    def duration(self, key: str) -> float | None:
        text = self.get(key, str)
        if text is None:
            return None
        try:
            return parse_duration(text, what=f"{self.prefix}{key}")
        except ValueError as e:
            raise ScenarioError(f"{self.path}: {e}") from None

    def unit(self, key: str, parse: Callable[..., int]) -> float | None:
        """A size or a rate, read by the one unit grammar (`shortflow.units`)."""
        text = self.get(key, str)
        if text is None:
            return None
        try:
            return float(parse(text, what=f"{self.prefix}{key}"))
        except ValueError as e:
            raise ScenarioError(f"{self.path}: {e}") from None

    def indices(self, key: str) -> list[int]:
        value = self.get(key, list, [])
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value):
            raise self.fail(key, f"expected a list of occurrence numbers >= 1, found {value!r}")
        return sorted(set(value))

    def probability(self, key: str) -> float:
        p = float(self.get(key, (int, float), 0.0))
        if not 0.0 <= p <= 1.0:
            raise self.fail(key, f"{p} is not a probability between 0 and 1")
        return p

    def refuse_unknown(self, why: dict[str, str] | None = None) -> None:
        for key in self.table:
            if key in self.used:
                continue
            reason = (why or {}).get(key, "the testbed does not know this key (it would be silently ignored)")
            raise self.fail(key, reason)


def _host(path: Path, doc: dict[str, Any], side: str) -> Host:
    r = _Reader(path, _table(path, doc, side), f"{side}.")
    stack = r.get("stack", str, "linux")
    if stack in UNMIMICKABLE:
        raise r.fail("stack", f"{stack!r} cannot run on the real kernel: {UNMIMICKABLE[stack]}")
    if stack not in PROFILES:
        raise r.fail("stack", f"unknown stack profile {stack!r} (known: {', '.join([*PROFILES, *UNMIMICKABLE])})")
    iw = r.get("initial_window", int)
    if iw is not None and not 1 <= iw <= 1024:
        raise r.fail("initial_window", f"{iw} segments is outside what `ip route initcwnd` takes (1-1024)")
    host = Host(
        stack=stack,
        initial_window=iw,
        rto_min_s=r.duration("rto_min"),
        syn_rto_s=r.duration("syn_rto"),
        quickack=r.get("quickack", bool),
        slow_start_after_idle=r.get("slow_start_after_idle", bool),
        congestion_control=r.get("congestion_control", str, "cubic"),
    )
    for key in ("timestamps", "sack", "window_scaling", "rack", "tlp"):
        setattr(host, key, r.get(key, bool))
    if host.sack is False and (host.rack or host.tlp):
        raise r.fail("sack", "RACK and the tail loss probe need SACK")
    # How the simulator models this kernel; nothing to set on the real one.
    r.get("timer_slack", bool)
    if r.get("hystart", bool) is False:
        raise r.fail("hystart", "HyStart is a host-wide module parameter of tcp_cubic (not per namespace): "
                                "the testbed does not change it")
    recovery = r.get("recovery", str)
    if recovery is not None and recovery != "prr":
        raise r.fail("recovery", f"{recovery!r}: Linux recovers with PRR (\"prr\"); it has no other recovery to choose")
    mss = r.unit("mss", parse_size)
    if mss is not None:
        if not 536 <= mss <= 1460:
            raise r.fail("mss", f"{mss:g} B: the testbed's 1500-byte links carry 536 to 1460 payload bytes")
        host.mss_bytes = int(mss)
    rwnd = r.unit("receive_window", parse_size)
    if rwnd is not None:
        if not 1024 <= rwnd <= 64 * 1024**2:
            raise r.fail("receive_window", f"{rwnd:g} B: Linux takes a receive buffer of 1 KiB to 64 MiB here")
        host.receive_window_bytes = int(rwnd)
    # Linux clamps a route rto_min to at least one jiffy and TCP_RTO_MAX (120 s).
    if host.rto_min_s is not None and not 0.004 <= host.rto_min_s <= 120:
        raise r.fail("rto_min", "Linux takes a minimum RTO between 4ms (one jiffy) and 120s")
    if host.syn_rto_s is not None and not 0.004 <= host.syn_rto_s <= 120:
        raise r.fail("syn_rto", "Linux takes a SYN RTO between 4ms (one jiffy) and 120s")
    r.refuse_unknown({"delayed_ack": "a delayed-ACK timer other than Linux's own is not set by the testbed yet"})
    return host


def _table(path: Path, doc: dict[str, Any], name: str) -> dict[str, Any]:
    value = doc.get(name, {})
    if not isinstance(value, dict):
        raise ScenarioError(f"{path}: {name}: expected a table [{name}]")
    return value


def _path_settings(path: Path, doc: dict[str, Any]) -> tuple[float, float | None, int | None]:
    r = _Reader(path, _table(path, doc, "path"), "path.")
    rtt = r.duration("rtt")
    if rtt is None:
        raise r.fail("rtt", "missing: the testbed needs the two-way propagation delay (e.g. rtt = \"20ms\")")
    bandwidth = r.unit("bandwidth", parse_rate)
    queue = r.get("queue", dict)
    packets = None
    if queue is not None:
        kind = queue.get("kind", "droptail")
        if kind != "droptail":
            raise r.fail("queue.kind", f"{kind!r}: this kernel has only tbf's drop-tail queue (no RED/CoDel/fq)")
        packets = queue.get("packets")
        if not isinstance(packets, int) or packets < 1 or set(queue) - {"kind", "packets"}:
            raise r.fail("queue", "expected { kind = \"droptail\", packets = N }")
    r.refuse_unknown()
    return rtt, bandwidth, packets


def load(scenario: str | Path | Scenario, overrides: Iterable[str] = ()) -> RealScenario:
    """Reads a scenario (a file, or a `Scenario` with its overrides) plus `overrides`
    (``key=value``, as ``shortflow simulate --set``) and returns what the testbed runs, or
    raises `ScenarioError`. The document is the simulator's own (same file, same overrides
    applied by the same code), so both worlds read the same thing."""
    sc = scenario if isinstance(scenario, Scenario) else Scenario.load(Path(scenario))
    extra = tuple(overrides)
    if extra:
        sc = sc.with_overrides(*extra)
    doc = json.loads(_core.scenario_document(sc.text, sc.source, list(sc.overrides)))
    return _from_document(Path(sc.source), doc)


def _from_document(path: Path, doc: dict[str, Any]) -> RealScenario:
    top = _Reader(path, doc, "")
    name = top.get("name", str, path.stem)
    seed = top.get("seed", int, 1)
    top.get("description", str)
    rtt, bandwidth, queue = _path_settings(path, doc)
    s = RealScenario(path, name, rtt, bandwidth, queue, _host(path, doc, "client"), _host(path, doc, "server"), seed=seed)
    d = _Reader(path, _table(path, doc, "drop"), "drop.")
    s.drop_syn, s.drop_synack, s.drop_ack, s.drop_data = (d.indices(k) for k in ("syn", "synack", "ack", "data"))
    d.refuse_unknown()
    rl = _Reader(path, _table(path, doc, "random_loss"), "random_loss.")
    s.loss_forward, s.loss_reverse = rl.probability("forward"), rl.probability("reverse")
    s.seed = rl.get("seed", int, s.seed)
    rl.refuse_unknown()
    _workload(path, doc, s)
    mech = _Reader(path, _table(path, doc, "mechanisms"), "mechanisms.")
    s.syn_optimizer = _syn_optimizer(path, mech, s.port)
    mech.refuse_unknown({k: "the testbed does not apply this mechanism yet" for k in mech.table})
    cap = _Reader(path, _table(path, doc, "capture"), "capture.")
    point = cap.get("point", str, "router")
    if point not in ("client", "server", "router"):
        raise cap.fail("point", f"{point!r}: expected client, server or router")
    # The testbed always captures both router links with their Ethernet framing; the
    # simulator's choice of framing for its own pcap changes nothing here.
    cap.get("link", str)
    cap.refuse_unknown()
    for key in doc:
        if key not in top.used and key not in ("path", "client", "server", "drop", "random_loss", "workload", "mechanisms", "capture"):
            raise top.fail(key, "the testbed does not know this key (it would be silently ignored)")
    return s


def _syn_optimizer(path: Path, mech: _Reader, workload_port: int) -> SynOptimizer | None:
    """`syn_optimizer = { side = "client", delay = "200ms", retries = 3, port = 80 }` (the
    simulator's format, which has checked it already; `port` defaults to the workload's)."""
    table = mech.get("syn_optimizer", dict)
    if table is None:
        return None
    r = _Reader(path, table, "mechanisms.syn_optimizer.")
    side = r.get("side", str, "client")
    if side not in ("client", "server", "router"):
        raise r.fail("side", f"{side!r}: expected client, server or router")
    delay = r.duration("delay")
    if delay is None or delay < 0.001:
        raise r.fail("delay", "required, at least 1ms (e.g. \"200ms\")")
    retries = r.get("retries", int, 3)
    if not 0 <= retries <= 100:
        raise r.fail("retries", f"{retries}: expected 0 to 100")
    port = r.get("port", (int, list), workload_port)
    ports = tuple(port) if isinstance(port, list) else (port,)
    if not all(isinstance(p, int) and not isinstance(p, bool) and 1 <= p <= 65535 for p in ports):
        raise r.fail("port", f"{port!r}: expected a port or a list of ports (1-65535)")
    r.refuse_unknown()
    return SynOptimizer(side, delay, retries, ports)


def _workload(path: Path, doc: dict[str, Any], s: RealScenario) -> None:
    r = _Reader(path, _table(path, doc, "workload"), "workload.")
    kind = r.get("kind", str, "http")
    if kind != "http":
        raise r.fail("kind", f"{kind!r}: the testbed runs only http (nginx serving a body, one request per connection)")
    request = r.unit("request", parse_size)
    response = r.unit("response", parse_size)
    s.request_bytes = int(request) if request is not None else s.request_bytes
    s.response_bytes = int(response) if response is not None else s.response_bytes
    # nginx's own headers are what they are: the value the scenario states is checked
    # against what the client received (`testbed compare`), never imposed.
    headers = r.unit("response_headers", parse_size)
    s.response_headers = int(headers) if headers is not None else None
    if s.request_bytes < 64:
        raise r.fail("request", f"{s.request_bytes} B: an HTTP GET with its headers needs at least 64B")
    s.connections = r.get("connections", int, 1)
    if not 1 <= s.connections <= 1000:
        raise r.fail("connections", "expected 1 to 1000 sequential connections")
    s.interval_s = r.duration("interval") or 0.0
    s.port = r.get("port", int, s.port)
    if not 1 <= s.port <= 65535:
        raise r.fail("port", f"{s.port} is not a TCP port")
    # nginx runs with keepalive_timeout 0: it closes each connection after its response.
    close = r.get("close", str, "server")
    if close != "server":
        raise r.fail("close", f"{close!r}: the testbed's nginx always closes first (close = \"server\")")
    r.refuse_unknown()
