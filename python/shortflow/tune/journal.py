"""The tuner's write-ahead journal: the state file of `shortflow tune`.

Every change is written down *before* it is made — what will be created or changed, and the
value it replaces — and the record is fsynced; then the change is made; then a `done`
record (with what was learnt, e.g. the program's id and tag) is appended and fsynced. The
last record of a finished apply is `committed`. Whatever kills `apply` (SIGKILL, a power
cut), the journal names every change that may have happened, so `revert` can undo them
all, last first; a journal without `committed` is an interrupted apply, which the next
`apply`, `status` or `revert` rolls back.

The file is JSON Lines: a header line, then one record per line. `load` reads at most
`files.STATE_CAP` bytes and checks every line against what `apply` itself writes: the
schema, every name and path derived from the journal's own id (its pins
`/sys/fs/bpf/sf-<id>-tune`, its build directory `/run/shortflow/sf-<id>-tune-build`, its
self-check's namespace and cgroup `sf-<id>-tcheck`), attachments inside a cgroup v2
hierarchy, and a route change that alters only the metrics the tuner sets. A damaged or
hand-edited journal is refused with the line and the reason, never obeyed.

Every apply is also registered, before its journal is created, in `/run/shortflow/tune/<id>`
(the state file's path and the applying process): how `status` and `revert --orphans` tell another state file's
apply — live, committed or interrupted — from objects no journal accounts for.
"""

from __future__ import annotations

import json
import os
import re
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shortflow.exceptions import TuneError
from shortflow.host import kernel_hz
from shortflow.host.bpf import BPF_FS
from shortflow.host.kernel import cgroup2_mounts
from shortflow.host.records import RUN_DIR, process_identity
from shortflow.host.routes import Route
from shortflow.tune import files
from shortflow.tune.routes import SLOW_START_AFTER_IDLE, route_changes_only_tuner_metrics
from shortflow.tune.settings import settable_sysctls

FORMAT = "shortflow-tune-journal"
#: 2: a route is journalled as its parts (`host.routes.Route`), not as `ip route` text.
VERSION = 2
#: Where the tuner's pins may live: one directory per apply, named after its id.
PIN_DIR = re.compile(r"^/sys/fs/bpf/sf-[0-9a-f]{6}-tune$")
#: The tuner's build directories: one per apply, in shortflow's own system place.
BUILD_DIR = re.compile(r"^sf-[0-9a-f]{6}-tune-build$")
#: Every apply's id and state file (see the module's docstring).
REGISTRY = RUN_DIR / "tune"
#: The sysctls the tuner may change: slow start after idle (0 or 1), and the kernel
#: table's sysctls that `--set` takes (within their rows' ranges).
SETTABLE = {k.knob: k for k in settable_sysctls()}
SYSCTLS = {SLOW_START_AFTER_IDLE} | set(SETTABLE)
#: Fault injection for the tests: `STEP:before|during|after:SIGNAL` sends this process
#: SIGNAL just before step STEP is made (its intent already journalled), while it is made
#: (for the self-check: once its namespace, cgroup and link exist) or just after (before its
#: `done` record).
FAULT_ENV = "SHORTFLOW_TUNE_FAULT"

#: Each kind of step and the keys its intent record carries, with their types.
OPS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "build_dir": {"path": str},
    "mount_bpffs": {"path": str},
    "load": {"pin_dir": str},
    "selfcheck": {"ns": str, "cgroup": str},
    "attach": {"cgroup": str, "pin_dir": str},
    "remove_build_dir": {"path": str},
    "route": {"family": str, "before": dict, "after": dict},
    "sysctl": {"key": str, "before": str, "after": str},
}
#: What a `done` record may add, with types.
DONE: dict[str, type | tuple[type, ...]] = {"prog_id": int, "tag": str, "name": str, "mounted": bool, "shown": dict}


def pin_dir(run_id: str) -> Path:
    return BPF_FS / f"sf-{run_id}-tune"


def build_dir(run_id: str) -> Path:
    return RUN_DIR / f"sf-{run_id}-tune-build"


def selfcheck_name(run_id: str) -> str:
    """The self-check's network namespace, and its cgroup's name under a cgroup v2 root."""
    return f"sf-{run_id}-tcheck"


