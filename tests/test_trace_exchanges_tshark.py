"""The exchanges table against tshark on real keep-alive captures: each connection's
requests and responses (from sequence numbers and ACKs alone) are the HTTP messages
tshark reads from their payload, byte for byte, wherever tshark can read them (a response
whose segments were lost before the capture point it cannot reassemble)."""

from __future__ import annotations

import collections
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import shortflow

DATA = Path(__file__).parent / "data" / "real"

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is the peer: `make deps` installs it")

#: Captures of HTTP/1.x keep-alive connections (tests/data/real/SOURCES.md) and the number
#: of exchanges tshark reads in each (so a capture that stopped parsing fails).
CAPTURES = {
    "postman-firefox-nginx-keepalive.pcap": 2,
    "pcap2har-github-pageload.pcap": 2,
    "pcap2har-pcapr-losses-keepalive.pcap": 37,
    "pcap2har-http-keepalive-fin-late.pcap": 2,
    "three_http_streams.pcap": 3,
    "dpkt-pppoe-l2tp-ipv6-http.pcap": 3,
    # An answer 1.16 s after its request: a server's long think is its answer's wait, not
    # a rest that begins another exchange.
    "sv-http-slow-answer-keepalive.pcap": 4,
}


def tshark_messages(path: Path) -> dict[int, tuple[list[tuple[int, int]], dict[int, int]]]:
    """Per client port: its requests as (frame, bytes) in order, and the responses' bytes
    by the frame of the request they answer. A message's bytes are tshark's reassembled
    length (or the segment's, when one segment holds it)."""
    fields = ["tcp.srcport", "tcp.dstport", "http.request", "http.request_in", "tcp.reassembled.length", "tcp.len",
              "frame.number"]
    out = subprocess.run(["tshark", "-n", "-r", str(path), "-Y", "tcp && (http.request || http.response)", "-T",
                          "fields", *(a for f in fields for a in ("-e", f))],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    by_port: dict[int, tuple[list[tuple[int, int]], dict[int, int]]] = collections.defaultdict(lambda: ([], {}))
    for line in out.splitlines():
        sport, dport, is_request, request_in, reassembled, seg_len, frame = line.split("\t")
        size = int(reassembled or seg_len)
        if is_request:
            by_port[int(sport)][0].append((int(frame), size))
        elif request_in:
            by_port[int(dport)][1][int(request_in)] = size
    return by_port


def exchange_differences(path: Path) -> tuple[int, list[str]]:
    """The analyzer's exchanges against tshark's HTTP messages in the capture at `path`:
    how many responses were compared, and each difference in words (a client port whose
    requests differ, a response whose size differs). Ports that carry several connections
    are passed over."""
    a = shortflow.analyze(str(path))
    ports = a.table.column("client_port").to_pylist()
    reused = {p for p, n in collections.Counter(ports).items() if n > 1}
    port_of = dict(zip(a.table.column("conn_id").to_pylist(), ports))
    ours: dict[int, list[tuple[int, int]]] = collections.defaultdict(list)
    for r in a.exchanges.to_pylist():
        ours[port_of[r["conn_id"]]].append((r["request_bytes"], r["response_bytes"]))
    compared, differences = 0, []
    for port, (requests, responses) in tshark_messages(path).items():
        if port in reused:
            continue
        # tshark's k-th request is our exchange k's (a server speaking first would shift
        # them: none does in the kept captures).
        mine = [x for x in ours[port] if x[0]]
        if [b for _, b in requests] != [q for q, _ in mine]:
            differences.append(f"port {port}: requests {[b for _, b in requests]}, ours {[q for q, _ in mine]}")
            continue
        for k, (frame, _) in enumerate(requests):
            if frame in responses:
                compared += 1
                if mine[k][1] != responses[frame]:
                    differences.append(f"port {port}, request {k}: response {responses[frame]}, ours {mine[k][1]}")
    return compared, differences


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_exchange_sizes_are_tsharks_http_messages(name: str) -> None:
    assert not shortflow.analyze(str(DATA / name)).errors
    compared, differences = exchange_differences(DATA / name)
    assert not differences, f"{name}: {differences}"
    assert compared == CAPTURES[name], f"{name}: {compared} responses compared"


def test_the_sweep_compares_a_directory_of_captures(tmp_path: Path) -> None:
    # `benches/tshark_sweep.py --exchanges` runs the comparison above over every file.
    for name in ("three_http_streams.pcap", "sv-http-slow-answer-keepalive.pcap"):
        (tmp_path / name).symlink_to(DATA / name)
    script = Path(__file__).resolve().parents[1] / "benches" / "tshark_sweep.py"
    r = subprocess.run([sys.executable, str(script), str(tmp_path), "--exchanges"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "2 of 2 files with HTTP; exchanges as tshark's messages in 2", r.stdout
