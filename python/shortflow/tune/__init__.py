"""`shortflow tune`: start-up settings for the connections of a cgroup (SYN RTO, initial
window, minimum RTO, delayed-ACK maximum, per destination prefix, Super Fast Retransmit),
set by a BPF sock_ops program (`bpf/tune.bpf.c`), with route-metric and sysctl fallbacks,
and a write-ahead journal (the state file, `journal.py`) from which `revert` restores
exactly what was there before — also after an apply killed halfway (`undo.py`).

One apply or revert at a time per host: each holds the lock `/run/shortflow/tune.lock`
while it runs (the kernel drops it however the process ends). `status` never waits for it
and never rolls back an apply that holds it: it says "apply in progress" with the pid.

Python API: `apply(settings)`, `reload_prefixes(rules)`, `status()`, `revert()`,
`revert(orphans=True)` (no state file needed: `orphans.py`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shortflow.exceptions import TuneError
from shortflow.host import cgroup2_root, kernel_hz, knobs, require_root, sockets, sysctl
from shortflow.host.kernel import cgroup2_mounts
from shortflow.host.records import TUNE_LOCK, HostLock, lock_holder
from shortflow.host.runid import fresh_run_id
from shortflow.tune import journal, orphans, program, routes, selfcheck
from shortflow.tune.program import refusals
from shortflow.tune.settings import PrefixRule, TuneSettings, hard_limits, load_prefixes, unsafe
from shortflow.tune.undo import rollback

__all__ = ["DEFAULT_STATE", "Plan", "PrefixRule", "TuneSettings", "apply", "load_prefixes", "plan",
           "reload_prefixes", "revert", "status"]

DEFAULT_STATE = Path("/run/shortflow/tune-state.json")
#: The host's lock for apply, reload and revert (`shortflow.host.records.HostLock`).
LOCK = TUNE_LOCK
#: How long apply, reload and revert wait for the lock: a `status` holds it for the moment
#: it takes to look; another apply is not waited for.
LOCK_WAIT_S = 3.0


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
            # Each knob beside the kernel's own value, which the connections in scope had
            # (a route's initcwnd or rto_min metric, where one is set, comes before it).
            what = [f"{name} {now} -> {new}" for name, new, now in (
                ("syn_rto", _ms(s.syn_rto_s), _ms(knobs.seconds("TCP_TIMEOUT_INIT"))),
                ("iw", s.iw, knobs.constant("TCP_INIT_CWND")),
                ("rto_min", _ms(s.rto_min_s), _ms(knobs.seconds("TCP_RTO_MIN"))),
                ("delack_max", _ms(s.delack_max_s), _ms(knobs.seconds("TCP_DELACK_MAX"))),
                ("sfr_factor", s.sfr_factor, "off")) if new is not None]
            port = f", port {s.port} only" if s.port is not None else ""
            out.append(f"attach BPF sock_ops `tune` to cgroup {self.cgroup}{port} (kernel's value -> new): "
                       f"{', '.join(what) or 'counters only'}")
            init = (knobs.constant("TCP_INIT_CWND"), _ms(knobs.seconds("TCP_TIMEOUT_INIT")))
            out += [f"  prefix {p.network}: iw {init[0]} -> {p.iw or s.iw or init[0]}, "
                    f"syn_rto {init[1]} -> {_ms(p.syn_rto_s or s.syn_rto_s) or init[1]}" for p in s.prefixes]
        for c in self.changes:
            where = c.get("key") or f"ip {c.get('family')} route"
            out.append(f"{c['kind']} {where}: {routes.shown(c, 'before')!r} -> {routes.shown(c, 'after')!r}")
        return out


def _ms(v: float | None) -> str | None:
    return None if v is None else f"{v * 1000:g}ms"


def _require_root() -> None:
    require_root("shortflow tune", "BPF, cgroups, routes, sysctls")


def measured_rtts() -> dict[str, float]:
    """Smoothed RTTs (seconds) of this namespace's established connections, by peer
    address: what a SYN RTO or minimum RTO must stay above."""
    return sockets.rtts_by_peer()


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
    for name in s.sysctls:
        why.append(f"--set {name} cannot honour --scope {scope}: it is the sysctl "
                   f"{knobs.knob(name, 'sysctl').knob}, for every connection of this network namespace")
    return why


#: A SYN RTO below this is shorter than the round trip to most Internet peers (tens to
#: hundreds of ms); refused outright only when an RTT measured on this host says so
#: (`unsafe`), said otherwise.
SHORT_SYN_RTO_S = 0.05


def notices(s: TuneSettings, default_routes: list[routes.Route] | None = None, congestion_control: str = "") -> list[str]:
    """What the settings will not do although asked, measured on this kernel (README)."""
    out = []
    if s.quickack:
        reach = ", ".join(r.show() for r in default_routes or []) or "none"
        out.append("--quickack reaches only peers through the default routes (" + reach + "); "
                   "connections on other routes keep delayed ACKs")
    if s.slow_start_after_idle is not None and congestion_control == "bbr":
        out.append("--slow-start-after-idle: this namespace's congestion control is bbr, which keeps its window "
                   "after idle either way; the sysctl changes only CUBIC/Reno connections")
    for label, rto in [("--syn-rto", s.syn_rto_s)] + [(f"{p.network}: syn_rto", p.syn_rto_s) for p in s.prefixes]:
        if rto is not None and rto < SHORT_SYN_RTO_S:
            out.append(f"{label} {rto * 1000:g}ms is shorter than the round trip to most peers: a SYN to any "
                       f"farther than that is sent again before its SYN/ACK can return (twice the SYNs, and "
                       f"each such handshake counted as lost); no RTT measured here showed a peer that close")
    if s.sfr_factor is not None and s.sfr_factor > 2:
        out.append(f"--sfr-factor {s.sfr_factor:g}: a connection whose destination has no RTT remembered yet, "
                   "and every answering (passive) connection, starts from Linux's first-sample rule, "
                   "minimum RTO = 2 x handshake RTT (the kernel offers no per-peer floor before that sample)")
    return out


def _congestion_control() -> str:
    try:
        return sysctl.read("net.ipv4.tcp_congestion_control")
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
    real = cgroup.resolve()
    if not any(real == r or r in real.parents for r in cgroup2_mounts()):
        raise TuneError(f"--scope cgroup={cgroup}: not inside a cgroup v2 hierarchy (mounted at "
                        f"{', '.join(map(str, cgroup2_mounts())) or 'nowhere'}); BPF sock_ops programs attach to one")
    # quickack and slow start after idle have no sock_ops knob: routes and sysctls do them.
    return Plan(s, cgroup, routes.plan(s, with_iw_and_rto=False), why, told)


class Interrupted(BaseException):
    """SIGTERM or SIGHUP during apply: unwinds like Ctrl-C, so the apply rolls itself back."""


def _interruptible() -> dict[int, object]:
    def stop(signum: int, _frame: object) -> None:
        raise Interrupted(f"interrupted by {signal.Signals(signum).name}: rolled back")

    return {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}


@contextlib.contextmanager
def _locked(what: str) -> Iterator[None]:
    """Holds the host's tune lock for `what`; TuneError naming the holder's pid when
    another apply, reload or revert keeps it longer than `LOCK_WAIT_S`."""
    lock = HostLock(LOCK)
    deadline = time.monotonic() + LOCK_WAIT_S
    while (pid := lock.acquire()) is not None:
        if time.monotonic() > deadline:
            raise TuneError(f"{what}: another `shortflow tune` apply, reload or revert is in progress "
                            f"(pid {pid or 'unknown'}); wait for it to end")
        time.sleep(0.05)
    try:
        yield
    finally:
        lock.release()


def in_progress() -> int | None:
    """The pid of the apply, reload or revert running now, None when none is."""
    return lock_holder(LOCK)


def _settle(state_path: Path) -> list[str]:
    """Rolls back an interrupted apply left in `state_path` (journal without `committed`);
    returns what it did. A committed journal is left as it is. The caller holds the lock,
    so an uncommitted journal is no live apply's."""
    if not state_path.exists():
        return []
    j = _read_journal(state_path)
    if j.committed:
        return []
    out = rollback(j)
    if out.left:
        raise TuneError(f"{state_path}: an interrupted apply could not be rolled back entirely: "
                        + "; ".join(out.left))
    journal.remove(j)
    return [f"interrupted apply {j.id} rolled back"] + out.done + [f"warning: {w}" for w in out.warnings]


