"""The exchanges table against tshark on real keep-alive captures: each connection's
requests and responses (from sequence numbers and ACKs alone) are the HTTP messages
tshark reads from their payload, byte for byte, wherever tshark can read them (a response
whose segments were lost before the capture point it cannot reassemble)."""

from __future__ import annotations

import collections
import shutil
import subprocess
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


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_exchange_sizes_are_tsharks_http_messages(name: str) -> None:
    a = shortflow.analyze(str(DATA / name))
    assert not a.errors
    port_of = dict(zip(a.table.column("conn_id").to_pylist(), a.table.column("client_port").to_pylist()))
    ours: dict[int, list[tuple[int, int]]] = collections.defaultdict(list)
    for r in a.exchanges.to_pylist():
        ours[port_of[r["conn_id"]]].append((r["request_bytes"], r["response_bytes"]))
    compared = 0
    for port, (requests, responses) in tshark_messages(DATA / name).items():
        # tshark's k-th request is our exchange k's (a server speaking first would shift
        # them: none does in these captures).
        mine = [x for x in ours[port] if x[0]]
        assert [b for _, b in requests] == [q for q, _ in mine], f"{name} port {port}: requests"
        for k, (frame, _) in enumerate(requests):
            if frame in responses:
                assert mine[k][1] == responses[frame], f"{name} port {port}, request {k}: response"
                compared += 1
    assert compared == CAPTURES[name], f"{name}: {compared} responses compared"
