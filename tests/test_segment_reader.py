"""The per-segment view of captures (`shortflow.tcp.read_pcap`, which the testbed's tests
use) comes from the analyzer's own readers (`_core.segments`): checked field by field
against tshark, and on a damaged file."""

from __future__ import annotations

import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

import shortflow
from shortflow.exceptions import TraceReadError
from shortflow.tcp import read_pcap


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed (make deps installs it)")
@pytest.mark.parametrize(("link", "fmt", "ipv6"), [("ethernet", "pcap", False), ("sll2", "pcapng", True)])
def test_segments_equal_tsharks(tmp_path: Path, link: str, fmt: str, ipv6: bool) -> None:
    path = tmp_path / f"t.{fmt}"
    shortflow.generate(path, connections=30, seed=5, syn_loss=0.2, link=link, format=fmt, ipv6=ipv6)
    segs = list(read_pcap(path))
    # Times compared in ns from the core's integer column (a float epoch loses the last digits).
    ts_ns = shortflow._core.segments(path)["ts_ns"].tolist()
    ours = [(t, s.src_port, s.dst_port, s.flags, s.seq, s.payload) for t, s in zip(ts_ns, segs, strict=True)]
    out = subprocess.run(
        ["tshark", "-r", str(path), "-Y", "tcp", "-T", "fields", "-o", "tcp.relative_sequence_numbers:FALSE",
         "-e", "frame.time_epoch", "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "tcp.flags",
         "-e", "tcp.seq", "-e", "tcp.len"],
        capture_output=True, text=True, check=True,
    ).stdout
    theirs = []
    for line in out.splitlines():
        ts, sport, dport, flags, seq, length = line.split("\t")
        theirs.append((int(Decimal(ts) * 10**9), int(sport), int(dport), int(flags, 16) & 0xFF, int(seq), int(length)))
    assert len(ours) > 100
    assert ours == theirs


def test_a_damaged_capture_names_the_file_and_offset(tmp_path: Path) -> None:
    path = tmp_path / "cut.pcap"
    shortflow.generate(path, connections=5, seed=1)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 7])
    with pytest.raises(TraceReadError, match=r"cut\.pcap.*byte"):
        list(read_pcap(path))