def apply(s: TuneSettings, *, state_path: Path = DEFAULT_STATE, fallback_routes: bool = False,
          force: bool = False, replace: bool = False) -> dict[str, Any]:
    """Applies `s`, journalling each change before making it; on any failure (Ctrl-C,
    SIGTERM and SIGHUP included) undoes what it did. An apply interrupted earlier (SIGKILL)
    is rolled back first. Returns the applied state (`status()`'s shape) with `notes`."""
    _require_root()
    with _locked("apply"):
        return _apply(s, state_path, fallback_routes, force, replace)


def _apply(s: TuneSettings, state_path: Path, fallback_routes: bool, force: bool, replace: bool) -> dict[str, Any]:
    notes = _settle(state_path)
    if state_path.exists():
        again = "" if state_path == DEFAULT_STATE else f" --state {state_path}"
        raise TuneError(f"already applied ({state_path}): `shortflow tune revert{again}` first, "
                        f"or `shortflow tune reload{again} --iw-map FILE` to change the prefixes")
    p = plan(s, fallback_routes=fallback_routes, force=force)
    if p.cgroup is not None:
        there = orphans.on_cgroup(p.cgroup)
        if there and not replace:
            known = orphans.claims()
            whose = orphans.survey(known)
            said = "; ".join(f"{what}: {c.words() if c else 'no journal of shortflow accounts for it'}"
                             for what, c in whose if what.startswith("program ") and f" on {p.cgroup}" in what)
            raise TuneError(f"cgroup {p.cgroup} already carries shortflow's tuner program ({said}): one program per "
                            "cgroup; --replace detaches it first")
        for prog in there:
            notes.append(orphans.detach(prog))
            pinned = [d for d in orphans.pin_dirs() if (orphans.pinned_prog(d) or {}).get("id") == prog.prog_id]
            notes += [x for d in pinned for x in [orphans.remove_pin_dir(d)] if x]
    # A run id like the testbed's (`sf-<id>-tune` pins): `testbed clean` and the test
    # suite's leftover check recognise it, and it honours $SHORTFLOW_RUN_ID_PREFIX.
    run_id = fresh_run_id()
    header = {"id": run_id, "applied": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              "settings": s.as_json(), "hz": kernel_hz(), "notices": p.notices}
    journal.register(run_id, state_path)
    try:
        w = journal.Writer(state_path, header)
    except BaseException:
        journal.unregister(run_id)
        raise
    old = _interruptible()
    refused: list[str] = []
    try:
        if p.cgroup is not None:
            refused = _apply_bpf(w, s, p.cgroup, force)
        for change in p.changes:
            step = w.intend(str(change["kind"]), **{k: v for k, v in change.items() if k != "kind"})
            routes.apply(change)
            held = _held(change)
            w.done(step, **({"shown": held} if held else {}))
        w.commit()
    except BaseException:
        # A second SIGTERM must not cut the rollback short (Ctrl-C still can: the next
        # command then finishes it from the journal).
        for stop in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(stop, signal.SIG_IGN)
        out = rollback(w.journal)
        if not out.left:
            journal.remove(w.journal)
        raise
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
    st = _state(w.journal)
    st["notes"] = notes
    if st["bpf"] is not None:
        st["bpf"]["selfcheck_refusals"] = refused
    return st


