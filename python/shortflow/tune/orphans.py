"""shortflow's own tuner objects, found without a state file, and whose they are.

Found: sock_ops programs attached to any cgroup that are the tuner's program, pin
directories `/sys/fs/bpf/sf-<id>-tune`, build directories `/run/shortflow/sf-<id>-tune-build`,
and the self-check's namespace and cgroup `sf-<id>-tcheck` of a registered apply. Nothing is
taken for the tuner's by its name alone:

- a program is the tuner's by its name (`tune`, the function in bpf/tune.bpf.c) *and* its
  maps (`tune_config`, `tune_counters`);
- a pin directory by its contents: nothing but what an apply pins there (the program, its
  link, its maps by name), the program the tuner's and each map the map of that name; a
  symbolic link is never followed;
- a build directory by holding nothing but the program's object;
- a self-check namespace or cgroup by its id being registered as an apply's
  (`journal.registered`).

Whose: an apply registered with its state file (`journal.register`) claims the objects of
its id; `claims()` says whether that apply is committed (its state file's to revert), in
progress (the process that registered it still runs) or interrupted. Objects no readable journal claims
are orphans.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from shortflow.exceptions import TuneError
from shortflow.host import bpf, cgroups
from shortflow.host.bpf import BPF_FS
from shortflow.host.kernel import cgroup2_mounts
from shortflow.host.netns import kill_namespace, namespaces
from shortflow.host.records import RUN_DIR
from shortflow.host.runid import TESTBED_ROLE_OBJECT
from shortflow.tune import journal
from shortflow.tune.journal import BUILD_DIR, PIN_DIR

PROG_NAME = bpf.PROG_NAME
PROG_MAPS = {"tune_config", "tune_counters"}
#: The maps bpf/tune.bpf.c declares, pinned by name beside the program.
MAP_NAMES = {"tune_config", "tune_counters", "tune_last_error", "tune_prefix4", "tune_prefix6", "tune_sfr_rtt"}
#: Everything an apply pins in its directory.
PIN_ENTRIES = {"prog", "link"} | MAP_NAMES


@dataclass(frozen=True)
class Program:
    cgroup: str
    prog_id: int
    name: str
    tag: str


@dataclass(frozen=True)
class Claim:
    """A registered apply: its state file and what became of it."""

    run_id: str
    state: Path
    #: `committed`, `in progress`, `interrupted`, or `damaged (refused)` / `gone`.
    status: str

    @property
    def owns(self) -> bool:
        """Its objects are its journal's to undo, not orphans."""
        return self.status in ("committed", "in progress")

    def words(self) -> str:
        if self.status == "committed":
            return (f"applied with state file {self.state} (`shortflow tune status --state {self.state}`; "
                    f"`shortflow tune revert --state {self.state}` removes it)")
        if self.status == "in progress":
            return f"an apply in progress, journalling into {self.state}"
        if self.status == "interrupted":
            return (f"an interrupted apply journalled in {self.state} (`shortflow tune revert --state {self.state}` "
                    "or `shortflow tune revert --orphans` rolls it back)")
        return f"an orphan (its apply's state file {self.state} is {self.status})"


def claims() -> dict[str, Claim]:
    """Every registered apply by id, with what became of it; an unfinished journal is an
    apply in progress while the process that registered it runs, else interrupted."""
    out = {}
    for run_id, state in journal.registered().items():
        try:
            j = journal.load(state)
        except TuneError:
            if journal.running(run_id):
                status = "in progress"  # (its journal not written yet)
            else:
                status = "gone" if not state.exists() else "damaged (refused)"
            out[run_id] = Claim(run_id, state, status)
            continue
        if j.id != run_id:
            out[run_id] = Claim(run_id, state, f"now another apply's ({j.id})")
        elif j.committed:
            out[run_id] = Claim(run_id, state, "committed")
        else:
            out[run_id] = Claim(run_id, state, "in progress" if journal.running(run_id) else "interrupted")
    return out


def prog_info(prog_id: int) -> dict[str, object] | None:
    """The program's name, tag and map ids; None when there is no such program."""
    return bpf.prog_info(prog_id)


def pinned_prog(pin_dir: Path) -> dict[str, object] | None:
    if (pin_dir / "prog").is_symlink():
        return None
    return bpf.pinned_prog_info(pin_dir / "prog")


def is_ours(info: dict[str, object] | None) -> bool:
    """The tuner's program: its name and its maps' names."""
    if not info or info.get("name") != PROG_NAME or info.get("type") not in ("sock_ops", None):
        return False
    names = set()
    map_ids = info.get("map_ids")
    for map_id in map_ids if isinstance(map_ids, list) else []:
        names.add(bpf.map_name(int(map_id)))
    return PROG_MAPS <= names


