"""The Dask client that sweeps and many-trace analyses run their tasks on: one definition
for both."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from shortflow.exceptions import ClusterError
from shortflow.host.records import live_owner, write_owner

#: A local cluster's scratch directory in the system's temporary directory: `sf-dask-*`.
SCRATCH_PREFIX = "sf-dask-"
#: The owner record in it: the process (pid and start time) whose cluster it is.
SCRATCH_OWNER = "owner"


def stale_scratch() -> list[Path]:
    """Scratch directories of local clusters whose process ended without removing them (a
    killed sweep), this user's (root: anyone's). Each is proven ours and stale by its owner
    record naming a process that no longer runs; one without a record, or a symbolic link,
    is not judged."""
    found = []
    for d in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*"):
        record = d / SCRATCH_OWNER
        try:
            if d.is_symlink() or not d.is_dir() or record.is_symlink() or not record.is_file():
                continue
            if os.geteuid() != 0 and d.stat().st_uid != os.geteuid():
                continue
        except OSError:
            continue
        if live_owner(record) is None:
            found.append(d)
    return sorted(found)


def remove_stale_scratch() -> list[Path]:
    """Removes `stale_scratch()`; returns what it removed."""
    gone = []
    for d in stale_scratch():
        shutil.rmtree(d, ignore_errors=True)
        if not d.exists():
            gone.append(d)
    return gone


@contextlib.contextmanager
def dask_client(scheduler: str | None, workers: int | None) -> Iterator[Any]:
    """A `distributed.Client` on the running cluster at `scheduler`, or on a new local
    cluster of `workers` single-threaded processes (default: one per core), closed on exit.
    Raises `ClusterError` when `scheduler` is malformed or nothing answers there within
    distributed's connect timeout (``distributed.comm.timeouts.connect``).

    A local cluster's scratch space (worker directories, locks) goes in a directory of its
    own, removed on exit: Dask's default, ``dask-scratch-space`` in the system's temporary
    directory, stays behind after every run."""
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            client = Client(scheduler)
        except (OSError, ValueError) as e:
            # distributed says ValueError for a malformed address, OSError (or its
            # TimeoutError) when nothing answers.
            raise ClusterError(f"Dask scheduler {scheduler!r}: {e}") from e
        with client:
            yield client
        return
    import dask

    n = workers or os.cpu_count() or 1
    remove_stale_scratch()
    with tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX) as scratch, dask.config.set({"temporary-directory": scratch}):
        write_owner(Path(scratch) / SCRATCH_OWNER)
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                          local_directory=scratch) as cluster, Client(cluster) as client:
            yield client