def _held(change: dict[str, Any]) -> dict[str, Any] | None:
    """The route as the kernel now holds it (what revert will look for), where it is not
    exactly the route asked for; None for a sysctl, or when the kernel holds that route."""
    if change["kind"] != "route":
        return None
    after = routes.route_of(change, "after")
    mine = [r for r in routes.default_routes() if r.family == after.family]
    if after in mine:
        return None
    same_dev = [r for r in mine if r.dev == after.dev and r.gateway == after.gateway]
    return same_dev[0].as_json() if len(same_dev) == 1 else None


def _apply_bpf(w: journal.Writer, s: TuneSettings, cgroup: Path, force: bool) -> list[str]:
    """Builds, loads, configures and attaches the program, each step journalled; returns the
    knobs the kernel refused for the self-check connection (applied anyway with --force)."""
    hz = kernel_hz()
    build = journal.build_dir(w.journal.id)
    step = w.intend("build_dir", path=str(build))
    build.mkdir(mode=0o700)
    obj = program.compile_program(build)
    w.done(step)
    if program.needs_bpffs():
        step = w.intend("mount_bpffs", path=str(program.BPF_FS))
        program.ensure_bpffs()
        w.done(step, mounted=True)
    pin_dir = journal.pin_dir(w.journal.id)
    step = w.intend("load", pin_dir=str(pin_dir))
    prog_id = program.load(obj, pin_dir)
    info = orphans.prog_info(prog_id) or {}
    w.done(step, prog_id=prog_id, tag=str(info.get("tag")), name=str(info.get("name")))
    program.write_config(pin_dir, s, hz)
    program.write_prefixes(pin_dir, s.prefixes, hz)
    # Before the scope sees it: does the kernel take every knob for one connection?
    ns, cg = selfcheck.objects(w.journal.id)
    step = w.intend("selfcheck", ns=ns, cgroup=str(cg))
    refused = selfcheck.check(pin_dir, w.journal.id, s.port, started=lambda: w.during(step))
    w.done(step)
    if refused and not force:
        raise TuneError("the kernel refused settings for a test connection (use --force to apply anyway): "
                        + "; ".join(refused))
    step = w.intend("attach", cgroup=str(cgroup), pin_dir=str(pin_dir))
    program.attach(cgroup, pin_dir)
    w.done(step, prog_id=prog_id, tag=str(info.get("tag")), name=str(info.get("name")))
    step = w.intend("remove_build_dir", path=str(build))
    obj.unlink()
    build.rmdir()
    w.done(step)
    return refused


