"""What `shortflow tune apply` is asked to set, the per-prefix file, and the safety rules
that refuse (without --force) values that would hurt the connections they touch."""

from __future__ import annotations

import ipaddress
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from shortflow.exceptions import TuneError
from shortflow.host import knobs
from shortflow.host.knobs import knob
from shortflow.tune import files
from shortflow.units import parse_duration

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

#: The BPF program's configuration holds counts in 32-bit fields (bpf/tune.bpf.c).
U32_MAX = 2**32 - 1
#: More than this initial window is refused without --force: RFC 6928 stops at 10 segments
#: and a first flight of hundreds of segments overflows ordinary queues.
IW_SAFE_MAX = 100


@dataclass(frozen=True)
class PrefixRule:
    """A destination prefix's own initial window and SYN RTO (None: the global value)."""

    network: Network
    iw: int | None = None
    syn_rto_s: float | None = None


@dataclass
class TuneSettings:
    syn_rto_s: float | None = None
    iw: int | None = None
    rto_min_s: float | None = None
    delack_max_s: float | None = None
    quickack: bool = False
    slow_start_after_idle: bool | None = None
    sfr_factor: float | None = None
    sfr_cutout_bytes: int = 65536
    port: int | None = None
    cgroup: Path | None = None
    prefixes: list[PrefixRule] = field(default_factory=list)
    #: `--set NAME=VALUE`: sysctls of the kernel table by their name, each a count or seconds.
    sysctls: dict[str, float] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["cgroup"] = str(self.cgroup) if self.cgroup else None
        d["prefixes"] = [{"network": str(p.network), "iw": p.iw, "syn_rto_s": p.syn_rto_s} for p in self.prefixes]
        return d

    @property
    def needs_bpf(self) -> bool:
        return any(v is not None for v in (self.syn_rto_s, self.delack_max_s, self.sfr_factor)) or bool(self.prefixes) \
            or self.port is not None or self.cgroup is not None

    def empty(self) -> bool:
        return not self.needs_bpf and self.iw is None and self.rto_min_s is None and not self.quickack \
            and self.slow_start_after_idle is None and not self.sysctls


#: Encodings of a time: `--set` reads their value as a duration (`60s`, `500ms`).
TIME_ENCODINGS = ("milliseconds", "microseconds", "jiffies")


def settable_sysctls() -> list[knobs.Knob]:
    """The kernel table's sysctls with a range: what `--set NAME=VALUE` takes."""
    return [k for k in knobs.knobs() if k.set_by == "sysctl" and k.bounded]


def parse_set(item: str) -> tuple[str, float]:
    """`NAME=VALUE` of `--set`: a settable sysctl's name and its value (seconds for a time,
    else a whole count). TuneError names what was wrong."""
    name, eq, text = item.partition("=")
    rows = {k.name: k for k in settable_sysctls()}
    if not eq or name not in rows:
        raise TuneError(f"--set {item!r}: expected NAME=VALUE with NAME one of {', '.join(sorted(rows))}")
    row = rows[name]
    if row.encoding in TIME_ENCODINGS:
        try:
            return name, parse_duration(text, what=f"--set {name}")
        except ValueError as e:
            raise TuneError(str(e)) from None
    if not (text.isascii() and text.isdigit()):
        raise TuneError(f"--set {name}={text}: expected a whole number ({row.knob})")
    return name, int(text)


def load_prefixes(path: Path) -> list[PrefixRule]:
    """Reads a prefix file: one TOML key per prefix, ``"10.0.0.0/8" = { iw = 10, syn_rto = "200ms" }``.
    Errors name the file and the prefix."""
    try:
        raw = files.read_text(path, files.PREFIXES_CAP, "prefix file")
    except FileNotFoundError:
        raise TuneError(f"{path}: cannot read: no such file") from None
    try:
        doc = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as e:
        raise TuneError(f"{path}: not valid TOML: {e}") from None
    except RecursionError:
        raise TuneError(f"{path}: not a prefix file: arrays or tables nested too deeply to read") from None
    rules = []
    for key, value in doc.items():
        try:
            net = ipaddress.ip_network(key, strict=True)
        except ValueError as e:
            raise TuneError(f"{path}: {key!r}: not a prefix like \"10.0.0.0/8\" or \"2001:db8::/32\" ({e})") from None
        if not isinstance(value, dict) or not value or set(value) - {"iw", "syn_rto"}:
            raise TuneError(f"{path}: {key}: expected {{ iw = N, syn_rto = \"200ms\" }} (one or both)")
        iw = value.get("iw")
        if iw is not None and (not isinstance(iw, int) or isinstance(iw, bool) or iw < 1):
            raise TuneError(f"{path}: {key}.iw: expected a number of segments >= 1, found {iw!r}")
        rto = value.get("syn_rto")
        try:
            syn_rto = parse_duration(rto, what=f"{key}.syn_rto") if isinstance(rto, str) else None
        except ValueError as e:
            raise TuneError(f"{path}: {e}") from None
        if rto is not None and syn_rto is None:
            raise TuneError(f"{path}: {key}.syn_rto: write it as a string with its unit, e.g. \"200ms\"")
        rules.append(PrefixRule(net, iw, syn_rto))
    return rules


