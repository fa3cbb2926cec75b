"""shortflow's own tuner objects, found without a state file: sock_ops programs attached to
any cgroup (`bpftool cgroup tree`) that are the tuner's program, pin directories under
/sys/fs/bpf named `sf-<id>-tune`, and its temporary build directories. Nothing else is ever
listed, so nothing else is ever removed.

The tuner's program is recognised by its name (`tune`, the function in bpf/tune.bpf.c)
*and* its maps (`tune_config`, `tune_counters`): a name alone is too common to trust.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from shortflow.host import bpf
from shortflow.host.bpf import BPF_FS
from shortflow.host.runid import TESTBED_ROLE_OBJECT
from shortflow.tune.journal import BUILD_DIR, PIN_DIR

PROG_NAME = bpf.PROG_NAME
PROG_MAPS = {"tune_config", "tune_counters"}


@dataclass(frozen=True)
class Program:
    cgroup: str
    prog_id: int
    name: str
    tag: str


def prog_info(prog_id: int) -> dict[str, object] | None:
    """The program's name, tag and map ids; None when there is no such program."""
    return bpf.prog_info(prog_id)


def pinned_prog(pin_dir: Path) -> dict[str, object] | None:
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


def pin_dirs() -> list[Path]:
    if not BPF_FS.is_dir():
        return []
    return sorted(p for p in BPF_FS.iterdir() if PIN_DIR.match(str(p)) and p.is_dir())


def build_dirs() -> list[Path]:
    tmp = Path(tempfile.gettempdir())
    return sorted(p for p in tmp.iterdir() if BUILD_DIR.match(p.name) and is_build_dir(p))


def is_build_dir(p: Path) -> bool:
    """A directory that holds nothing but what the tuner's build writes there."""
    try:
        return p.is_dir() and not p.is_symlink() and all(c.name == "tune.bpf.o" and c.is_file() for c in p.iterdir())
    except OSError:
        return False


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
    """Removes a tuner pin directory (checked: its name, and it lives on bpffs)."""
    if not PIN_DIR.match(str(pin_dir)):
        return f"{pin_dir}: not a tuner pin directory: left"
    if not pin_dir.exists():
        return None
    shutil.rmtree(pin_dir)
    return f"pins {pin_dir} removed"


def remove_build_dir(p: Path) -> str | None:
    if not p.exists():
        return None
    if not BUILD_DIR.match(p.name) or not is_build_dir(p):
        return f"{p}: not (only) a tuner build directory: left"
    shutil.rmtree(p)
    return f"build directory {p} removed"


def listing() -> dict[str, list[str]]:
    """What `tune status` shows without a state file."""
    return {"programs": [f"{p.prog_id} (tag {p.tag}) on {p.cgroup}" for p in attached()],
            "pin_dirs": [str(p) for p in pin_dirs()],
            "build_dirs": [str(p) for p in build_dirs()]}


def remove_all(cgroup: Path | None = None) -> list[str]:
    """`tune revert --orphans`: detaches every tuner program, removes its pins and builds.
    With `cgroup`, only the programs attached there and the pins that hold them."""
    progs = attached() if cgroup is None else on_cgroup(cgroup)
    ids = {p.prog_id for p in progs}
    pins = [d for d in pin_dirs() if cgroup is None or (pinned_prog(d) or {}).get("id") in ids]
    done = [detach(p) for p in progs]
    done += [x for x in (remove_pin_dir(d) for d in pins) if x]
    if cgroup is None:
        done += [x for x in (remove_build_dir(d) for d in build_dirs()) if x]
    return done
