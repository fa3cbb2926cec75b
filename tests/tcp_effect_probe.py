"""A server and a client for the tune effect tests, run inside a test's namespaces (and
cgroup) as plain scripts. Each prints one JSON line with what the kernel says about its
socket (`TCP_INFO`: tcpi_rto, tcpi_snd_cwnd, ...) at the moments the tests look at.

    python tcp_effect_probe.py server PORT REQUEST_BYTES RESPONSE_BYTES [IDLE_S] [CC] [READ_DELAY_S]
    python tcp_effect_probe.py client HOST PORT REQUEST_BYTES [DRIBBLE_N DRIBBLE_GAP_S [SOURCE_IP]]

The server accepts one connection, reads the REQUEST_BYTES of the request, sends the response, waits until all
of it is acknowledged; with IDLE_S it then idles that long and sends one more segment (slow
start after idle acts when data is sent after an idle period longer than the RTO). The client
sends its request (or DRIBBLE_N lone 100-byte segments DRIBBLE_GAP_S apart: the delayed-ACK
tests, where the server reads nothing for READ_DELAY_S, since an application reading a pushed
segment at once makes Linux acknowledge it at once, tcp_cleanup_rbuf()) and reads the response to its end.
"""

from __future__ import annotations

import json
import socket
import struct
import sys
import time

TCP_INFO_LEN = 104
#: Offsets in struct tcp_info (include/uapi/linux/tcp.h).
FIELDS = {"rto_us": 8, "ato_us": 12, "unacked": 24, "rtt_us": 68, "rttvar_us": 72, "snd_cwnd": 80}


def info(s: socket.socket) -> dict[str, int]:
    raw = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN)
    return {k: struct.unpack_from("I", raw, off)[0] for k, off in FIELDS.items()}


def wait_acked(s: socket.socket, limit_s: float = 10.0) -> None:
    deadline = time.monotonic() + limit_s
    while info(s)["unacked"] and time.monotonic() < deadline:
        time.sleep(0.002)


def server(port: int, request: int, response: int, idle_s: float, cc: str | None, read_delay_s: float) -> None:
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if cc:
        ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    ls.bind(("0.0.0.0", port))
    ls.listen(8)
    print("listening", flush=True)
    c, _ = ls.accept()
    out: dict[str, object] = {"accepted": info(c)}
    time.sleep(read_delay_s)
    got = 0
    while got < request and (chunk := c.recv(65536)):
        got += len(chunk)
    c.sendall(b"r" * response)
    wait_acked(c)
    out["sent"] = info(c)
    if idle_s:
        time.sleep(idle_s)
        out["before_idle_send"] = info(c)
        c.send(b"x")
        out["after_idle_send"] = info(c)
        wait_acked(c)
    c.shutdown(socket.SHUT_WR)
    while c.recv(65536):
        pass
    out["closed"] = info(c)
    print(json.dumps(out), flush=True)


def client(host: str, port: int, request: int, dribble_n: int, gap_s: float, source: str) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if source:
        s.bind((source, 0))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(30)
    s.connect((host, port))
    out: dict[str, object] = {"connected": info(s), "local_port": s.getsockname()[1]}
    if dribble_n:
        for _ in range(dribble_n):
            s.send(b"d" * 100)
            time.sleep(gap_s)
        out["dribbled"] = info(s)
    else:
        s.sendall(b"q" * request)
    got = 0
    while chunk := s.recv(65536):
        got += len(chunk)
    out["received"] = got
    out["done"] = info(s)
    s.close()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]) if len(sys.argv) > 5 else 0.0,
               sys.argv[6] if len(sys.argv) > 6 and sys.argv[6] else None,
               float(sys.argv[7]) if len(sys.argv) > 7 else 0.0)
    else:
        client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]) if len(sys.argv) > 5 else 0,
               float(sys.argv[6]) if len(sys.argv) > 6 else 0.0, sys.argv[7] if len(sys.argv) > 7 else "")