def _state(j: journal.Journal) -> dict[str, Any]:
    """The journal as `status()` shows it: settings, the BPF part, the route/sysctl changes."""
    st: dict[str, Any] = {"id": j.id, "applied": j.header.get("applied"), "settings": j.header["settings"],
                          "bpf": None, "changes": [], "state_file": str(j.path),
                          "notices": j.header.get("notices", [])}
    for step in j.steps:
        if step.op == "attach":
            st["bpf"] = {"cgroup": step.args["cgroup"], "pin_dir": step.args["pin_dir"],
                         "prog_id": (step.done or {}).get("prog_id"), "tag": (step.done or {}).get("tag"),
                         "hz": j.header.get("hz")}
        elif step.op in ("route", "sysctl"):
            st["changes"].append({"kind": step.op, **step.args})
    return st


def found_on_host() -> list[str]:
    """Every tuner object of shortflow's on this host, each with whose it is as far as
    shortflow can prove it (an apply's registration and journal), for `status`."""
    known = orphans.claims()
    lines = [f"apply {i}: {c.words()}" for i, c in sorted(known.items()) if c.status in ("interrupted", "in progress")]
    lines += [f"{what}: {c.words() if c else 'no journal of shortflow accounts for it (an orphan)'}"
              for what, c in orphans.survey(known)]
    return lines + orphans.foreign_pin_dirs()


def _orphan_hint() -> str:
    found = found_on_host()
    if not found:
        return "no tuner program, pin or build directory of shortflow's found on this host"
    hint = "; ".join(found)
    if any("an orphan" in line or "interrupted apply" in line for line in found):
        hint += " (`shortflow tune revert --orphans` removes the orphans and rolls back interrupted applies)"
    return "shortflow's tuner objects on this host: " + hint


def _read_journal(state_path: Path) -> journal.Journal:
    try:
        return journal.load(state_path)
    except TuneError as e:
        raise TuneError(f"{e}\n{_orphan_hint()}") from None


def revert(*, state_path: Path = DEFAULT_STATE, force: bool = False, orphans_too: bool = False,
           cgroup: Path | None = None) -> list[str]:
    """Undoes the journal, last change first, and removes it. With `orphans_too`, needs no
    state file: rolls back every interrupted apply registered on this host and removes the
    tuner objects no apply's journal accounts for (only those attached to `cgroup`, and
    their pins, when given); a committed apply's objects are named and left."""
    _require_root()
    with _locked("revert"):
        if orphans_too:
            return _revert_orphans(cgroup)
        j = _read_journal(state_path)
        out = rollback(j, force=force)
        if not j.committed:
            out.done.insert(0, f"interrupted apply {j.id} rolled back")
        if out.left:
            raise TuneError("not reverted entirely: " + "; ".join(out.left)
                            + (f" (done: {'; '.join(out.done)})" if out.done else "")
                            + f"; {state_path} kept")
        journal.remove(j)
        return out.done + [f"warning: {w}" for w in out.warnings]


def _journal_cgroup(j: journal.Journal) -> Path | None:
    """The cgroup an apply's program is (or was to be) attached to."""
    for step in j.steps:
        if step.op == "attach":
            return Path(step.args["cgroup"]).resolve()
    named = j.header["settings"].get("cgroup")
    return Path(str(named)).resolve() if named else None


