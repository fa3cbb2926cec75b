"""Replaying a journal backwards: each step undone, last first, whether it was marked done
or not (a step announced but never marked may have happened, or half). Every undo checks
before it acts, so replaying twice does nothing the second time:

- pins and build directories are removed only when their contents prove them the tuner's
  (orphans.pin_dir_not_ours, orphans.is_build_dir); the self-check's namespace and cgroup
  are the journal's own (`sf-<id>-tcheck`, checked when it was read);
- a program is detached only when it is the tuner's program (name and maps) with the
  recorded tag; the program pinned in the apply's own pin directory is preferred to a
  recorded id, which a damaged journal could get wrong;
- a route or sysctl is put back only where it still holds the value the tuner set; a value
  changed since is reported and left (unless `force`), and a route whose device is gone is
  reported while the rest goes on.
"""

from __future__ import annotations

import os
from pathlib import Path

from shortflow.exceptions import TuneError
from shortflow.host import bpf, sysctl
from shortflow.host.netns import link_exists
from shortflow.tune import journal, orphans, routes
from shortflow.tune.journal import Journal, Step


class Outcome:
    def __init__(self) -> None:
        self.done: list[str] = []
        #: Reported, and the revert is complete without them: a route whose device is gone,
        #: an object that is no longer the tuner's (never touched).
        self.warnings: list[str] = []
        #: Changes left in place that `--force` would restore (changed since apply): the
        #: journal is kept for that.
        self.left: list[str] = []


def rollback(j: Journal, *, force: bool = False) -> Outcome:
    out = Outcome()
    for step in reversed(j.steps):
        try:
            _undo(step, out, force)
        except (TuneError, OSError) as e:
            out.left.append(f"step {step.n} ({step.op}) failed: {e}")
    try:
        _sweep(j, out)
    except (TuneError, OSError) as e:
        out.left.append(f"objects of apply {j.id}: {e}")
    return out


def _sweep(j: Journal, out: Outcome) -> None:
    """Objects named after this apply's id that no record announced (a journal cut short by
    hand or by a disk): the self-check's namespace and cgroup, the pin directory
    `sf-<id>-tune` (when its contents prove it the tuner's) and the program pinned there, on
    whichever cgroup it is attached."""
    out.done += orphans.remove_selfcheck(journal.selfcheck_name(j.id))
    pin_dir = journal.pin_dir(j.id)
    if not os.path.lexists(pin_dir) or orphans.pin_dir_not_ours(pin_dir) is not None:
        _note(out, orphans.remove_pin_dir(pin_dir))
        return
    pinned = orphans.pinned_prog(pin_dir)
    if pinned is not None:
        for p in orphans.attached():
            if p.prog_id == pinned["id"]:
                _note(out, orphans.detach(p))
    _note(out, orphans.remove_pin_dir(pin_dir))


def _undo(step: Step, out: Outcome, force: bool) -> None:
    a = step.args
    if step.op in ("build_dir", "remove_build_dir"):
        _note(out, orphans.remove_build_dir(Path(a["path"])))
    elif step.op == "load":
        _note(out, orphans.remove_pin_dir(Path(a["pin_dir"])))
    elif step.op == "selfcheck":
        out.done += orphans.remove_selfcheck(a["ns"], Path(a["cgroup"]))
    elif step.op == "mount_bpffs":
        bpffs = Path(a["path"])
        if os.path.ismount(bpffs) and not any(bpffs.iterdir()):
            bpf.unmount(bpffs)
            out.done.append(f"bpffs unmounted from {bpffs}")
    elif step.op == "attach":
        _detach(step, out)
    elif step.op == "route":
        _route(step, out, force)
    elif step.op == "sysctl":
        _sysctl(step, out, force)


def _note(out: Outcome, line: str | None) -> None:
    if line is None:
        return
    (out.warnings if line.endswith(": left") else out.done).append(line)


def _detach(step: Step, out: Outcome) -> None:
    cgroup, pin_dir = step.args["cgroup"], Path(step.args["pin_dir"])
    pinned = orphans.pinned_prog(pin_dir) if pin_dir.exists() else None
    recorded = (step.done or {}).get("prog_id")
    if pinned is not None:
        prog_id, tag = int(pinned["id"]), str(pinned.get("tag"))  # type: ignore[call-overload]
        if recorded is not None and recorded != prog_id:
            out.warnings.append(f"the journal's program id {recorded} is not the one pinned in {pin_dir} "
                            f"({prog_id}): {prog_id} is detached, {recorded} left")
    elif recorded is not None:
        info = orphans.prog_info(recorded)
        if not orphans.is_ours(info) or (info or {}).get("tag") != step.done.get("tag"):  # type: ignore[union-attr]
            if info is not None:
                out.warnings.append(f"program {recorded} is not the tuner's (name {info.get('name')!r}, "
                                f"tag {info.get('tag')}): left")
            return
        prog_id, tag = recorded, str(step.done.get("tag"))  # type: ignore[union-attr]
    else:
        return  # never loaded, or pins and program already gone: nothing attached by this step
    if any(p.prog_id == prog_id for p in orphans.on_cgroup(Path(cgroup))):
        _note(out, orphans.detach(orphans.Program(cgroup, prog_id, orphans.PROG_NAME, tag)))


def _route(step: Step, out: Outcome, force: bool) -> None:
    change = {"kind": "route", **step.args}
    before, after = routes.route_of(change, "before"), routes.route_of(change, "after")
    held = (step.done or {}).get("shown")
    theirs = {after} | ({routes.route_of({"shown": held}, "shown")} if held else set())
    current = [r for r in routes.default_routes() if r.family == before.family]
    if before in current:
        return  # as before (never changed, or undone already)
    if not link_exists(before.dev):
        out.warnings.append(f"route {before.show()!r}: device {before.dev} is gone: not restored")
        return
    if not theirs & set(current) and not force:
        if step.done is not None:
            now = [r.show() for r in current] or "absent"
            out.left.append(f"route {before.family}: now {now}, not the tuner's {after.show()!r}: left "
                            "(changed since; --force restores it anyway)")
        return  # (no done record and not ours: the change was never made)
    routes.undo(change)
    out.done.append(f"route back to {before.show()!r}")


def _sysctl(step: Step, out: Outcome, force: bool) -> None:
    key, before, after = step.args["key"], step.args["before"], step.args["after"]
    now = sysctl.read(key)
    if now == before:
        return
    if now != after and not force:
        out.left.append(f"{key} is {now}, not the tuner's {after}: left (changed since; --force sets {before})")
        return
    routes.undo({"kind": "sysctl", "key": key, "before": before})
    out.done.append(f"{key} back to {before}")
