"""The tuner's write-ahead journal: the state file of `shortflow tune`.

Every change is written down *before* it is made — what will be created or changed, and the
value it replaces — and the record is fsynced; then the change is made; then a `done`
record (with what was learnt, e.g. the program's id and tag) is appended and fsynced. The
last record of a finished apply is `committed`. Whatever kills `apply` (SIGKILL, a power
cut), the journal names every change that may have happened, so `revert` can undo them
all, last first; a journal without `committed` is an interrupted apply, which the next
`apply`, `status` or `revert` rolls back.

The file is JSON Lines: a header line, then one record per line. `load` checks every line
against the schema and every path against the roots shortflow owns (pins under
`/sys/fs/bpf/sf-<id>-tune`, its own temporary build directories, cgroup v2 directories):
a damaged or hand-edited journal is refused with the line and the reason, never obeyed.
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
from shortflow.host.kernel import cgroup2_mounts
from shortflow.host.routes import Route
from shortflow.tune.settings import settable_sysctls

FORMAT = "shortflow-tune-journal"
#: 2: a route is journalled as its parts (`host.routes.Route`), not as `ip route` text.
VERSION = 2
#: Where the tuner's pins may live: one directory per apply, named after its id.
PIN_DIR = re.compile(r"^/sys/fs/bpf/sf-[0-9a-f]{6}-tune$")
#: The tuner's temporary build directory (tempfile.mkdtemp(prefix=BUILD_PREFIX)).
BUILD_PREFIX = "shortflow-tune-"
BUILD_DIR = re.compile(r"^shortflow-tune-[A-Za-z0-9_]{1,16}$")
#: The sysctls the tuner may change: slow start after idle, and the kernel table's sysctls
#: that `--set` takes.
SYSCTLS = {"net.ipv4.tcp_slow_start_after_idle"} | {k.knob for k in settable_sysctls()}
#: Fault injection for the tests: `STEP:before|after:SIGNAL` kills this process with SIGNAL
#: just before step STEP is made (its intent already journalled) or just after (before its
#: `done` record).
FAULT_ENV = "SHORTFLOW_TUNE_FAULT"

#: Each kind of step and the keys its intent record carries, with their types.
OPS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "build_dir": {"path": str},
    "mount_bpffs": {"path": str},
    "load": {"pin_dir": str},
    "attach": {"cgroup": str, "pin_dir": str},
    "remove_build_dir": {"path": str},
    "route": {"family": str, "before": dict, "after": dict},
    "sysctl": {"key": str, "before": str, "after": str},
}
#: What a `done` record may add, with types.
DONE: dict[str, type | tuple[type, ...]] = {"prog_id": int, "tag": str, "name": str, "mounted": bool, "shown": dict}


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
        _check_step(step, self.journal.path, 0)
        _fsync_append(self.journal.path, {"n": step.n, "op": op, **args})
        self.journal.steps.append(step)
        _failpoint(step.n, "before")
        return step

    def done(self, step: Step, **result: Any) -> None:
        _failpoint(step.n, "after")
        step.done = result
        _fsync_append(self.journal.path, {"n": step.n, "done": result})

    def commit(self) -> None:
        _fsync_append(self.journal.path, {"committed": True})
        self.journal.committed = True


def append_settings(path: Path, settings: dict[str, Any]) -> None:
    """Records new settings (`tune reload`): they change map contents only, which the pins'
    removal undoes."""
    _fsync_append(path, {"settings": settings})


def _bad(path: Path, line: int, why: str) -> TuneError:
    return TuneError(f"{path}: line {line}: {why}; refused (`shortflow tune status` lists and "
                     "`shortflow tune revert --orphans` removes shortflow's own programs and pins without it)")


def _check_path(path: Path, line: int, op: str, key: str, value: str) -> None:
    p = Path(value)
    if not p.is_absolute() or ".." in p.parts or str(p) != os.path.normpath(value):
        raise _bad(path, line, f"{op}.{key} {value!r} is not a plain absolute path")
    if key == "pin_dir" and not PIN_DIR.match(value):
        raise _bad(path, line, f"{op}.{key} {value!r} is outside /sys/fs/bpf/sf-<id>-tune")
    if op in ("build_dir", "remove_build_dir") and not BUILD_DIR.match(p.name):
        raise _bad(path, line, f"{op}.path {value!r} is not a shortflow build directory ({BUILD_PREFIX}*)")
    if op == "mount_bpffs" and value != "/sys/fs/bpf":
        raise _bad(path, line, f"mount_bpffs.path {value!r}: the tuner only ever mounts /sys/fs/bpf")
    if key == "cgroup" and not any(value == str(r) or value.startswith(str(r) + "/") for r in cgroup2_mounts()):
        raise _bad(path, line, f"attach.cgroup {value!r} is not inside a cgroup v2 hierarchy")


def _check_step(step: Step, path: Path, line: int) -> None:
    spec = OPS.get(step.op)
    if spec is None:
        raise _bad(path, line, f"unknown step {step.op!r}")
    for key, typ in spec.items():
        v = step.args.get(key)
        if not isinstance(v, typ):
            raise _bad(path, line, f"{step.op}.{key}: expected {getattr(typ, '__name__', typ)}, found {v!r}")
        if key in ("path", "pin_dir", "cgroup"):
            _check_path(path, line, step.op, key, str(v))
    extra = set(step.args) - set(spec)
    if extra:
        raise _bad(path, line, f"{step.op}: unexpected keys {sorted(extra)}")
    if step.op == "route" and step.args["family"] not in ("-4", "-6"):
        raise _bad(path, line, f"route.family {step.args['family']!r}: expected -4 or -6")
    if step.op == "route":
        # Each route as its parts, re-rendered from them: one shortflow could not have
        # written (a word `ip route` would read as another option) is refused here.
        for which in ("before", "after"):
            try:
                r = Route.from_json(step.args[which])
            except ValueError as e:
                raise _bad(path, line, f"route.{which}: {e}") from None
            if r.family != step.args["family"]:
                raise _bad(path, line, f"route.{which}: an IPv{r.family[1]} route in an {step.args['family']} step")
    if step.op == "sysctl" and step.args["key"] not in SYSCTLS:
        raise _bad(path, line, f"sysctl.key {step.args['key']!r}: the tuner changes only {sorted(SYSCTLS)}")


def load(path: Path) -> Journal:
    """Reads and checks a journal. TuneError (never another exception) when it is missing,
    unreadable, or fails the schema, with the file, the line and the reason."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise TuneError(f"nothing applied ({path} does not exist)") from None
    except OSError as e:
        raise TuneError(f"{path}: cannot read the state file: {e.strerror}") from None
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
            _check_step(step, path, i)
            j.steps.append(step)
    return j
