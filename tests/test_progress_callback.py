"""An exception raised by a progress callback reaches the caller (it used to be
swallowed: the reading stopped and the result looked complete)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

import shortflow


class Stop(Exception):
    pass


def test_exception_in_progress_callback_is_raised(tmp_path: Path) -> None:
    trace = tmp_path / "t.pcap"
    shortflow.generate(trace, connections=50)
    # Read through a FIFO whose writer waits: the reading is certain to outlast the 100 ms
    # between two progress calls.
    fifo = tmp_path / "slow.pcap"
    os.mkfifo(fifo)

    def writer() -> None:
        with fifo.open("wb") as w:
            time.sleep(0.5)
            w.write(trace.read_bytes())

    t = threading.Thread(target=writer)
    t.start()

    def progress(done: int, total: int, packets: int) -> None:
        raise Stop("from the callback")

    try:
        with pytest.raises(Stop, match="from the callback"):
            shortflow.analyze(fifo, progress=progress)
    finally:
        t.join()
