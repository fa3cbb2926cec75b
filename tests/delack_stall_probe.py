"""The classic delayed-ACK stall on a kept-alive connection, for the analyzer's real-kernel
test (tests/test_trace_delack_kernel.py), run inside the test's namespaces as plain scripts.

    python delack_stall_probe.py server PORT EXCHANGES
    python delack_stall_probe.py client HOST PORT EXCHANGES nagle|nodelay

The client sends EXCHANGES requests of 200 bytes on one connection, each answered by 2,000
bytes; the last request is written in two halves of 100 bytes. With Nagle's algorithm on,
the second half waits until the first is acknowledged (tcp_nagle_check: a small segment is
still unacknowledged), and the server, past the first exchange in "ping-pong" mode
(tcp_event_data_sent → inet_csk_inc_pingpong_cnt), delays that ACK (tcp_in_quickack_mode is
false; the delayed-ACK timer, at least TCP_DELACK_MIN = 40 ms): the client stalls for the
delayed ACK. With TCP_NODELAY the second half leaves at once and nothing stalls. Each side
prints one JSON line.
"""

from __future__ import annotations

import json
import socket
import sys
import time

REQUEST, RESPONSE = 200, 2000


def recv_exactly(s: socket.socket, n: int) -> None:
    got = 0
    while got < n:
        chunk = s.recv(n - got)
        if not chunk:
            raise SystemExit(f"peer closed after {got} of {n} bytes")
        got += len(chunk)


def server(port: int, exchanges: int) -> None:
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(1)
    print("listening", flush=True)
    c, _ = ls.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # the responses leave at once
    for _ in range(exchanges):
        recv_exactly(c, REQUEST)
        c.sendall(b"r" * RESPONSE)
    c.shutdown(socket.SHUT_WR)
    while c.recv(65536):
        pass
    print(json.dumps({"exchanges": exchanges}), flush=True)


def client(host: str, port: int, exchanges: int, mode: str) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1 if mode == "nodelay" else 0)
    s.settimeout(30)
    s.connect((host, port))
    split_at = 0.0
    for i in range(exchanges):
        if i < exchanges - 1:
            s.sendall(b"q" * REQUEST)
        else:
            s.sendall(b"q" * (REQUEST // 2))
            split_at = time.monotonic()
            s.sendall(b"q" * (REQUEST // 2))
        recv_exactly(s, RESPONSE)
    last_s = time.monotonic() - split_at
    s.shutdown(socket.SHUT_WR)
    while s.recv(65536):
        pass
    s.close()
    print(json.dumps({"last_exchange_s": last_s}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(int(sys.argv[2]), int(sys.argv[3]))
    else:
        client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
