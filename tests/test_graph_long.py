"""A connection of 10^6 segments (a 1.4 GB download, headers captured) drawn by `graph`
and `analyze --report`: thinned to what a figure shows, in bounded memory, its gaps and
retransmissions still drawn."""

from __future__ import annotations

import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

SEGMENTS = 1_000_000
MSS = 1448
#: Segments lost before the capture point (resent 200 ms later by timeout).
LOST = {250_000, 600_000}


def _frame(src: bytes, dst: bytes, sport: int, dport: int, seq: int, ack: int, flags: int, payload: int,
           ip_id: int) -> bytes:
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + payload, ip_id & 0xFFFF, 0, 64, 6, 0, src, dst)
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + ip + tcp


def _download(path: Path) -> Path:
    """One connection: the handshake, `SEGMENTS` segments of `MSS` bytes every 10 µs from
    the server (those of `LOST` seen only when resent 200 ms later), an ACK every second
    segment, a 3 s pause at the middle, and both FINs. Headers only (54 bytes a frame)."""
    c, s = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 54, 1)]
    t_us = 0
    ids = {"c": 0, "s": 0}

    def put(from_client: bool, seq: int, ack: int, flags: int, payload: int = 0) -> None:
        side = "c" if from_client else "s"
        ids[side] += 1
        f = _frame(c, s, 40000, 80, seq, ack, flags, payload, ids[side]) if from_client else \
            _frame(s, c, 80, 40000, seq, ack, flags, payload, ids[side])
        out.append(struct.pack("<IIII", 1_700_000_000 + t_us // 1_000_000, t_us % 1_000_000, 54, 54 + payload))
        out.append(f)

    cisn, sisn = 1000, 5000
    put(True, cisn, 0, 0x02)
    t_us += 40_000
    put(False, sisn, cisn + 1, 0x12)
    t_us += 40_000
    put(True, cisn + 1, sisn + 1, 0x10)
    resend = []
    for k in range(SEGMENTS):
        t_us += 10
        if k == SEGMENTS // 2:
            t_us += 3_000_000
        seq = sisn + 1 + k * MSS
        if k in LOST:
            resend.append((t_us + 200_000, seq))
        else:
            put(False, seq, cisn + 1, 0x10, MSS)
        while resend and resend[0][0] <= t_us:
            _, rseq = resend.pop(0)
            put(False, rseq, cisn + 1, 0x10, MSS)
        if k % 2:
            put(True, cisn + 1, sisn + 1 + (k + 1) * MSS, 0x10)
    end = sisn + 1 + SEGMENTS * MSS
    t_us += 1000
    put(False, end, cisn + 1, 0x11)
    t_us += 40_000
    put(True, cisn + 1, end + 1, 0x11)
    t_us += 40_000
    put(False, end + 1, cisn + 2, 0x10)
    path.write_bytes(b"".join(out))
    return path


@pytest.fixture(scope="module")
def download(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _download(tmp_path_factory.mktemp("long") / "download.pcap")


def _peak_mib(*command: str) -> tuple[float, str]:
    """Runs `command` in a fresh process of its own; its peak RSS (MiB) and its output."""
    measure = ("import resource, subprocess, sys; "
               "r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
               "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
               "print(r.stdout + r.stderr)")
    out = subprocess.run([sys.executable, "-c", measure, *command], capture_output=True, text=True,
                         check=True).stdout
    status, peak_kib = out.splitlines()[0].split()
    assert status == "0", out
    return int(peak_kib) / 1024, out


def test_graph_of_a_million_segments_is_thinned_in_bounded_memory(download, tmp_path):
    svg = tmp_path / "g.svg"
    peak, out = _peak_mib(sys.executable, "-m", "shortflow", "graph", str(download), "--conn", "0", "-o", str(svg))
    assert peak < 300, f"{peak:.0f} MiB"
    assert re.search(r"thinned: [\d,]+ of 1,500,00\d packets drawn", out), out
    doc = svg.read_text()
    # The two resends, the 3 s pause labelled as the server's, both FINs: still drawn.
    assert len(re.findall(r'id="retx_timeout-', doc)) == len(LOST)
    assert re.search(r'id="gap_[a-z_]+-\d+-\d+"', doc)
    assert len(re.findall(r'id="fin-', doc)) == 2
    assert 'id="thinned-note"' in doc
    marks = len(re.findall(r'id="data-', doc))
    assert 1000 < marks < 10_000, marks


def test_a_zoom_draws_every_packet_of_its_span(download, tmp_path):
    svg = tmp_path / "z.svg"
    # 5 ms of the download, 10 µs a segment: ~500 segments, every one drawn.
    _, out = _peak_mib(sys.executable, "-m", "shortflow", "graph", str(download), "--conn", "0", "-o", str(svg),
                       "--from", "1s", "--to", "1.005s")
    assert "thinned" not in out
    marks = len(re.findall(r'id="data-', svg.read_text()))
    assert 490 <= marks <= 510, marks


def test_the_report_on_a_million_segments_is_bounded(download, tmp_path):
    peak, _ = _peak_mib(sys.executable, "-m", "shortflow", "analyze", str(download), "--report", str(tmp_path / "r"))
    assert peak < 300, f"{peak:.0f} MiB"
    page = (tmp_path / "r" / "report.html").read_text()
    assert 'alt="time-sequence graph of connection 0"' in page
    assert re.search(r"[\d,]+ of 1,500,00\d packets drawn: of each kind", page)