@dataclass
class Step:
    n: int
    op: str
    args: dict[str, Any]
    done: dict[str, Any] | None = None


@dataclass
class Journal:
    """A journal read back (or being written)."""

    path: Path
    header: dict[str, Any]
    steps: list[Step] = field(default_factory=list)
    committed: bool = False

    @property
    def id(self) -> str:
        return str(self.header["id"])


def _fsync_append(path: Path, record: dict[str, Any]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(d: Path) -> None:
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _failpoint(n: int, when: str) -> None:
    spec = os.environ.get(FAULT_ENV, "")
    if not spec:
        return
    step, at, sig = spec.split(":")
    if int(step) == n and at == when:
        os.kill(os.getpid(), getattr(signal, sig))


class Writer:
    """Appends records to a new journal, each fsynced before the change it announces."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, (json.dumps({"format": FORMAT, "version": VERSION, **header}) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        _fsync_dir(path.parent)
        self.journal = Journal(path, {"format": FORMAT, "version": VERSION, **header})

    def intend(self, op: str, **args: Any) -> Step:
        step = Step(len(self.journal.steps) + 1, op, args)
        _check_step(step, self.journal.path, len(self.journal.steps) + 2, self.journal.id)
        _fsync_append(self.journal.path, {"n": step.n, "op": op, **args})
        self.journal.steps.append(step)
        _failpoint(step.n, "before")
        return step

    def during(self, step: Step) -> None:
        _failpoint(step.n, "during")

    def done(self, step: Step, **result: Any) -> None:
        _failpoint(step.n, "after")
        step.done = result
        _fsync_append(self.journal.path, {"n": step.n, "done": result})

    def commit(self) -> None:
        _fsync_append(self.journal.path, {"committed": True})
        self.journal.committed = True


def register(run_id: str, state_path: Path) -> None:
    """Records (fsynced) that apply `run_id` journals into `state_path`, and which process
    runs it (pid and start time: `running`)."""
    REGISTRY.mkdir(mode=0o700, parents=True, exist_ok=True)
    entry = REGISTRY / run_id
    fd = os.open(entry, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, f"{state_path.absolute()}\n{process_identity(os.getpid())}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    _fsync_dir(REGISTRY)


def unregister(run_id: str) -> None:
    if re.fullmatch(r"[0-9a-f]{6}", run_id):
        (REGISTRY / run_id).unlink(missing_ok=True)


def _registration(entry: Path) -> list[str]:
    try:
        return files.read_text(entry, 4096, "tune registry entry").splitlines()
    except (OSError, TuneError):
        return []


def registered() -> dict[str, Path]:
    """Every registered apply's id and the state file it named."""
    try:
        entries = list(REGISTRY.iterdir())
    except OSError:
        return {}
    out = {}
    for e in entries:
        if re.fullmatch(r"[0-9a-f]{6}", e.name) and not e.is_symlink() and (lines := _registration(e)):
            out[e.name] = Path(lines[0])
    return out


def running(run_id: str) -> bool:
    """Whether the process that registered apply `run_id` still runs (the same pid and
    start time, not a zombie)."""
    lines = _registration(REGISTRY / run_id) if re.fullmatch(r"[0-9a-f]{6}", run_id) else []
    if len(lines) < 2 or not lines[1].split()[:1] or not lines[1].split()[0].isdigit():
        return False
    return process_identity(int(lines[1].split()[0])) == lines[1]


def remove(j: Journal) -> None:
    """The journal is done with (reverted, or rolled back): its file and its registration."""
    j.path.unlink(missing_ok=True)
    unregister(j.id)


def append_settings(path: Path, settings: dict[str, Any]) -> None:
    """Records new settings (`tune reload`): they change map contents only, which the pins'
    removal undoes."""
    _fsync_append(path, {"settings": settings})


def _bad(path: Path, line: int, why: str) -> TuneError:
    return TuneError(f"{path}: line {line}: {why}; refused")


def _inside_cgroup2(value: str) -> Path | None:
    """The cgroup v2 root `value` lies in (or is), None when none."""
    for r in cgroup2_mounts():
        if value == str(r) or value.startswith(str(r) + "/"):
            return r
    return None


def _check_path(path: Path, line: int, run_id: str, op: str, key: str, value: str) -> None:
    p = Path(value)
    if not p.is_absolute() or ".." in p.parts or str(p) != os.path.normpath(value):
        raise _bad(path, line, f"{op}.{key} {value!r} is not a plain absolute path")
    if key == "pin_dir" and value != str(pin_dir(run_id)):
        raise _bad(path, line, f"{op}.{key} {value!r} is not this apply's pins ({pin_dir(run_id)}: every apply "
                               "pins under /sys/fs/bpf/sf-<its id>-tune)")
    if op in ("build_dir", "remove_build_dir") and value != str(build_dir(run_id)):
        raise _bad(path, line, f"{op}.path {value!r} is not this apply's build directory ({build_dir(run_id)})")
    if op == "mount_bpffs" and value != str(BPF_FS):
        raise _bad(path, line, f"mount_bpffs.path {value!r}: the tuner only ever mounts {BPF_FS}")
    if key == "cgroup":
        root = _inside_cgroup2(value)
        if root is None:
            raise _bad(path, line, f"{op}.cgroup {value!r} is not inside a cgroup v2 hierarchy")
        if op == "selfcheck" and p != root / selfcheck_name(run_id):
            raise _bad(path, line, f"selfcheck.cgroup {value!r} is not this apply's self-check cgroup "
                                   f"({root / selfcheck_name(run_id)})")


def _check_step(step: Step, path: Path, line: int, run_id: str) -> None:
    spec = OPS.get(step.op)
    if spec is None:
        raise _bad(path, line, f"unknown step {step.op!r}")
    for key, typ in spec.items():
        v = step.args.get(key)
        if not isinstance(v, typ):
            raise _bad(path, line, f"{step.op}.{key}: expected {getattr(typ, '__name__', typ)}, found {v!r}")
        if key in ("path", "pin_dir", "cgroup"):
            _check_path(path, line, run_id, step.op, key, str(v))
    extra = set(step.args) - set(spec)
    if extra:
        raise _bad(path, line, f"{step.op}: unexpected keys {sorted(extra)}")
    if step.op == "selfcheck" and step.args["ns"] != selfcheck_name(run_id):
        raise _bad(path, line, f"selfcheck.ns {step.args['ns']!r} is not this apply's ({selfcheck_name(run_id)})")
    if step.op == "route":
        if step.args["family"] not in ("-4", "-6"):
            raise _bad(path, line, f"route.family {step.args['family']!r}: expected -4 or -6")
        # Each route as its parts, re-rendered from them: one shortflow could not have
        # written (a word `ip route` would read as another option) is refused here, and so
        # is a change beyond the tuner's own metrics.
        parts = {}
        for which in ("before", "after"):
            try:
                parts[which] = Route.from_json(step.args[which])
            except ValueError as e:
                raise _bad(path, line, f"route.{which}: {e}") from None
            if parts[which].family != step.args["family"]:
                raise _bad(path, line, f"route.{which}: an IPv{parts[which].family[1]} route in an {step.args['family']} step")
        why = route_changes_only_tuner_metrics(parts["before"], parts["after"])
        if why:
            raise _bad(path, line, f"route: {why}")
    if step.op == "sysctl" and step.args["key"] not in SYSCTLS:
        raise _bad(path, line, f"sysctl.key {step.args['key']!r}: the tuner changes only {sorted(SYSCTLS)}")
    if step.op == "sysctl":
        why = _sysctl_value_why_not(step.args["key"], step.args["before"], step.args["after"])
        if why:
            raise _bad(path, line, f"sysctl {step.args['key']}: {why}")


def _sysctl_value_why_not(key: str, before: str, after: str) -> str | None:
    """Why a journalled sysctl change holds values the tuner could not have read or
    written, or None: 0 or 1 for slow start after idle, else whole numbers, the new one
    within its row's range."""
    if key == SLOW_START_AFTER_IDLE:
        ok = all(re.fullmatch(r"[01]", v) for v in (before, after))
        return None if ok else "before and after must be 0 or 1"
    if not all(re.fullmatch(r"[0-9]{1,10}", v) for v in (before, after)):
        return "before and after must be whole numbers"
    row = SETTABLE[key]
    hz = kernel_hz() if row.encoding == "jiffies" else 1
    if not row.takes(row.decode(int(after), hz), hz):
        return f"after {after} is outside the range the kernel table gives {row.name}"
    return None


def load(path: Path) -> Journal:
    """Reads and checks a journal. TuneError (never another exception) when it is missing,
    unreadable, or fails the schema, with the file, the line and the reason."""
    try:
        raw = files.read_bytes(path, files.STATE_CAP, "state file")
    except FileNotFoundError:
        raise TuneError(f"nothing applied ({path} does not exist)") from None
    except TuneError as e:
        raise _bad(path, 1, str(e).removeprefix(f"{path}: ")) from None
    try:
        text = raw.decode()
    except UnicodeDecodeError as e:
        raise _bad(path, raw[: e.start].count(b"\n") + 1, f"not text (byte {e.start})") from None
    lines = text.splitlines()
    if not lines:
        raise _bad(path, 1, "empty state file")
    records = []
    for i, line in enumerate(lines, 1):
        try:
            rec = json.loads(line)
        except RecursionError:
            raise _bad(path, i, "JSON nested too deeply (the tuner writes flat records)") from None
        except json.JSONDecodeError as e:
            # A last line cut short is an apply killed mid-write: that record never counted.
            if i == len(lines) and not text.endswith("\n") and i > 1:
                break
            raise _bad(path, i, f"not JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(rec, dict):
            raise _bad(path, i, f"expected a JSON object, found {type(rec).__name__}")
        records.append((i, rec))
    _, head = records[0]
    if head.get("format") == FORMAT and isinstance(head.get("version"), int) and head["version"] < VERSION:
        raise _bad(path, 1, f"written by an older shortflow (journal version {head['version']}; this one reads "
                            f"{VERSION}): revert with that version, or put back by hand what its lines record")
    if head.get("format") != FORMAT or head.get("version") != VERSION:
        raise _bad(path, 1, f"not a shortflow tune journal (format {FORMAT!r} version {VERSION} expected)")
    if not isinstance(head.get("id"), str) or not re.fullmatch(r"[0-9a-f]{6}", head["id"]):
        raise _bad(path, 1, f"id {head.get('id')!r}: expected 6 hex digits")
    if not isinstance(head.get("settings"), dict):
        raise _bad(path, 1, "settings: expected an object")
    owner = registered().get(head["id"])
    if owner is not None and owner != path.absolute() and owner.exists():
        # (A state file moved since its apply is still that apply's: its old place is empty.)
        raise _bad(path, 1, f"id {head['id']} is the apply journalled in {owner}, not this file's")
    j = Journal(path, head)
    for i, rec in records[1:]:
        if rec.get("committed") is True and len(rec) == 1:
            j.committed = True
        elif set(rec) == {"settings"} and isinstance(rec["settings"], dict):
            j.header["settings"] = rec["settings"]
        elif "done" in rec:
            n, done = rec.get("n"), rec["done"]
            if not isinstance(n, int) or not 1 <= n <= len(j.steps) or not isinstance(done, dict):
                raise _bad(path, i, f"done record for unknown step {n!r}")
            for k, v in done.items():
                if k not in DONE or not isinstance(v, DONE[k]) or isinstance(v, bool) != (DONE[k] is bool):
                    raise _bad(path, i, f"done.{k}: unexpected key or type ({v!r})")
            if "shown" in done:
                try:
                    Route.from_json(done["shown"])
                except ValueError as e:
                    raise _bad(path, i, f"done.shown: {e}") from None
            j.steps[n - 1].done = done
        else:
            n, op = rec.get("n"), rec.get("op")
            if n != len(j.steps) + 1 or not isinstance(op, str):
                raise _bad(path, i, f"step number {n!r}: expected {len(j.steps) + 1} with an op")
            step = Step(n, op, {k: v for k, v in rec.items() if k not in ("n", "op")})
            _check_step(step, path, i, j.id)
            j.steps.append(step)
    return j
