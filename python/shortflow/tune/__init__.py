"""`shortflow tune`: start-up settings for the connections of a cgroup (SYN RTO, initial
window, minimum RTO, delayed-ACK maximum, per destination prefix, Super Fast Retransmit),
set by a BPF sock_ops program (`bpf/tune.bpf.c`), with route-metric and sysctl fallbacks,
and a state file from which `revert` restores exactly what was there before.

Python API: `apply(settings)`, `reload_prefixes(rules)`, `status()`, `revert()`.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shortflow.exceptions import PrivilegeError, TuneError
from shortflow.testbed.names import RunNames
from shortflow.testbed.synrto import cgroup2_root, kernel_hz
from shortflow.testbed.system import run
from shortflow.tune import program, routes, selfcheck
from shortflow.tune.settings import PrefixRule, TuneSettings, hard_limits, load_prefixes, unsafe

__all__ = ["DEFAULT_STATE", "Plan", "PrefixRule", "TuneSettings", "apply", "load_prefixes", "plan",
           "reload_prefixes", "revert", "status"]

DEFAULT_STATE = Path("/run/shortflow/tune-state.json")


@dataclass
class Plan:
    """What `apply` will do: the BPF part (None: nothing for BPF) and the route/sysctl
    changes, each with the value it replaces."""

    settings: TuneSettings
    cgroup: Path | None
    changes: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: What the settings will not do although asked (printed by apply, kept in the state).
    notices: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = []
        s = self.settings
        if self.cgroup is not None:
            what = [f"{k}={v}" for k, v in (("syn_rto", _ms(s.syn_rto_s)), ("iw", s.iw), ("rto_min", _ms(s.rto_min_s)),
                                            ("delack_max", _ms(s.delack_max_s)), ("sfr_factor", s.sfr_factor),
                                            ("port", s.port)) if v is not None]
            out.append(f"attach BPF sock_ops `tune` to cgroup {self.cgroup}: {', '.join(what) or 'counters only'}")
            out += [f"  prefix {p.network}: iw={p.iw} syn_rto={_ms(p.syn_rto_s)}" for p in s.prefixes]
        for c in self.changes:
            where = c.get("key") or f"ip {c.get('family')} route"
            out.append(f"{c['kind']} {where}: {c['before']!r} -> {c['after']!r}")
        return out


def _ms(v: float | None) -> str | None:
    return None if v is None else f"{v * 1000:g}ms"


def _require_root() -> None:
    if os.geteuid() != 0:
        raise PrivilegeError("shortflow tune needs root (BPF, cgroups, routes, sysctls): run it with sudo or as root")


def measured_rtts() -> dict[str, float]:
    """Smoothed RTTs (seconds) of this namespace's established connections, by peer
    address (`ss -tin`): what a SYN RTO or minimum RTO must stay above."""
    out = run(["ss", "-H", "-tin", "state", "established"], check=False).stdout
    rtts: dict[str, float] = {}
    peer = None
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 4 and not line.startswith((" ", "\t")):
            peer = fields[-1].rsplit(":", 1)[0].strip("[]")
            continue
        m = re.search(r"\brtt:([0-9.]+)/", line)
        if m and peer:
            rtts[peer] = max(rtts.get(peer, 0.0), float(m.group(1)) / 1000)
    return rtts


def scope_refusals(s: TuneSettings) -> list[str]:
    """Knobs that cannot honour a --scope: they act on the whole network namespace."""
    if s.cgroup is None and s.port is None:
        return []
    scope = ", ".join(x for x in (f"cgroup={s.cgroup}" if s.cgroup else "", f"port={s.port}" if s.port else "") if x)
    why = []
    if s.quickack:
        why.append(f"--quickack cannot honour --scope {scope}: it is the default routes' `quickack` metric, "
                   "for every connection of this network namespace through them (sock_ops has no lasting quick-ACK "
                   "knob); for the scope's connections use --delack-max 8ms instead")
    if s.slow_start_after_idle is not None:
        why.append(f"--slow-start-after-idle cannot honour --scope {scope}: it is the sysctl "
                   f"{routes.SLOW_START_AFTER_IDLE}, for every connection of this network namespace")
    return why


def notices(s: TuneSettings, default_routes: list[tuple[str, str]] | None = None, congestion_control: str = "") -> list[str]:
    """What the settings will not do although asked, measured on this kernel (README)."""
    out = []
    if s.quickack:
        reach = ", ".join(line for _, line in default_routes or []) or "none"
        out.append("--quickack reaches only peers through the default routes (" + reach + "); "
                   "connections on other routes keep delayed ACKs")
    if s.slow_start_after_idle is not None and congestion_control == "bbr":
        out.append("--slow-start-after-idle: this namespace's congestion control is bbr, which keeps its window "
                   "after idle either way; the sysctl changes only CUBIC/Reno connections")
    if s.sfr_factor is not None and s.sfr_factor > 2:
        out.append(f"--sfr-factor {s.sfr_factor:g}: a connection whose destination has no RTT remembered yet, "
                   "and every answering (passive) connection, starts from Linux's first-sample rule, "
                   "minimum RTO = 2 x handshake RTT (the kernel offers no per-peer floor before that sample)")
    return out


def _congestion_control() -> str:
    try:
        return Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
    except OSError:
        return ""


def plan(s: TuneSettings, *, fallback_routes: bool = False, force: bool = False) -> Plan:
    """Checks `s` and says what applying it changes; raises TuneError for a refused value."""
    hard_limits(s, kernel_hz())
    refused = scope_refusals(s)
    if refused:
        raise TuneError("refused: " + "; ".join(refused))
    why = unsafe(s, measured_rtts())
    if why and not force:
        raise TuneError("refused (use --force to apply anyway): " + "; ".join(why))
    told = notices(s, routes.default_routes() if s.quickack else None, _congestion_control())
    if fallback_routes:
        if s.needs_bpf:
            raise TuneError("--fallback routes can set only --iw, --rto-min, --quickack and "
                            "--slow-start-after-idle (no SYN RTO, delayed-ACK maximum, prefixes, scopes or SFR)")
        return Plan(s, None, routes.plan(s, with_iw_and_rto=True), why, told)
    if not (s.needs_bpf or s.iw is not None or s.rto_min_s is not None):
        # Only quick-ACK and slow start after idle: routes and sysctls, no program.
        return Plan(s, None, routes.plan(s, with_iw_and_rto=False), why, told)
    cgroup = s.cgroup or cgroup2_root()
    if not cgroup.is_dir():
        raise TuneError(f"--scope cgroup={cgroup}: no such cgroup v2 directory")
    # quickack and slow start after idle have no sock_ops knob: routes and sysctls do them.
    return Plan(s, cgroup, routes.plan(s, with_iw_and_rto=False), why, told)


def apply(s: TuneSettings, *, state_path: Path = DEFAULT_STATE, fallback_routes: bool = False,
          force: bool = False) -> dict[str, Any]:
    """Applies `s` and writes the state file; on any failure undoes what it did."""
    _require_root()
    if state_path.exists():
        raise TuneError(f"already applied ({state_path}): `shortflow tune revert` first, "
                        "or `shortflow tune reload --iw-map FILE` to change the prefixes")
    p = plan(s, fallback_routes=fallback_routes, force=force)
    # A run id like the testbed's (`sf-<id>-tune` pins): `testbed clean` and the test
    # suite's leftover check recognise it, and it honours $SHORTFLOW_RUN_ID_PREFIX.
    state: dict[str, Any] = {"id": RunNames.fresh().run_id, "applied": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                             "settings": s.as_json(), "changes": [], "bpf": None, "notices": p.notices}
    try:
        if p.cgroup is not None:
            state["bpf"] = _apply_bpf(s, p.cgroup, state["id"], force)
        for change in p.changes:
            routes.apply(change)
            state["changes"].append(change)
    except BaseException:
        _undo(state)
        raise
    state_path.parent.mkdir(parents=True, exist_ok=True)
    state_path.write_text(json.dumps(state, indent=1) + "\n")
    return state


def _apply_bpf(s: TuneSettings, cgroup: Path, run_id: str, force: bool = False) -> dict[str, Any]:
    hz = kernel_hz()
    obj = program.compile_program()
    mounted = program.ensure_bpffs()
    pin_dir = program.BPF_FS / f"sf-{run_id}-tune"
    bpf: dict[str, Any] = {"cgroup": str(cgroup), "pin_dir": str(pin_dir), "mounted_bpffs": mounted, "prog_id": None,
                           "hz": hz}
    try:
        bpf["prog_id"] = program.load(obj, pin_dir)
        program.write_config(pin_dir, s, hz)
        program.write_prefixes(pin_dir, s.prefixes, hz)
        # Before the scope sees it: does the kernel take every knob for one connection?
        refused = selfcheck.check(pin_dir, run_id, s.port)
        if refused and not force:
            raise TuneError("the kernel refused settings for a test connection (use --force to apply anyway): "
                            + "; ".join(refused))
        bpf["selfcheck_refusals"] = refused
        program.attach(cgroup, pin_dir)
        bpf["attached"] = True
    except BaseException:
        _undo_bpf(bpf)
        raise
    finally:
        obj.unlink(missing_ok=True)
        obj.parent.rmdir()
    return bpf


def _undo_bpf(bpf: dict[str, Any]) -> None:
    if bpf.get("prog_id") is not None:
        program.detach(Path(bpf["cgroup"]), int(bpf["prog_id"]))
    program.unpin(Path(bpf["pin_dir"]))
    if bpf.get("mounted_bpffs") and not any(program.BPF_FS.iterdir()):
        run(["umount", str(program.BPF_FS)], check=False)


def _undo(state: dict[str, Any]) -> list[str]:
    """Undoes a state's changes, last first; returns what it did."""
    done = []
    for change in reversed(state.get("changes", [])):
        routes.undo(change)
        done.append(f"{change['kind']} back to {change['before']!r}")
    if state.get("bpf"):
        _undo_bpf(state["bpf"])
        done.append(f"BPF program {state['bpf'].get('prog_id')} detached from {state['bpf']['cgroup']} and unpinned")
    return done


