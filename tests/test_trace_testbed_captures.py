"""The analyzer on captures the testbed made that once tripped it (tests/data/testbed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import shortflow
from shortflow import _core

DATA = Path(__file__).parent / "data" / "testbed"


def test_the_answer_to_the_first_ack_is_not_part_of_the_first_flight() -> None:
    # Server-side capture: 10 segments (initcwnd 10), then the ACK of the first and its
    # answer 18 µs later — sooner than the server answered the SYN (37 µs).
    a = shortflow.analyze(DATA / "fast-retransmit-server-side.pcap")
    (row,) = a.table.to_pylist()
    assert (row["iw_segments"], row["iw_bytes"]) == (10, 10 * 1448)
    assert (row["retx_fast_s2c"], row["retx_timeout_s2c"], row["fast_recoveries"]) == (1, 0, 1)


def test_a_capture_of_the_kernels_nflog_is_read() -> None:
    # `tcpdump -i nflog:N` writes each logged packet inside netfilter's attributes: two
    # HTTP downloads of 30,000 bytes on a namespace's loopback (SOURCES.md).
    a = shortflow.analyze(DATA / "nflog-loopback-http.pcap")
    assert not a.errors
    assert (a.files[0]["packets"], a.files[0]["tcp_packets"]) == (24, 24)
    rows = a.table.to_pylist()
    assert [r["outcome"] for r in rows] == ["fin", "fin"]
    # Every payload byte: the sum of tshark's `tcp.len` over the file.
    assert sum(r["bytes_c2s"] + r["bytes_s2c"] for r in rows) == 60_588


def test_a_concurrent_sides_open_write_goes_on_after_the_other_sides_data(tmp_path: Path) -> None:
    # The client's 150,000 B write, cut into by the server's 60,000 B and then resting 31 ms
    # (a lost segment's resend): its last segment carried no PSH, so what it sent next went
    # on with the same write, not a new ADU (SOURCES.md).
    out = tmp_path / "v.abt"
    subprocess.run([sys.executable, "-m", "shortflow", "-q", "analyze",
                    str(DATA / "concurrent-long-write-lossy-server-side.pcap.gz"), "--abt", str(out)], check=True)
    (v,) = _core.abt_parse(out.read_text())
    assert [[n for n, _ in side] for side in v["concurrent"]] == [[150_000], [60_000, 3_000]], v
