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


def _idle_fifo(tmp_path: Path, data: bytes, release: threading.Event) -> tuple[Path, threading.Thread]:
    """A FIFO whose writer sends `data` and then holds the pipe open, sending nothing,
    until `release` (a live capture on a quiet link)."""
    fifo = tmp_path / "live.pcap"
    os.mkfifo(fifo)

    def writer() -> None:
        try:
            with fifo.open("wb") as w:
                w.write(data)
                w.flush()
                release.wait(30)
        except BrokenPipeError:
            pass

    t = threading.Thread(target=writer)
    t.start()
    return fifo, t


def test_ctrl_c_while_a_pipe_is_idle_ends_the_reading_and_keeps_its_results(tmp_path: Path) -> None:
    """Ctrl-C is seen by the progress callback (a KeyboardInterrupt there) while the reader
    waits on a pipe that sends nothing: the reading stops at once, and what was read is
    returned, marked interrupted. The reader used to sit in `read` until the next packet
    (here: 30 s), and the interrupt discarded the results."""
    trace = tmp_path / "t.pcap"
    shortflow.generate(trace, connections=200)
    data = trace.read_bytes()
    release = threading.Event()
    fifo, t = _idle_fifo(tmp_path, data[: len(data) // 2], release)
    seen: list[int] = []

    def progress(done: int, total: int, packets: int) -> None:
        seen.append(packets)
        if packets:
            raise KeyboardInterrupt

    try:
        start = time.monotonic()
        a = shortflow.analyze(fifo, progress=progress)
        elapsed = time.monotonic() - start
    finally:
        release.set()
        t.join()
    assert elapsed < 10, f"the reading waited {elapsed:.1f} s for the idle pipe"
    assert a.interrupted
    packets = a.files[0]["packets"]
    assert 0 < max(seen) <= packets, (packets, seen)
    assert a.summary["packets"] == packets
    assert "interrupted" in a.files[0]["error"] and a.files[0]["interrupted"]
    assert a.table.num_rows > 0


def test_cli_ctrl_c_on_a_live_pipe_prints_what_was_read(tmp_path: Path) -> None:
    """`tcpdump -w - | shortflow analyze -` and Ctrl-C while the link is quiet: the command
    ends within a second or so, with exit status 130, says it was interrupted, and writes
    the summary of what it read (Ctrl-C used to be silent and lose it)."""
    import signal
    import subprocess
    import sys

    trace = tmp_path / "t.pcap"
    shortflow.generate(trace, connections=200)
    data = trace.read_bytes()
    summary = tmp_path / "s.json"
    with subprocess.Popen([sys.executable, "-m", "shortflow", "analyze", "-", "--summary-json", str(summary)],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as p:
        assert p.stdin is not None and p.stdout is not None and p.stderr is not None
        try:
            p.stdin.write(data[: len(data) // 2])
            p.stdin.flush()
            time.sleep(2)  # start-up, and the half trace read; the pipe then stays open and quiet
            p.send_signal(signal.SIGINT)
            start = time.monotonic()
            status = p.wait(timeout=20)
            elapsed = time.monotonic() - start
            out, err = p.stdout.read().decode(), p.stderr.read().decode()
        finally:
            if p.poll() is None:
                p.kill()
    assert status == 130, err
    assert elapsed < 5, f"{elapsed:.1f} s from Ctrl-C to the end"
    # Said as warnings (Ctrl-C is no fault of the input), never as an error or a traceback.
    assert "warning: -: byte " in err and "reading interrupted" in err, err
    assert "error:" not in err and "Traceback" not in err, err
    import json

    doc = json.loads(summary.read_text())
    assert doc["packets"] > 0, (doc["packets"], err)
    assert "users waited" in out


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_progress_counts_every_packet_read_before_the_pipe_goes_quiet(tmp_path: Path, fmt: str) -> None:
    """Issue 10 item 5, on a live pipe: while the reader waits for the next packet, the
    published count holds every packet it has read (it used to leave out those of the
    last read of input until the next one came)."""
    trace = tmp_path / f"t.{fmt}"
    shortflow.generate(trace, connections=100, format=fmt)
    total = shortflow.analyze(trace).files[0]["packets"]
    release = threading.Event()
    fifo, t = _idle_fifo(tmp_path, trace.read_bytes(), release)
    seen: list[int] = []

    def progress(done: int, total_bytes: int, packets: int) -> None:
        seen.append(packets)
        # Stop once the count has stood still for three calls (~0.2 s): the pipe is quiet.
        if packets and seen[-3:] == [packets] * 3:
            raise KeyboardInterrupt

    try:
        a = shortflow.analyze(fifo, progress=progress)
    finally:
        release.set()
        t.join()
    assert a.interrupted
    assert seen[-1] == a.files[0]["packets"] == total, (seen[-5:], total)
