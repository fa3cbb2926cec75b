"""cgroup v2 directories shortflow makes for its own processes (the testbed's roles, tune's
self-check), and their removal: a cgroup goes only once empty, so its processes are killed
first; removing it detaches and frees the BPF programs attached to it."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def create(path: Path) -> None:
    path.mkdir()


def members(path: Path) -> list[int]:
    try:
        return [int(x) for x in (path / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def remove(path: Path, wait_s: float = 2.0) -> bool:
    """Kills the processes in cgroup `path` and removes it; False when it did not exist.
    Raises OSError when it cannot be removed (still busy after `wait_s`)."""
    if not path.is_dir():
        return False
    deadline = time.monotonic() + wait_s
    while True:
        for pid in members(path):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.rmdir(path)
            return True
        except FileNotFoundError:
            return False
        except OSError as e:
            # EBUSY while the killed processes are still being torn down.
            if time.monotonic() > deadline:
                raise OSError(e.errno, f"cgroup {path}: {e.strerror}") from None
            time.sleep(0.02)
