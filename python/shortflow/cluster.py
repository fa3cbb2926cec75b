"""The Dask client that sweeps and many-trace analyses run their tasks on: one definition
for both."""

from __future__ import annotations

import os
from typing import Any

from shortflow.exceptions import ClusterError


def client(scheduler: str | None, workers: int | None) -> tuple[Any, Any]:
    """A `distributed.Client` on the running cluster at `scheduler`, or on a new local
    cluster of `workers` single-threaded processes (default: one per core). Returns
    ``(client, cluster)``; ``cluster`` is None for a remote scheduler, else the caller
    closes it after the client. Raises `ClusterError` when `scheduler` is malformed or
    nothing answers there within distributed's connect timeout
    (``distributed.comm.timeouts.connect``)."""
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            return Client(scheduler), None
        except (OSError, ValueError) as e:
            # distributed says ValueError for a malformed address, OSError (or its
            # TimeoutError) when nothing answers.
            raise ClusterError(f"Dask scheduler {scheduler!r}: {e}") from e
    n = workers or os.cpu_count() or 1
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)
    return Client(cluster), cluster