def attached() -> list[Program]:
    """The tuner's programs attached to any cgroup, as `bpftool cgroup tree` lists them."""
    found = []
    for entry in bpf.cgroup_tree():
        if TESTBED_ROLE_OBJECT.match(Path(str(entry.get("cgroup", ""))).name):
            # A testbed run's cgroup (`sf-<id>-client`): the testbed attaches the same program
            # there for a scenario's SYN RTO, and `testbed clean` owns what a run leaves.
            continue
        programs = entry.get("programs")
        for p in programs if isinstance(programs, list) else []:
            if p.get("attach_type") not in ("sock_ops", "cgroup_sock_ops") or p.get("name") != PROG_NAME:
                continue
            info = prog_info(int(p["id"]))
            if is_ours(info):
                assert info is not None
                found.append(Program(str(entry["cgroup"]), int(p["id"]), str(info.get("name")), str(info.get("tag"))))
    return found


def on_cgroup(cgroup: Path) -> list[Program]:
    """The tuner's programs attached to `cgroup` itself."""
    real = str(cgroup.resolve())
    return [p for p in attached() if str(Path(p.cgroup).resolve()) == real]


def _run_id(d: Path) -> str:
    return d.name.split("-")[1]


def pin_dir_not_ours(d: Path) -> str | None:
    """Why `d` is not provably one of the tuner's pin directories; None when it is."""
    try:
        st = os.lstat(d)
    except FileNotFoundError:
        return "gone"
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link (not followed)"
    if not stat.S_ISDIR(st.st_mode) or not PIN_DIR.match(str(d)):
        return "not a directory named sf-<id>-tune"
    entries = {e.name for e in os.scandir(d)}
    strange = sorted(entries - PIN_ENTRIES)
    if strange:
        return f"holds {', '.join(strange)}, which the tuner never pins"
    if any(os.path.islink(d / e) for e in entries):
        return "holds a symbolic link, which the tuner never pins"
    if "prog" in entries:
        info = pinned_prog(d)
        if not is_ours(info):
            return (f"its program is not the tuner's (name {(info or {}).get('name')!r}, "
                    f"maps {(info or {}).get('map_ids')})")
    elif "link" in entries:
        return "a link without the tuner's program"
    for name in sorted(entries & MAP_NAMES):
        if bpf.pinned_map_name(d / name) != name:
            return f"{name} is not the tuner's map of that name"
    if not entries and _run_id(d) not in journal.registered():
        return "empty, and no apply of that id is registered"
    return None


def pin_dirs() -> list[Path]:
    """The tuner's pin directories (proven by their contents: `pin_dir_not_ours`)."""
    return [d for d in _named_pin_dirs() if pin_dir_not_ours(d) is None]


def _named_pin_dirs() -> list[Path]:
    try:
        return sorted(p for p in BPF_FS.iterdir() if PIN_DIR.match(str(p)))
    except OSError:
        return []


def foreign_pin_dirs() -> list[str]:
    """Entries named like the tuner's pin directories that are not provably its: left, said."""
    return [f"{d}: {why}: left" for d in _named_pin_dirs() if (why := pin_dir_not_ours(d)) is not None]


def build_dirs() -> list[Path]:
    try:
        return sorted(p for p in RUN_DIR.iterdir() if BUILD_DIR.match(p.name) and is_build_dir(p))
    except OSError:
        return []


def is_build_dir(p: Path) -> bool:
    """A directory that holds nothing but what the tuner's build writes there."""
    try:
        return p.is_dir() and not p.is_symlink() and all(c.name == "tune.bpf.o" and c.is_file() and not c.is_symlink()
                                                         for c in p.iterdir())
    except OSError:
        return False


def selfcheck_objects(run_ids: set[str]) -> list[tuple[str, str]]:
    """The self-check's namespaces and cgroups of applies `run_ids`: (kind, name)."""
    names = {journal.selfcheck_name(i) for i in run_ids}
    found = [("namespace", n) for n in namespaces() if n in names]
    found += [("cgroup", str(root / n)) for root in cgroup2_mounts() for n in sorted(names) if (root / n).is_dir()]
    return found


def remove_selfcheck(ns: str, cgroup: Path | None = None) -> list[str]:
    """Removes a self-check's cgroup (`cgroup`, or `ns`'s name under every cgroup v2 root)
    and namespace, their processes killed first."""
    done = []
    for cg in [cgroup] if cgroup is not None else [root / ns for root in cgroup2_mounts()]:
        if cg.is_dir() and not cg.is_symlink() and cgroups.remove(cg):
            done.append(f"self-check cgroup {cg} removed")
    if ns in namespaces() and kill_namespace(ns):
        done.append(f"self-check namespace {ns} removed")
    return done


