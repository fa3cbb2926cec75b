"""What shortflow records about its own live work, in one fixed system place:
`/run/shortflow` (root's, on tmpfs, the same whatever `$TMPDIR` says, emptied by a reboot
that also ends every run it describes).

- Host-wide locks (`HostLock`): a file locked with flock(2) by the process doing the work;
  the kernel releases it however that process ends, so a lock is never stale, and names
  its holder's pid in /proc/locks for the words of whoever finds it busy.
- A run's owner record (`write_owner`, `live_owner`): the pid and start time of the process
  that owns the run. A run is live while that very process runs and is not a zombie — a
  name, a directory or a pid alone proves nothing (pids are reused, a killed owner lingers
  as a zombie until its parent reaps it).
"""

from __future__ import annotations

import fcntl
import os
import re
from pathlib import Path

#: The fixed place of every record below.
RUN_DIR = Path("/run/shortflow")
#: Owner records of testbed runs: one file per run id.
OWNERS = RUN_DIR / "runs"
#: The lock `shortflow tune` holds while it applies, reloads or reverts.
TUNE_LOCK = "tune"


class HostLock:
    """The lock `RUN_DIR/NAME.lock`, taken without waiting: `acquire()` returns None when
    this process now holds it, else the holder's pid (0 when the kernel did not say)."""

    def __init__(self, name: str) -> None:
        self.path = RUN_DIR / f"{name}.lock"
        self._fd: int | None = None

    def acquire(self) -> int | None:
        RUN_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return holder(self.path) or 0
        self._fd = fd
        return None

    def release(self) -> None:
        if self._fd is not None:
            # Unlocked by the close; the file stays (removing it would race a new holder).
            os.close(self._fd)
            self._fd = None


def holder(path: Path) -> int | None:
    """The pid of the process holding the lock at `path`; None when nobody holds it (or
    there is no such lock). Read from the kernel's table of locks (/proc/locks), which
    names the holder without taking the lock: anyone may ask, and asking never makes a
    holder-to-be find the lock busy."""
    try:
        st = os.stat(path, follow_symlinks=False)
        table = Path("/proc/locks").read_text()
    except OSError:
        return None
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in table.splitlines():
        # `1: FLOCK  ADVISORY  WRITE 18215 fe:00:9977983 0 EOF` (a waiter's line has `->`).
        parts = line.split()
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[3] == "WRITE" and parts[5] == inode:
            return int(parts[4]) if parts[4].isdigit() else 0
    return None


def lock_holder(name: str) -> int | None:
    """`holder` of the lock `HostLock(name)` takes."""
    return holder(RUN_DIR / f"{name}.lock")


def process_identity(pid: int) -> str | None:
    """`pid` and its start time (field 22 of /proc/PID/stat), which together name one
    process even after the pid is reused; None when no such process runs — a zombie (state
    Z, X) runs no more: it has ended and waits only to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X", "x"):
        return None
    return f"{pid} {fields[19]}"


_RUN_ID = re.compile(r"^[0-9a-f]{6}$")


def run_owner(run_id: str) -> Path:
    """Where the owner record of testbed run `run_id` lives."""
    if not _RUN_ID.match(run_id):
        raise ValueError(f"run id {run_id!r}: expected 6 hex digits")
    return OWNERS / run_id


def write_owner(path: Path) -> None:
    """Records this process (pid and start time) as the owner of what `path` stands for
    (replaced whole: a reader never sees half a record)."""
    path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.new")
    tmp.write_text(f"{process_identity(os.getpid())}\n")
    tmp.replace(path)


def live_owner(path: Path) -> int | None:
    """The pid of the process the owner record at `path` names while it still runs (the
    same pid *and* start time, not a zombie); None when there is no record or its process
    ended."""
    try:
        owner = path.read_text(errors="replace")[:64].strip()
    except OSError:
        return None
    first = owner.split()[0] if owner.split() else ""
    pid = int(first) if first.isdigit() else 0
    return pid if pid and process_identity(pid) == owner else None


def owner_records() -> list[str]:
    """The testbed run ids that have an owner record, live or not."""
    try:
        return sorted(p.name for p in OWNERS.iterdir() if _RUN_ID.match(p.name))
    except OSError:
        return []
