"""`realize(scenario) -> LinuxPlan`: every field of a resolved scenario, compared with what
this kernel can set, either becomes a setting in the plan or refuses the run naming the
field and why. Never a silent difference between the simulator and the kernel.

How a field is set comes from the kernel table (`shortflow.host.knobs`: the sysctl, route
metric or BPF field of each `StackConfig` field, with its range) and the kernel's own
behaviour is the `linux` profile (`_core.stack_profiles()`, whose defaults are the table's),
both defined once in crates/scenario. A field Linux has
no knob for is accepted only when it equals the kernel's behaviour, or when it cannot act in
this scenario (e.g. a receiver's ACK policy when it receives a single segment): the plan
says which, so `shortflow testbed plan` shows every decision.
"""

from __future__ import annotations

import functools
import json
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from shortflow import _core
from shortflow.exceptions import ScenarioError
from shortflow.host import bpf, knobs, sysctl
from shortflow.host.kernel import kernel_hz

MS = 1_000_000
#: Fields that say how the simulator models the kernel, not what the kernel does ({hz}:
#: the running kernel's timer frequency, {jiffy_ms} its jiffy).
MODEL_ONLY = {
    "rto.granularity": "the model's clock granularity G; the kernel measures RTTs in microseconds",
    "jiffy": "the model's timer resolution; the kernel's timers always run on {jiffy_ms:g} ms jiffies (HZ {hz})",
    "timer_slack": "whether the model adds the timer wheel's slack; the kernel always has it",
    "jiffies_origin_ns": "the model's jiffies phase, drawn from the seed",
    "timer_lag": "how late the model's timer softirq runs; the kernel's runs as late as this machine's load makes it",
}
#: The testbed's links carry 1500-byte frames: 536 (RFC 879) to 1460 payload bytes.
MSS_RANGE = (536, 1460)


class Resolved(Protocol):
    """What realising reads of a scenario: the model's resolution and the file it came from
    (named in refusals). `scenario_real.RealScenario` is one; this module stays below it."""

    @property
    def path(self) -> Path: ...

    @property
    def resolved(self) -> dict[str, Any]: ...


class RealizeError(ScenarioError):
    """The model accepts the scenario, this kernel cannot run it: names the field and why."""


@dataclass(frozen=True)
class Decision:
    """What the plan does with one field: ``set`` (with `knob` = `value`), ``same`` (the
    kernel's own behaviour), ``no effect`` (cannot act in this scenario) or ``model only``
    (how the simulator models the kernel, e.g. its timer wheel)."""

    key: str
    action: str
    knob: str = ""
    value: str = ""
    why: str = ""


@dataclass
class RolePlan:
    """What one namespace gets: sysctls, route metrics and a SYN RTO for its BPF program."""

    sysctls: dict[str, str | int] = field(default_factory=dict)
    route: list[str] = field(default_factory=list)
    syn_rto_s: float | None = None


@dataclass
class LinuxPlan:
    """The settings realising a scenario, per role, and the decision for every field."""

    client: RolePlan = field(default_factory=RolePlan)
    server: RolePlan = field(default_factory=RolePlan)
    decisions: list[Decision] = field(default_factory=list)

    def role(self, side: str) -> RolePlan:
        return self.client if side == "client" else self.server

    def as_json(self) -> dict[str, Any]:
        return {
            "client": self.client.__dict__, "server": self.server.__dict__,
            "decisions": [d.__dict__ for d in self.decisions],
        }


@functools.cache
def linux_profile() -> dict[str, Any]:
    """The kernel's own behaviour, as the model's `linux` profile states it."""
    return json.loads(_core.stack_profiles())["linux"]["config"]  # type: ignore[no-any-return]


def linux_knobs() -> dict[str, knobs.Knob]:
    """Each stack-profile field's row realize sets it by: its sysctl where it has one (a
    sysctl is per namespace, as the testbed's hosts are), else its first row."""
    out: dict[str, knobs.Knob] = {}
    for k in knobs.knobs():
        if k.field not in out or (k.set_by == "sysctl" and out[k.field].set_by != "sysctl"):
            out[k.field] = k
    return out


