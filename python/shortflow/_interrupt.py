"""Ctrl-C during a long call into the core that does not look at signals itself (the
simulator's run, the trace generator): the call runs on a thread of its own while the
caller's waits for it, so that KeyboardInterrupt is raised in the caller at once instead
of after minutes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def interruptible(run: Callable[[], T]) -> T:
    """`run()`, its result or its exception, with Ctrl-C honoured while it runs. An
    interrupted call goes on to its end on its thread, its result dropped; the process,
    which is ending, does not wait for it (a daemon thread). Off the main thread (where no
    signal arrives) `run` is simply called.

    >>> interruptible(lambda: 6 * 7)
    42
    """
    if threading.current_thread() is not threading.main_thread():
        return run()
    out: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            out.append(run())
        except BaseException as e:  # handed to the caller's thread as it is
            failure.append(e)

    t = threading.Thread(target=target, name="shortflow-core-call", daemon=True)
    t.start()
    while t.is_alive():
        t.join(0.1)
    if failure:
        raise failure[0]
    return out[0]