def detach(prog: Program) -> str:
    """Detaches `prog` after checking it is still the tuner's program under that id."""
    info = prog_info(prog.prog_id)
    if not is_ours(info) or (info or {}).get("tag") != prog.tag:
        return f"program {prog.prog_id} on {prog.cgroup} is no longer the tuner's: left"
    refused = bpf.detach_id(prog.cgroup, prog.prog_id)
    if refused is not None:
        return f"program {prog.prog_id} on {prog.cgroup}: detach failed: {refused}"
    return f"BPF program {prog.prog_id} (tune, tag {prog.tag}) detached from {prog.cgroup}"


def remove_pin_dir(pin_dir: Path) -> str | None:
    """Removes a tuner pin directory when its contents prove it the tuner's (each pin
    unlinked, then the directory: nothing is followed)."""
    if not os.path.lexists(pin_dir):
        return None
    why = pin_dir_not_ours(pin_dir)
    if why is not None:
        return f"{pin_dir}: {why}: left"
    for e in os.scandir(pin_dir):
        os.unlink(e.path)
    os.rmdir(pin_dir)
    return f"pins {pin_dir} removed"


def remove_build_dir(p: Path) -> str | None:
    if not os.path.lexists(p):
        return None
    if not BUILD_DIR.match(p.name) or p.parent != RUN_DIR or not is_build_dir(p):
        return f"{p}: not (only) a tuner build directory: left"
    for c in p.iterdir():
        c.unlink()
    p.rmdir()
    return f"build directory {p} removed"


def _pinned_ids() -> dict[int, str]:
    """Program id → the run id of the pin directory that holds it."""
    out = {}
    for d in pin_dirs():
        info = pinned_prog(d)
        if info is not None:
            out[int(info["id"])] = _run_id(d)  # type: ignore[call-overload]
    return out


def survey(known: dict[str, Claim]) -> list[tuple[str, Claim | None]]:
    """Every tuner object on the host, each with the apply that claims it (None: an orphan)."""
    by_prog = _pinned_ids()
    out: list[tuple[str, Claim | None]] = []
    for p in attached():
        run_id = by_prog.get(p.prog_id)
        out.append((f"program {p.prog_id} (tag {p.tag}) on {p.cgroup}", known.get(run_id) if run_id else None))
    for d in pin_dirs():
        out.append((f"pins {d}", known.get(_run_id(d))))
    for d in build_dirs():
        out.append((f"build directory {d}", known.get(_run_id(d))))
    for kind, name in selfcheck_objects(set(known)):
        out.append((f"self-check {kind} {name}", known.get(Path(name).name.split("-")[1])))
    return out


def left_of(run_id: str) -> bool:
    """Whether anything of apply `run_id` is still on the host (pins, build directory,
    self-check namespace or cgroup)."""
    return (os.path.lexists(journal.pin_dir(run_id)) or os.path.lexists(journal.build_dir(run_id))
            or bool(selfcheck_objects({run_id})))


def remove_all(known: dict[str, Claim], cgroup: Path | None = None) -> list[str]:
    """`tune revert --orphans`: removes every tuner object no live or committed apply
    claims (`Claim.owns`); with `cgroup`, only the programs attached there and their pins.
    Objects of a claiming apply are named with whose they are, and left."""
    by_prog = _pinned_ids()
    spared = {i for i, c in known.items() if c.owns}
    progs = attached() if cgroup is None else on_cgroup(cgroup)
    done = []
    for p in progs:
        owner = by_prog.get(p.prog_id)
        if owner in spared:
            done.append(f"program {p.prog_id} on {p.cgroup}: {known[owner].words()}: left")
        else:
            done.append(detach(p))
    ids = {p.prog_id for p in progs}
    for d in pin_dirs():
        if cgroup is not None and (pinned_prog(d) or {}).get("id") not in ids:
            continue
        if _run_id(d) in spared:
            if cgroup is None:
                done.append(f"pins {d}: {known[_run_id(d)].words()}: left")
            continue
        done += [x for x in [remove_pin_dir(d)] if x]
    if cgroup is None:
        done += foreign_pin_dirs()
        done += [x for d in build_dirs() if _run_id(d) not in spared for x in [remove_build_dir(d)] if x]
        for run_id in sorted(set(known) - spared):
            done += remove_selfcheck(journal.selfcheck_name(run_id))
    return done