def hard_limits(s: TuneSettings, hz: int) -> None:
    """Values the kernel cannot take at all: refused even with --force. The ranges are the
    kernel table's (`shortflow.host.knobs`), at this kernel's HZ."""
    jiffy = 1.0 / hz
    syn_rto = knob("syn_rto", "bpf_field")
    if s.syn_rto_s is not None and s.syn_rto_s < syn_rto.limits(hz)[0]:
        raise TuneError(f"--syn-rto {s.syn_rto_s * 1000:g}ms is below one jiffy ({jiffy * 1000:g} ms at HZ {hz})")
    for label, rto in [("--syn-rto", s.syn_rto_s)] + [(f"{p.network}: syn_rto", p.syn_rto_s) for p in s.prefixes]:
        if rto is not None and rto > syn_rto.limits(hz)[1]:
            raise TuneError(f"{label} {rto:g}s: the kernel caps retransmission timers at TCP_RTO_MAX "
                            f"({syn_rto.limits(hz)[1]:g} s) and would silently use that")
    iw = knob("initial_window", "bpf_field")
    if s.iw is not None and not iw.takes(s.iw, hz):
        raise TuneError(f"--iw {s.iw}: the kernel's congestion window is {iw.limit} "
                        f"({iw.limits(hz)[0]:g} to {iw.limits(hz)[1]:.0f})")
    if s.sfr_factor is not None and not 0 <= s.sfr_cutout_bytes <= U32_MAX:
        raise TuneError(f"--sfr-cutout {s.sfr_cutout_bytes}B: at most {U32_MAX}B (a 32-bit field)")
    for flag, name, v in (("--rto-min", "rto_min", s.rto_min_s), ("--delack-max", "delack_max", s.delack_max_s)):
        k = knob(name, "bpf_field")
        if v is not None and not k.takes(v, hz):
            lo, hi = k.limits(hz)
            raise TuneError(f"{flag} {v * 1000:g}ms: the kernel takes {lo * 1000:g} ms to {hi * 1000:g} ms here "
                            f"({k.limit})")
    for p in s.prefixes:
        if p.syn_rto_s is not None and p.syn_rto_s < jiffy:
            raise TuneError(f"{p.network}: syn_rto {p.syn_rto_s * 1000:g}ms is below one jiffy")
        if p.iw is not None and p.iw > iw.limits(hz)[1]:
            raise TuneError(f"{p.network}: iw {p.iw} is above {iw.limits(hz)[1]:.0f} ({iw.limit})")
    for name, v in s.sysctls.items():
        k = knob(name, "sysctl")
        if not k.takes(v, hz):
            lo, hi = k.limits(hz)
            shown = f"{v:g}s" if k.encoding in TIME_ENCODINGS else f"{v:g}"
            raise TuneError(f"--set {name}={shown}: {k.knob} takes {k.encode(lo, hz)} to {k.encode(hi, hz)} ({k.limit})")
    if s.port is not None and not 1 <= s.port <= 65535:
        raise TuneError(f"--scope port={s.port}: not a TCP port")
    if s.sfr_factor is not None and not 1.0 <= s.sfr_factor <= 100:
        raise TuneError(f"--sfr-factor {s.sfr_factor:g}: expected 1 to 100 (the minimum RTO is RTT x factor)")


def unsafe(s: TuneSettings, rtts: dict[str, float]) -> list[str]:
    """Reasons the settings could hurt connections, given the RTTs measured to destinations
    (address → seconds): a SYN RTO or minimum RTO below a measured RTT resends SYNs or data
    that are not lost; a huge initial window floods queues."""
    why = []
    worst = max(rtts.items(), key=lambda kv: kv[1], default=None)
    if worst and s.syn_rto_s is not None and s.syn_rto_s < worst[1]:
        why.append(f"--syn-rto {s.syn_rto_s * 1000:g}ms is below the RTT measured to {worst[0]} "
                   f"({worst[1] * 1000:.1f} ms): every SYN to it would be sent twice")
    if worst and s.rto_min_s is not None and s.rto_min_s < worst[1]:
        why.append(f"--rto-min {s.rto_min_s * 1000:g}ms is below the RTT measured to {worst[0]} "
                   f"({worst[1] * 1000:.1f} ms): spurious timeouts")
    for p in s.prefixes:
        inside = {a: r for a, r in rtts.items() if ipaddress.ip_address(a) in p.network}
        far = max(inside.items(), key=lambda kv: kv[1], default=None)
        if far and p.syn_rto_s is not None and p.syn_rto_s < far[1]:
            why.append(f"{p.network}: syn_rto {p.syn_rto_s * 1000:g}ms is below the RTT measured to {far[0]} "
                       f"({far[1] * 1000:.1f} ms)")
    for label, iw in [("--iw", s.iw)] + [(str(p.network), p.iw) for p in s.prefixes]:
        if iw is not None and iw > IW_SAFE_MAX:
            why.append(f"{label} {iw}: more than {IW_SAFE_MAX} segments in the first flight overflows ordinary queues")
    return why
