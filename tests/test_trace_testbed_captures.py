"""The analyzer on captures the testbed made that once tripped it (tests/data/testbed)."""

from __future__ import annotations

from pathlib import Path

import shortflow

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