def _get(cfg: dict[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        cfg = cfg[part]
    return cfg


def _ms(ns: int) -> str:
    return f"{ns / MS:g}ms"


def _range(k: knobs.Knob, hz: int, joiner: str = "and") -> str:
    lo, hi = k.limits(hz)
    return f"{_ms(round(lo * 1e9))} {joiner} {hi:g}s"


def _have_bpf_tools() -> bool:
    return bpf.available()


def _have_sysctl(name: str) -> bool:
    return sysctl.exists(name)


class _Realizer:
    def __init__(self, s: Resolved) -> None:
        self.s, self.r = s, s.resolved
        self.plan = LinuxPlan()
        self.file = str(s.path)

    def refuse(self, key: str, why: str) -> RealizeError:
        side = key.split(".", 1)[0]
        if side in ("client", "server") and self.r[side]["profile"] != "linux" and not key.endswith(")"):
            why += f" (stack = {self.r[side]['profile']!r})"
        e = RealizeError(f"{self.file}: {key}: {why}")
        e.file, e.key = self.file, key  # type: ignore[attr-defined]
        return e

    def decide(self, key: str, action: str, knob: str = "", value: str = "", why: str = "") -> None:
        self.plan.decisions.append(Decision(key, action, knob, value, why))

    # What can happen in this scenario, for fields that act only on some events.
    def random_loss(self) -> bool:
        rl = self.r["random_loss"]
        kinds = any(p > 0 for p in rl["kinds"].values())  # random_loss.syn, .synack, ...
        return kinds or any(d.get("bernoulli", 1.0) > 0 for d in (rl["forward"], rl["reverse"]))

    def handshake_drops(self) -> int:
        return len(self.r["drop"]["syn"]) + len(self.r["drop"]["synack"])

    def data_loss(self, side: str) -> bool:
        """Can a data segment `side` sends (or the ACK clocking it) be lost?"""
        d = self.r["drop"]
        own = d["client_data"] if side == "client" else d["data"] + d["ack"]
        # The router's drop-tail queue can overflow only when a flight can outgrow it.
        overflow = self.segments_sent(side) > self.r["path"]["queue"].get("drop_tail_packets", 0)
        return self.random_loss() or bool(own) or overflow

    def segments_sent(self, side: str) -> int:
        """Segments of one request (client) or response (server), at the MSS the sender
        sends with (the peer's announced MSS, at most the sender's MTU less 40 bytes:
        tcp_sync_mss) less the timestamp option (RFC 7323: 12 bytes) when both use it."""
        w = self.r["workload"]
        c, sv = self.r["client"], self.r["server"]
        me, peer = (c, sv) if side == "client" else (sv, c)
        own = int(me["mss"]) if me["mtu"] is None else int(me["mtu"]) - 40
        mss = min(own, int(peer["mss"])) - (12 if c["timestamps"] and sv["timestamps"] else 0)
        payload = w["request"] if side == "client" else w["response"]
        return -(-int(payload) // mss)

    def initial_window_segments(self, host: dict[str, Any]) -> int:
        iw = host["initial_window"]
        if iw == "rfc3390":
            mss = int(host["mss"])
            return min(4 * mss, max(2 * mss, 4380)) // mss
        return int(iw["segments"])

    # The whole scenario.
    def run(self) -> LinuxPlan:
        self.scenario_keys()
        for side in ("client", "server"):
            self.host(side)
        return self.plan

    def scenario_keys(self) -> None:
        r = self.r
        if r["dumbbell"] is not None:
            raise self.refuse("dumbbell", "the testbed builds one client, one router and one server, not a dumbbell")
        p = r["path"]
        q = p["queue"]
        if not (isinstance(q, dict) and "drop_tail_packets" in q):
            kind = next(iter(q)) if isinstance(q, dict) else q
            raise self.refuse("path.queue", f"{kind}: the testbed's emulator carries a drop-tail queue in packets only")
        if p["rtt_max"] is not None:
            raise self.refuse("path.rtt_max", "the testbed's emulator delays every packet by path.rtt; "
                                              "it draws no delay per connection")
        if p["access_bandwidth_bps"] != p["bandwidth_bps"]:
            raise self.refuse("path.access_bandwidth", "the testbed's hosts sit on veths with no rate of their own: "
                                                       "only the router's egress (path.bandwidth) is shaped")
        w = r["workload"]
        # Connection vectors are replayed by the testbed's own client and server (abt_run).
        abt = isinstance(w["kind"], dict) and "abt" in w["kind"]
        if w["kind"] != "http" and not abt:
            kind = w["kind"] if isinstance(w["kind"], str) else next(iter(w["kind"]))
            raise self.refuse("workload.kind", f"{kind!r}: the testbed runs only http (nginx serving a body, one request per connection)")
        for key, ok, why in (
            ("requests", w["requests"] == 1, "the testbed's client sends one request per connection"),
            ("think_time", w["think_time"] == 0, "the testbed's client sends one request per connection"),
            ("idle", w["idle"] == 0, "the testbed's client sends one request per connection"),
            ("parallel", not w["parallel"], "the testbed's client opens its connections one after another"),
            ("close", w["close"] == "server", "the testbed's nginx always closes first (close = \"server\")"),
            ("response_writes", len(w["response_writes"]) == 1, "nginx writes the body as one file, not in chunks"),
            ("request", w["request"] >= 64, f"{w['request']} B: an HTTP GET with its headers needs at least 64B"),
            ("connections", 1 <= w["connections"] <= 1000, "expected 1 to 1000 sequential connections"),
        ):
            if not ok and not abt:
                raise self.refuse(f"workload.{key}", why)
        if abt:
            self.decide("workload", "set", "the testbed's a-b-t client and server", f"{w['connections']} connection vectors")
            self.decide("workload.vectors", "set", "shortflow-netem --abt-first-port",
                        "each connection over its vector's own RTT (r): its delay beyond path.rtt is added to its "
                        "packets after the router's queue")
        else:
            self.decide("workload", "set", "nginx + the testbed's client", f"{w['connections']} × GET {w['request']}B → {w['response']}B")
        for key in ("data_bytes", "client_data_bytes"):
            if r["drop"][key]:
                raise self.refuse(f"drop.{key}", "the testbed's emulator loses packets by occurrence, not by the bytes "
                                                 "they carry (a model-only loss)")
        for key in ("sfr", "min_rto_004"):
            if r[key] is not None:
                raise self.refuse(f"mechanisms.{key}", "the testbed does not apply this mechanism on the kernel yet")
        o = r["syn_optimizer"]
        if o is not None:
            self.decide("mechanisms.syn_optimizer", "set", f"shortflow synopt in the {o['side']} namespace",
                        f"delay {_ms(o['delay'])}, {o['retries']} retries, port {o['port']}")
        # The emulator reads the scenario itself and decides with the simulator's loss
        # model (shortflow-netem --scenario): every drop and loss shape is carried as is.
        for key in ("drop", "random_loss"):
            self.decide(key, "set", "shortflow-netem --scenario", why="the simulator's loss model, same seed")
        self.decide("path", "set", "shortflow-netem --scenario (the simulator's ports)",
                    f"rtt {_ms(p['rtt'])}, {p['bandwidth_bps'] / 1e6:g} Mbit/s, {q['drop_tail_packets']} packets")
        # The testbed always captures both router links, Ethernet-framed.
        self.decide("capture", "model only", "tcpdump on both router links",
                    why="the simulator's capture point and framing choose its own pcap only")
        self.decide("time_limit", "model only", why="the real run ends when its connections do")

    def host(self, side: str) -> None:
        h, lin = self.r[side], linux_profile()
        plan = self.plan.role(side)
        # Cached path metrics would start a connection from an earlier one's RTT.
        plan.sysctls["net.ipv4.tcp_no_metrics_save"] = 1
        handled = {
            "profile", "rto.initial", "rto.min", "rto.max", "syn_backoff", "initial_window", "congestion_control",
            "recovery", "ack.delayed", "mss", "mtu", "receive_window", "linux_receiver", "hystart",
        }

        def key(f: str) -> str:
            return f"{side}.{f}"

        self.decide(key("profile"), "same" if h["profile"] == "linux" else "set", "the knobs of its fields below", h["profile"],
                    "each field below is the profile's unless the file sets it")
        self.rto(side, h, lin, plan)
        self.window(side, h, lin, plan)
        self.ack(side, h, lin, plan)
        for f, k in linux_knobs().items():
            if f in handled:
                continue
            v, d = _get(h, f), _get(lin, f)
            if f in MODEL_ONLY:
                hz = kernel_hz()
                knob = f"{k.knob}={hz}" if f == "jiffy" else k.knob
                self.decide(key(f), "model only", knob, json.dumps(v), MODEL_ONLY[f].format(hz=hz, jiffy_ms=1000 / hz))
            elif k.set_by == "sysctl":
                self.sysctl(side, f, k, v, d, plan)
            elif v == d:
                self.decide(key(f), "same", k.knob, json.dumps(v))
            else:
                self.fixed(side, f, k.knob, v, d)

    def sysctl(self, side: str, f: str, row: knobs.Knob, v: Any, d: Any, plan: RolePlan) -> None:
        key, knob = f"{side}.{f}", row.knob
        # A count the kernel table bounds.
        if row.bounded and type(v) is int and not row.takes(v, kernel_hz()):
            lo, hi = row.limits(kernel_hz())
            raise self.refuse(key, f"{v}: {knob} takes {lo:g} to {hi:g}")
        if f == "rack" and not v and _rack_always() and self.r["client"]["sack"] and self.r["server"]["sack"] \
                and self.data_loss(side):
            raise self.refuse(key, f"false: Linux {'.'.join(map(str, _kernel()))} detects losses with RACK whatever "
                                   f"{knob} says (measured here: with {knob} = 0 a SACK sender still resent the "
                                   "hole one RTT after the SACK, as RACK does); keep rack = true, or set sack = false "
                                   "on either end (no RACK without SACK)")
        if f in ("rack", "tlp", "timestamps", "sack", "window_scaling", "slow_start_after_idle"):
            on = {"rack": 1, "tlp": 3}.get(f, 1)
            value: int = on if v else 0
        elif f == "spurious_rto":
            # tcp_frto (tcp_enter_loss/tcp_process_loss): 2 is Linux's SACK-enhanced F-RTO, 0 none.
            if v not in ("linux", "off"):
                raise self.refuse(key, f"{v!r}: the kernel runs its own F-RTO (\"linux\", {knob} = 2) or none "
                                       f"(\"off\", 0); RFC 4015's response is not among its choices")
            value = 2 if v == "linux" else 0
        else:
            value = int(v)
        if v == d:
            self.decide(key, "same", knob, str(value))
            return
        plan.sysctls[knob] = value
        self.decide(key, "set", knob, str(value))

    def fixed(self, side: str, f: str, knob: str, v: Any, d: Any) -> None:
        """A field the kernel has no knob for: accepted only where it cannot act."""
        key = f"{side}.{f}"
        relevant = {
            "rto.min_on_variance": self.data_loss(side),
            "rto.after_syn_loss": self.data_loss(side) and (self.handshake_drops() > 0 or self.random_loss()),
            "synack_backoff": side == "server" and (len(self.r["drop"]["synack"]) > 1 or self.random_loss()),
            "synack_on_duplicate_syn": side == "server" and (self.handshake_drops() > 0 or self.random_loss()),
            # Linux's handshake rules act after a resend: an RTT from the timestamp echo (seen
            # only when data is lost later), IW 1 after more than one resend, and a duplicate
            # SYN that pushes the server's SYN/ACK timer back.
            "linux_handshake": self.random_loss() or (self.handshake_drops() > 0 and (
                self.data_loss(side) or self.handshake_drops() > 1
                or (side == "server" and len(self.r["drop"]["synack"]) > 0))),
            "abc_limit": self.segments_sent(side) > self.initial_window_segments(self.r[side]),
            "coalesce_writes": len(self.r["workload"]["response_writes"]) > 1,
            "ack.ack_every": self.segments_sent(_peer(side)) > 1,
            "ack.count": self.segments_sent(_peer(side)) > 1,
            "ack.quick_acks": self.segments_sent(_peer(side)) > 1,
        }
        if f == "iw_one_after_handshake_loss":
            # tcp_init_transfer: cwnd 1 only after more than one SYN/SYN-ACK retransmission.
            n = self.handshake_drops()
            if self.segments_sent(side) <= 1:
                self.decide(key, "no effect", knob, json.dumps(v), f"the {side} sends one segment")
            elif self.random_loss():
                raise self.refuse(key, f"{v}: Linux sets cwnd to 1 only after more than one handshake retransmission "
                                       f"({knob}); with random loss the handshake may lose one or two")
            elif n == 0 or (v and n >= 2) or (not v and n <= 1):
                self.decide(key, "same", knob, json.dumps(v), f"{n} handshake packets dropped")
            else:
                raise self.refuse(key, f"{v}: with {n} handshake drops Linux {'keeps' if n == 1 else 'cuts'} its "
                                       f"initial window ({knob}); no knob changes that")
            return
        if f not in relevant:
            raise self.refuse(key, f"{json.dumps(v)}: Linux has no knob for it ({knob}); the kernel's is {json.dumps(d)}")
        if not relevant[f]:
            self.decide(key, "no effect", knob, json.dumps(v), "cannot act in this scenario (no loss, or one segment)")
        else:
            raise self.refuse(key, f"{json.dumps(v)}: Linux has no knob for it ({knob}); the kernel's is {json.dumps(d)}")

    def rto(self, side: str, h: dict[str, Any], lin: dict[str, Any], plan: RolePlan) -> None:
        rto, dflt = h["rto"], lin["rto"]
        key = f"{side}.rto"
        init = rto["initial"]
        hz = kernel_hz()
        if init == dflt["initial"]:
            self.decide(f"{key}.initial", "same", "TCP_TIMEOUT_INIT", _ms(init))
        else:
            syn_rto = knobs.knob("syn_rto", "bpf_field")
            if not syn_rto.takes(init / 1e9, hz):
                raise self.refuse(f"{side}.syn_rto", f"{_ms(init)}: Linux takes a SYN RTO between "
                                                     f"{_range(syn_rto, hz)} ({syn_rto.limit}, HZ {hz})")
            if not _have_bpf_tools():
                raise self.refuse(f"{side}.syn_rto", f"a SYN RTO of {_ms(init)} needs the tuner's BPF program (built with "
                                                     "the extension, or clang to compile it: `make deps`); Linux's own "
                                                     f"is {_ms(dflt['initial'])}")
            plan.syn_rto_s = init / (1000 * MS)
            self.decide(f"{key}.initial", "set", "BPF_SOCK_OPS_TIMEOUT_INIT", _ms(init))
        low = rto["min"]
        if low == dflt["min"]:
            self.decide(f"{key}.min", "same", "route rto_min", _ms(low))
        else:
            rto_min = knobs.knob("rto_min", "route_metric")
            if not rto_min.takes(low / 1e9, hz):
                raise self.refuse(f"{side}.rto_min", f"{_ms(low)}: Linux takes a minimum RTO between "
                                                     f"{_range(rto_min, hz)} ({rto_min.limit}, HZ {hz})")
            plan.route += ["rto_min", str(rto_min.encode(low / 1e9))]
            self.decide(f"{key}.min", "set", "route rto_min", _ms(low))
        high = rto["max"]
        if high == dflt["max"]:
            self.decide(f"{key}.max", "same", "net.ipv4.tcp_rto_max_ms", _ms(high))
        else:
            rto_max = knobs.knob("rto_max", "sysctl")
            if not rto_max.takes(high / 1e9, hz):
                raise self.refuse(f"{side}.rto_max", f"{_ms(high)}: {rto_max.knob} takes {_range(rto_max, hz, 'to')}")
            if not _have_sysctl(rto_max.knob):
                raise self.refuse(f"{side}.rto_max", "this kernel has no net.ipv4.tcp_rto_max_ms (Linux 6.15+)")
            plan.sysctls[rto_max.knob] = rto_max.encode(high / 1e9)
            self.decide(f"{key}.max", "set", "net.ipv4.tcp_rto_max_ms", str(high // MS))
        # The SYN schedule: n equal waits, then doubling, is tcp_syn_linear_timeouts = n - 1.
        b = h["syn_backoff"]
        table = [1, 2] if b == "exponential" else b["table"]
        n = next((i for i, m in enumerate(table) if m != 1), len(table))
        tail = table[n:]
        doubling = all(m == 2 ** (i + 1) for i, m in enumerate(tail[: max(0, h["syn_retries"] - n)]))
        if not (n >= 1 and doubling):
            raise self.refuse(f"{side}.stack ({h['profile']})", f"SYN back-off {table}: Linux waits the initial RTO "
                                                                 "a few times, then doubles (tcp_syn_linear_timeouts)")
        knob = "net.ipv4.tcp_syn_linear_timeouts"
        if b == lin["syn_backoff"]:
            self.decide(f"{side}.syn_backoff", "same", knob, str(n - 1))
        else:
            plan.sysctls[knob] = n - 1
            self.decide(f"{side}.syn_backoff", "set", knob, str(n - 1))

    def window(self, side: str, h: dict[str, Any], lin: dict[str, Any], plan: RolePlan) -> None:
        mss = int(h["mss"])
        if mss != lin["mss"]:
            if not MSS_RANGE[0] <= mss <= MSS_RANGE[1]:
                raise self.refuse(f"{side}.mss", f"{mss} B: the testbed's 1500-byte links carry 536 to 1460 payload bytes")
            plan.route += ["advmss", str(mss)]
            self.decide(f"{side}.mss", "set", "route advmss", str(mss))
        else:
            self.decide(f"{side}.mss", "same", "route advmss", str(mss))
        mtu = h["mtu"]
        if mtu is None:
            # The model's host sends with min(its MSS, the peer's): Linux's min(MTU − 40, the
            # peer's) unless its own MSS is the smaller.
            if mss < min(int(self.r[_peer(side)]["mss"]), lin["mtu"] - 40):
                raise self.refuse(f"{side}.stack ({h['profile']})", f"sends with the MSS it announces ({mss} B): Linux "
                                                                     "sends the peer's MSS, at most its MTU less 40 B "
                                                                     "(tcp_sync_mss)")
            self.decide(f"{side}.mtu", "same", "route mtu", str(lin["mtu"]), "it sends with the peer's MSS either way")
        elif mtu != lin["mtu"]:
            if not MSS_RANGE[0] + 40 <= mtu <= MSS_RANGE[1] + 40:
                raise self.refuse(f"{side}.mtu", f"{mtu} B: the testbed's links carry 576 to 1500-byte packets")
            plan.route += ["mtu", str(mtu)]
            self.decide(f"{side}.mtu", "set", "route mtu", str(mtu))
        else:
            self.decide(f"{side}.mtu", "same", "route mtu", str(mtu))
        iw = h["initial_window"]
        segs = self.initial_window_segments(h)
        if iw == "rfc3390" and min(4 * mss, max(2 * mss, 4380)) % mss:
            raise self.refuse(f"{side}.initial_window", f"RFC 3390's window at MSS {mss} is not whole segments: "
                                                        "route initcwnd counts segments")
        initcwnd = knobs.knob("initial_window", "route_metric")
        if not initcwnd.takes(segs, kernel_hz()):
            lo, hi = initcwnd.limits(kernel_hz())
            raise self.refuse(f"{side}.initial_window", f"{segs} segments is outside {initcwnd.limit} ({lo:g}-{hi:g})")
        if iw == lin["initial_window"]:
            self.decide(f"{side}.initial_window", "same", "route initcwnd", str(segs))
        else:
            plan.route += ["initcwnd", str(segs)]
            self.decide(f"{side}.initial_window", "set", "route initcwnd", str(segs))
        # Always on the route: the machine's default is BBR, and a namespace may set as its
        # default only the root's "allowed" algorithms (EPERM for cubic); a route's congctl
        # applies to every connection through it, active and passive.
        cc = h["congestion_control"]
        plan.route += ["congctl", cc]
        self.decide(f"{side}.congestion_control", "set", "route congctl", cc)
        if h["hystart"] != lin["hystart"] and cc == "cubic" and self.segments_sent(side) > segs:
            raise self.refuse(f"{side}.hystart", "HyStart is a host-wide module parameter of tcp_cubic (not per "
                                                 "namespace): the testbed does not change it")
        self.decide(f"{side}.hystart", "same" if h["hystart"] == lin["hystart"] or cc != "cubic" else "no effect",
                    "tcp_cubic.hystart", json.dumps(h["hystart"]))
        # Linux recovers with PRR (tcp_cwnd_reduction), with SACK or, without it, counting
        # duplicate ACKs as SACKs (tcp_add_reno_sack); it has no other recovery to choose.
        rec, knob = h["recovery"], "tcp_cwnd_reduction"
        if rec == "prr":
            self.decide(f"{side}.recovery", "same", knob, rec)
        elif self.data_loss(side):
            raise self.refuse(f"{side}.recovery", f"{rec!r}: Linux recovers with 'prr' (PRR), with or without SACK; "
                                                  "it has no other recovery to choose")
        else:
            self.decide(f"{side}.recovery", "no effect", knob, rec, "no data loss in this scenario")
        # The receiver: Linux's buffer and first window, or the model's fixed window.
        lr, window = h["linux_receiver"], int(h["receive_window"])
        self.decide(f"{side}.linux_receiver", "same" if lr == lin["linux_receiver"] else "set" if lr else "model only",
                    "net.ipv4.tcp_rmem", why="" if lr else "the model's fixed window and ACK policy instead of Linux's receiver")
        if lr is None:
            if self.r["workload"]["request" if side == "server" else "response"] > window:
                raise self.refuse(f"{side}.stack ({h['profile']})", f"a fixed {window} B receive window: Linux's receiver "
                                                                     "autotunes its window (tcp_rmem, tcp_moderate_rcvbuf)")
            self.decide(f"{side}.receive_window", "no effect", "net.ipv4.tcp_rmem", f"{window}B",
                        "the data it receives fits in the window either way")
            return
        if lr == lin["linux_receiver"]:
            self.decide(f"{side}.receive_window", "same", "net.ipv4.tcp_rmem", " ".join(map(str, lr["rmem"])))
            return
        if not 1024 <= window <= 64 * 1024**2:
            raise self.refuse(f"{side}.receive_window", f"{window} B: Linux takes a receive buffer of 1 KiB to 64 MiB here")
        if lr["core_rmem_max"] != lin["linux_receiver"]["core_rmem_max"] or lr["moderate_rcvbuf"] != lin["linux_receiver"]["moderate_rcvbuf"]:
            raise self.refuse(f"{side}.receive_window", "net.core.rmem_max and tcp_moderate_rcvbuf stay the kernel's")
        # With tcp_adv_win_scale 1 Linux offers half its receive buffer as window.
        plan.sysctls["net.ipv4.tcp_rmem"] = " ".join(map(str, lr["rmem"]))
        self.decide(f"{side}.receive_window", "set", "net.ipv4.tcp_rmem", " ".join(map(str, lr["rmem"])))
        if lr["init_rcv_wnd"] is not None:
            plan.route += ["initrwnd", str(lr["init_rcv_wnd"])]
            self.decide(f"{side}.receive_window", "set", "route initrwnd", str(lr["init_rcv_wnd"]))

    def ack(self, side: str, h: dict[str, Any], lin: dict[str, Any], plan: RolePlan) -> None:
        d = h["ack"]["delayed"]
        key = f"{side}.ack.delayed"
        if d == "off":
            plan.route += ["quickack", "1"]
            self.decide(key, "set", "route quickack", "1")
        elif d == lin["ack"]["delayed"]:
            self.decide(key, "same", "TCP_ATO_MIN", _ms(d["timer"]))
        elif self.segments_sent(_peer(side)) <= 1:
            self.decide(key, "no effect", "", json.dumps(d), f"the {side} receives one segment per connection")
        elif "tick" in d:
            raise self.refuse(f"{side}.delayed_ack", "\"bsd_tick\": Linux's delayed ACK is a per-connection timer, never a tick since boot")
        else:
            raise self.refuse(f"{side}.delayed_ack_timeout", f"{_ms(d['timer'])}: Linux's delayed-ACK timer adapts from "
                                                             "40ms (TCP_ATO_MIN, tcp_event_data_recv); no knob fixes it")


def _kernel() -> tuple[int, ...]:
    """This machine's kernel version (major, minor) from its release string."""
    release = platform.release().split("-", 1)[0].split(".")
    return tuple(int(x) for x in release[:2] if x.isdigit())


def _rack_always() -> bool:
    """Whether net.ipv4.tcp_recovery = 0 no longer turns RACK off: measured on Linux 6.18
    (20 ms RTT, the 7th of 8 segments lost, TLP off: with tcp_recovery = 0 the kernel
    completed in 0.071 s with one fast recovery and no RTO, as with it at 1, 0.073 s; without
    RACK the RFC 6675 rule, one segment SACKed after the hole, waits for the RTO: 0.284 s in
    the simulator). Kernels before 6.18 are taken to honour it, as they did."""
    return _kernel() >= (6, 18)


def _peer(side: str) -> str:
    return "server" if side == "client" else "client"


def realize(s: Resolved) -> LinuxPlan:
    """The plan realising `s` on this kernel, or `RealizeError` naming the field Linux
    cannot set and why."""
    return _Realizer(s).run()
