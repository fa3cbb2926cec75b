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
        try:
            with fifo.open("wb") as w:
                time.sleep(0.5)
                w.write(trace.read_bytes())
        except BrokenPipeError:
            pass  # the reader saw the cancel after its first read and stopped: as it should

    t = threading.Thread(target=writer)
    t.start()

    def progress(done: int, total: int, packets: int) -> None:
        raise Stop("from the callback")

    try:
        with pytest.raises(Stop, match="from the callback"):
            shortflow.analyze(fifo, progress=progress)
    finally:
        t.join()


def test_cli_progress_shows_packets_and_their_rate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 10 item 5: the reading's progress says how many packets were read and how fast
    (the bar on a terminal and the plain line elsewhere carry the same text), and from a
    pipe it moves as packets come: the core publishes after each read of its input, not
    only every 65,536 packets (this trace has ~6,000)."""
    from typer.testing import CliRunner

    from shortflow.cli import app, common

    trace = tmp_path / "t.pcap"
    shortflow.generate(trace, connections=200)
    data = trace.read_bytes()
    fifo = tmp_path / "slow.pcap"
    os.mkfifo(fifo)

    def writer() -> None:
        # Half the trace, then a pause longer than the core's 100 ms between progress calls
        # and the plain line's beat (shortened below).
        with fifo.open("wb") as w:
            w.write(data[: len(data) // 2])
            w.flush()
            time.sleep(0.6)
            w.write(data[len(data) // 2:])

    monkeypatch.setattr(common, "PLAIN_PROGRESS_EVERY_S", 0.05)
    t = threading.Thread(target=writer)
    t.start()
    try:
        r = CliRunner().invoke(app, ["analyze", str(fifo)])
    finally:
        t.join()
    assert r.exit_code == 0, r.output
    lines = [line for line in r.stderr.splitlines() if line.startswith("reading:")]
    assert any(" packets, " in line and " M packets/s" in line for line in lines), r.stderr
