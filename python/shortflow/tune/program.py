"""The tuner's settings as its BPF program's configuration. Loading, pinning, attaching and
the maps' layout are the host layer's (`shortflow.host.bpf`); what this adds is the
translation from `TuneSettings` and `PrefixRule`s, and errors as `TuneError`.

The pins live in `/sys/fs/bpf/sf-<id>-tune/` (bpffs is mounted there when absent, and
unmounted again on revert), named like every object the project creates so that
`shortflow testbed clean` and the test suite's leftover check can find them.
"""

from __future__ import annotations

import os
from pathlib import Path

from shortflow.exceptions import TuneError
from shortflow.host import HostError, bpf, knobs
from shortflow.host.bpf import BPF_FS, COUNTERS, REFUSED, needs_bpffs, unpin
from shortflow.host.commands import raising
from shortflow.tune.settings import PrefixRule, TuneSettings

#: TCP_RTO_MIN: where Super Fast Retransmit's minimum RTO goes back to after the cut-out.
DEFAULT_RTO_MIN_US = round(knobs.seconds("TCP_RTO_MIN") * 1e6)


def compile_program(build_dir: Path | None = None) -> Path:
    try:
        return bpf.program_object(build_dir)
    except HostError as e:
        raise TuneError(f"{e}; without BPF use --fallback routes") from None


ensure_bpffs = raising(TuneError, bpf.ensure_bpffs)
load = raising(TuneError, bpf.load)
prog_id = raising(TuneError, bpf.prog_id)
attach = raising(TuneError, bpf.attach)
attach_held = raising(TuneError, bpf.attach_held)
detach = raising(TuneError, bpf.detach)
counters = raising(TuneError, bpf.counters)
last_errors = raising(TuneError, bpf.last_errors)


def _field(name: str, v: float | None, hz: int) -> int:
    """A setting as its BPF field holds it (the kernel table's encoding); 0: not set."""
    return int(knobs.knob(name, "bpf_field").encode(v, hz)) if v is not None else 0


def config_of(s: TuneSettings, hz: int) -> bpf.Config:
    return bpf.Config(
        syn_rto_jiffies=_field("syn_rto", s.syn_rto_s, hz),
        iw_segments=_field("initial_window", s.iw, hz),
        rto_min_us=_field("rto_min", s.rto_min_s, hz),
        delack_max_us=_field("delack_max", s.delack_max_s, hz),
        sfr_factor_pct=round(s.sfr_factor * 100) if s.sfr_factor is not None else 0,
        sfr_cutout_bytes=s.sfr_cutout_bytes if s.sfr_factor is not None else 0,
        sfr_restore_us=_field("rto_min", s.rto_min_s, hz) or DEFAULT_RTO_MIN_US,
        port=s.port or 0,
        # TCP_TIMEOUT_MIN: the smallest minimum RTO bpf_setsockopt takes, rounded up to a µs.
        timer_min_us=-(-knobs.constant("TCP_TIMEOUT_MIN_jiffies") * 1_000_000 // hz),
    )


def write_config(pin_dir: Path, s: TuneSettings, hz: int) -> None:
    raising(TuneError, bpf.write_config)(pin_dir, config_of(s, hz))


def write_prefixes(pin_dir: Path, rules: list[PrefixRule], hz: int) -> None:
    """Makes the program's prefix tries hold exactly `rules`."""
    raising(TuneError, bpf.write_prefixes)(pin_dir, {
        r.network: bpf.PrefixValue(r.iw or 0, round(r.syn_rto_s * hz) if r.syn_rto_s is not None else 0)
        for r in rules
    })


__all__ = ["BPF_FS", "COUNTERS", "DEFAULT_RTO_MIN_US", "REFUSED", "attach", "attach_held", "compile_program", "config_of", "counters",
           "detach", "ensure_bpffs", "last_errors", "load", "needs_bpffs", "prog_id", "unpin", "write_config",
           "write_prefixes"]


#: Why the kernel refuses a knob (bpf_sol_tcp_setsockopt(), net/core/filter.c), by errno.
_REFUSAL_CAUSES = {
    "iw_refused": {22: "EINVAL: TCP_BPF_IW is taken only before the connection sent data (a TCP Fast Open SYN "
                       "carrying data counts) and only for a window >= 1"},
    "rto_min_refused": {22: "EINVAL: outside TCP_TIMEOUT_MIN (2 jiffies) to TCP_RTO_MIN (200 ms)"},
    "delack_max_refused": {22: "EINVAL: outside TCP_TIMEOUT_MIN (2 jiffies) to TCP_DELACK_MAX (200 ms)"},
}


def refusals(counters: dict[str, int] | None, last_errors: dict[str, int]) -> list[str]:
    """`setsockopt_errors` explained: per knob, how often the kernel refused it, the last
    errno and what it means; the connections concerned kept the kernel's own value."""
    out = []
    for key, knob in REFUSED.items():
        n = (counters or {}).get(key, 0)
        if not n:
            continue
        errno_ = -last_errors.get(key, 0)
        cause = _REFUSAL_CAUSES[key].get(errno_, f"errno {errno_} ({os.strerror(errno_) if errno_ else 'unknown'})")
        out.append(f"the kernel refused {knob} {n} times (last: {cause}); those connections kept the kernel's own value")
    return out
