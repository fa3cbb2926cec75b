"""The Dask client that sweeps and many-trace analyses run their tasks on: one definition
for both."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import Any

from shortflow.exceptions import ClusterError


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
    with tempfile.TemporaryDirectory(prefix="sf-dask-") as scratch, dask.config.set({"temporary-directory": scratch}):
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                          local_directory=scratch) as cluster, Client(cluster) as client:
            yield client