def _revert_orphans(cgroup: Path | None) -> list[str]:
    done: list[str] = []
    known = orphans.claims()
    for run_id, claim in sorted(known.items()):
        if claim.status != "interrupted":
            continue
        try:
            j = journal.load(claim.state)
        except TuneError:
            continue  # finished or damaged since: the survey below names what is left
        if cgroup is None or _journal_cgroup(j) == cgroup.resolve():
            out = rollback(j)
            done.append(f"interrupted apply {run_id} ({claim.state}) rolled back")
            done += out.done + [f"warning: {w}" for w in out.warnings] + out.left
            if not out.left:
                journal.remove(j)
    known = orphans.claims()
    done += orphans.remove_all(known, cgroup)
    # Registrations whose journal is gone or cannot be trusted, with nothing of theirs left.
    for run_id, claim in known.items():
        if not claim.owns and claim.status != "interrupted" and not orphans.left_of(run_id):
            journal.unregister(run_id)
    return done or ["no tuner program, pin or build directory of shortflow's found"]


def reload_prefixes(rules: list[PrefixRule], *, state_path: Path = DEFAULT_STATE, force: bool = False) -> int:
    """Replaces the per-prefix settings of the attached program without detaching it;
    returns the number of prefixes now held."""
    _require_root()
    with _locked("reload"):
        return _reload(rules, state_path, force)


def _reload(rules: list[PrefixRule], state_path: Path, force: bool) -> int:
    _settle(state_path)
    st = _state(_read_journal(state_path))
    if not st.get("bpf"):
        raise TuneError("the applied settings use no BPF program (--fallback routes): nothing to reload")
    hz = int(st["bpf"]["hz"] or kernel_hz())
    settings = TuneSettings(prefixes=rules)
    hard_limits(settings, hz)
    why = unsafe(settings, measured_rtts())
    if why and not force:
        raise TuneError("refused (use --force to apply anyway): " + "; ".join(why))
    program.write_prefixes(Path(st["bpf"]["pin_dir"]), rules, hz)
    new = dict(st["settings"])
    new["prefixes"] = TuneSettings(prefixes=rules).as_json()["prefixes"]
    journal.append_settings(state_path, new)
    return len(rules)


def status(*, state_path: Path = DEFAULT_STATE) -> dict[str, Any]:
    """The journal, whether the program is still attached, and its counters; `applied` is
    None when nothing is applied with this state file (then `found` lists the tuner objects
    on the host and whose they are). An interrupted apply found here is rolled back first
    (said in `notes`) — unless an apply is running now: `in_progress` is then its pid and
    nothing is touched. TuneError only for a state file that cannot be read or trusted."""
    lock = HostLock(LOCK) if os.geteuid() == 0 else None
    busy = lock.acquire() if lock is not None else in_progress()
    try:
        notes = _settle(state_path) if lock is not None and busy is None else []
        st = _status(state_path, busy)
    finally:
        if lock is not None:
            lock.release()
    st["notes"] = notes + st.get("notes", [])
    return st


def _status(state_path: Path, busy: int | None) -> dict[str, Any]:
    empty: dict[str, Any] = {"applied": None, "state_file": str(state_path), "settings": None, "bpf": None,
                             "changes": [], "in_progress": busy, "notes": []}
    if not state_path.exists():
        empty["found"] = found_on_host() if os.geteuid() == 0 else []
        return empty
    j = _read_journal(state_path)
    st = _state(j)
    st["in_progress"] = busy
    if not j.committed:
        # An apply holding the lock is writing this journal now (or another file's, while
        # this one waits for the next command to roll it back).
        st["notes"] = [f"apply {j.id} not committed yet: " + (f"an apply is in progress (pid {busy})" if busy
                       else "interrupted (the next apply, status or revert as root rolls it back)")]
    bpf = st.get("bpf")
    if bpf:
        attached = orphans.on_cgroup(Path(bpf["cgroup"])) if Path(bpf["cgroup"]).exists() else []
        bpf["still_attached"] = any(p.prog_id == bpf["prog_id"] for p in attached)
        pins = Path(bpf["pin_dir"])
        bpf["counters"] = program.counters(pins) if pins.exists() else None
        bpf["refusals"] = refusals(bpf["counters"], program.last_errors(pins)) if pins.exists() else []
    return st