def _read_state(state_path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(state_path.read_text())
    except FileNotFoundError:
        raise TuneError(f"nothing applied ({state_path} does not exist)") from None
    except (OSError, json.JSONDecodeError) as e:
        raise TuneError(f"{state_path}: unreadable state file: {e}") from None
    return data


def revert(*, state_path: Path = DEFAULT_STATE) -> list[str]:
    """Restores exactly what `apply` changed and removes the state file."""
    _require_root()
    done = _undo(_read_state(state_path))
    state_path.unlink()
    return done


def reload_prefixes(rules: list[PrefixRule], *, state_path: Path = DEFAULT_STATE, force: bool = False) -> int:
    """Replaces the per-prefix settings of the attached program without detaching it;
    returns the number of prefixes now held."""
    _require_root()
    state = _read_state(state_path)
    if not state.get("bpf"):
        raise TuneError("the applied settings use no BPF program (--fallback routes): nothing to reload")
    settings = TuneSettings(prefixes=rules)
    hard_limits(settings, int(state["bpf"]["hz"]))
    why = unsafe(settings, measured_rtts())
    if why and not force:
        raise TuneError("refused (use --force to apply anyway): " + "; ".join(why))
    program.write_prefixes(Path(state["bpf"]["pin_dir"]), rules, int(state["bpf"]["hz"]))
    state["settings"]["prefixes"] = TuneSettings(prefixes=rules).as_json()["prefixes"]
    state_path.write_text(json.dumps(state, indent=1) + "\n")
    return len(rules)


def status(*, state_path: Path = DEFAULT_STATE) -> dict[str, Any]:
    """The state file, whether the program is still attached, and its counters."""
    state = _read_state(state_path)
    bpf = state.get("bpf")
    if bpf:
        cgroup = Path(bpf["cgroup"])
        shown = run(["bpftool", "-j", "cgroup", "show", str(cgroup)], check=False).stdout.replace(" ", "")
        bpf["still_attached"] = f'"id":{bpf["prog_id"]},' in shown
        pins = Path(bpf["pin_dir"])
        bpf["counters"] = program.counters(pins) if pins.exists() else None
        bpf["refusals"] = refusals(bpf["counters"], program.last_errors(pins)) if pins.exists() else []
    return state


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
    for key, knob in program.REFUSED.items():
        n = (counters or {}).get(key, 0)
        if not n:
            continue
        errno_ = -last_errors.get(key, 0)
        cause = _REFUSAL_CAUSES[key].get(errno_, f"errno {errno_} ({os.strerror(errno_) if errno_ else 'unknown'})")
        out.append(f"the kernel refused {knob} {n} times (last: {cause}); those connections kept the kernel's own value")
    return out
