"""The analyzer on public captures of real hosts, beside tshark.

The captures come from PcapPlusPlus (public domain, The Unlicense), commit
200853b3a0b5ea2c443d6bee1a67f9c9c67b8f1b; tests/data/real/SOURCES.md names each file's path
there. Every one must be read to its end without error; the data retransmissions agree
with tshark's expert analysis wherever tshark is right, and the tests say where it is not.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

import pytest

import shortflow
from shortflow.analyze import CAUSES

DATA = Path(__file__).parent / "data" / "real"
FILES = sorted(p for p in DATA.iterdir() if p.suffix in (".pcap", ".pcapng", ".gz"))

#: Data (or FIN) segments tshark calls a retransmission of any kind; SYNs are Table 1's.
TSHARK_RETX = (
    "tcp.flags.syn==0 and (tcp.len>0 or tcp.flags.fin==1) and "
    "(tcp.analysis.retransmission or tcp.analysis.fast_retransmission or tcp.analysis.spurious_retransmission)"
)


def _tshark_count(path: Path, tmp: Path, display_filter: str) -> int:
    if path.suffix == ".gz":
        plain = tmp / path.stem
        with gzip.open(path) as src, plain.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        path = plain
    r = subprocess.run(["tshark", "-r", str(path), "-Y", display_filter, "-T", "fields", "-e", "frame.number"],
                       capture_output=True, text=True, timeout=120, check=True)
    return len(r.stdout.split())


def test_the_captures_are_here():
    assert len(FILES) == 11


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_capture_reads_without_error_and_adds_up(path):
    a = shortflow.analyze(path)
    assert not a.errors, a.errors
    assert a.raw_summary["tcp_packets"] > 0
    t = a.table
    # Rows in connection order; the time-lost breakdown adds up to each duration.
    assert t.column("conn_id").to_pylist() == sorted(t.column("conn_id").to_pylist())
    total = sum(t.column(f"time_{c}_s").to_numpy(zero_copy_only=False) for c in CAUSES)
    dur = t.column("duration_s").to_numpy(zero_copy_only=False)
    assert max(abs(total - dur), default=0.0) < 1e-6


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed (make deps installs it)")
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_data_retransmissions_agree_with_tshark(path, tmp_path):
    s = shortflow.analyze(path).raw_summary
    ours = s["timeout_retransmissions"] + s["fast_retransmissions"] + s["tlp_probes"]
    assert ours == _tshark_count(path, tmp_path, TSHARK_RETX)


def test_dsack_proves_retransmissions_spurious_where_tshark_says_nothing(tmp_path):
    # one_tcp_stream.pcap: the client resends 1,420 B at 47 ms and again at 15.47 s; each
    # time the server's next ACK carries a D-SACK block for exactly that range (RFC 2883),
    # so both were spurious. tshark flags them only as "suspected retransmission".
    path = DATA / "one_tcp_stream.pcap"
    a = shortflow.analyze(path)
    row = a.table.to_pylist()[0]
    assert (row["retx_spurious_c2s"], a.raw_summary["spurious_retransmissions"]) == (2, 2)
    assert _tshark_count(path, tmp_path, "tcp.analysis.spurious_retransmission") == 0
    # Its keep-alive (1 byte below the next sequence number) is neither data nor a repair.
    assert row["retx_timeout_c2s"] + row["retx_fast_c2s"] + row["retx_tlp_c2s"] == 2


def test_refused_connection_is_one_refused_try():
    a = shortflow.analyze(DATA / "one_tcp_rst.pcap")
    assert a.summary["connection_tries"] == 1
    assert a.raw_summary["refused_rst"] + a.raw_summary["unsuccessful"] >= 1
    assert a.table.column("handshake").to_pylist()[0] in ("refused_rst", "never_answered")


def test_handshakes_and_rtt_of_clean_streams():
    a = shortflow.analyze(DATA / "three_http_streams.pcap")
    assert a.summary["connection_tries"] == a.summary["successful"] == 3
    assert a.vantage == "client"
    rtt = a.table.column("handshake_rtt_s").to_pylist()
    assert all(0 < r < 1 for r in rtt)
