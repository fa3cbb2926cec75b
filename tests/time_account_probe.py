"""A scripted conversation for the time-account tests, run in a test's namespaces as a
plain script: the real kernel's stacks at both ends, the script's own clock for the truth.

    python time_account_probe.py server PORT PLAN_JSON
    python time_account_probe.py client HOST PORT PLAN_JSON

PLAN_JSON: ``{"exchanges": [{"pause_s", "request", "think_s", "response"}, ...],
"end_pause_s", "end": "close"|"reset", "client_rcvbuf", "read_delay_s"}``. For each exchange
the client pauses ``pause_s`` (after the last response arrived), sends ``request`` bytes;
the server reads them, thinks ``think_s``, answers ``response`` bytes. The client then
waits ``end_pause_s`` and closes (FIN) or resets (SO_LINGER 0: a RST). With
``client_rcvbuf`` the client's receive buffer is that small and it reads nothing of the
first response for ``read_delay_s``: its window closes with everything acknowledged.

Each side prints one JSON line: the times (monotonic, s) of what it did, for the test;
the server adds its socket's TCP_INFO once its last answer was acknowledged: the time its
sending was limited by the receiver's window (``rwnd_limited_us``) and busy
(``busy_us``), the kernel's own accounts (`tcp_chrono`, Linux 4.9).
"""

from __future__ import annotations

import json
import socket
import struct
import sys
import time
from typing import Any

#: struct tcp_info (include/uapi/linux/tcp.h): tcpi_unacked, tcpi_busy_time, tcpi_rwnd_limited.
TCP_INFO_LEN, UNACKED, BUSY, RWND_LIMITED = 192, 24, 168, 176


def sending_info(s: socket.socket) -> dict[str, int]:
    """Waits until everything sent is acknowledged; the kernel's busy and window-limited times."""
    deadline = time.monotonic() + 30
    while True:
        raw = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN)
        if struct.unpack_from("I", raw, UNACKED)[0] == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.002)
    return {"busy_us": struct.unpack_from("Q", raw, BUSY)[0], "rwnd_limited_us": struct.unpack_from("Q", raw, RWND_LIMITED)[0]}


def recv_exactly(s: socket.socket, n: int) -> None:
    got = 0
    while got < n:
        chunk = s.recv(min(65536, n - got))
        if not chunk:
            raise ConnectionError(f"peer closed after {got} of {n} bytes")
        got += len(chunk)


def server(port: int, plan: dict[str, Any]) -> None:
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(4)
    print("listening", flush=True)
    c, _ = ls.accept()
    out: dict[str, Any] = {"answered_at": []}
    for ex in plan["exchanges"]:
        recv_exactly(c, ex["request"])
        time.sleep(ex["think_s"])
        out["answered_at"].append(time.monotonic())
        c.sendall(b"r" * ex["response"])
        out.update(sending_info(c))
    # Until the client closes or resets.
    try:
        while c.recv(65536):
            pass
    except ConnectionResetError:
        out["reset"] = True
    c.close()
    print(json.dumps(out), flush=True)


def client(host: str, port: int, plan: dict[str, Any]) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if plan.get("client_rcvbuf"):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, plan["client_rcvbuf"])
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(30)
    s.connect((host, port))
    out: dict[str, Any] = {"connected_at": time.monotonic(), "sent_at": [], "received_at": []}
    for i, ex in enumerate(plan["exchanges"]):
        time.sleep(ex["pause_s"])
        out["sent_at"].append(time.monotonic())
        s.sendall(b"q" * ex["request"])
        if i == 0 and plan.get("read_delay_s"):
            time.sleep(plan["read_delay_s"])
        recv_exactly(s, ex["response"])
        out["received_at"].append(time.monotonic())
    time.sleep(plan.get("end_pause_s", 0.0))
    if plan.get("end") == "reset":
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    out["ended_at"] = time.monotonic()
    s.close()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(int(sys.argv[2]), json.loads(sys.argv[3]))
    else:
        client(sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4]))
