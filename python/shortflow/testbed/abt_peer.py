"""The testbed's a-b-t client and server: replay tmix connection vectors on real sockets,
run inside the client and server namespaces as plain scripts (they import nothing from
shortflow, so they start fast).

    python abt_peer.py server IP PORT PLAN.json
    python abt_peer.py client SERVER_IP PORT PLAN.json

PLAN.json is a list of connections, each ``{"port": the client's source port, "start_s":
seconds after the client starts, "epochs": [[request, response_delay_us, response,
interval_us], ...]}`` (a sequential vector: keep-alive request/response exchanges with
the server's think time and the client's pause) or ``{"port", "start_s", "concurrent":
[[[bytes, wait_us], ...], [[bytes, wait_us], ...]]}`` (both sides send their ADUs on
their own clocks). Options, per connection: ``"stall_ms"``: the client stops reading for
that long before each response, with a small receive buffer, so its window closes (the
server's zero-window probes); ``"reset"``: after the last exchange and its pause the client
aborts the connection with a RST instead of closing it.

The server knows a connection's vector by the client's source port: no byte is added to
what the vectors send. The client prints one JSON line per connection (its source port,
wall-clock times of each step, errors); the server prints nothing unless it fails.
"""

from __future__ import annotations

import array
import fcntl
import json
import os
import socket
import struct
import sys
import threading
import time
from typing import Any

CHUNK = 65536
#: A stalled reader's receive buffer (the kernel doubles it): smaller than a response, so that
#: the response fills it and the window closes.
STALL_RCVBUF = 16384
#: Linux's ioctl for the bytes of a socket's send queue not yet sent (linux/sockios.h).
SIOCOUTQNSD = 0x894B


def send(s: socket.socket, n: int) -> None:
    """Writes `n` bytes with sendfile, from a file of zeros: nginx's path for a static
    response. The write path sets the receiver's window on the testbed's veth links (the
    sender's skbs arrive as they were built, and tcp_measure_rcv_mss takes the receiver's
    tp->scaling_ratio from their payload over truesize): measured here, a sendfile's
    skbs give 64/256, the window falling to 32 x 1024 B on the default 128 kB buffer, as
    the simulator's Linux receiver models; bytes copied from a user buffer give ~160/256,
    the window growing to 80 x 1024 B within the first flight."""
    src = _zeros_file()
    while n > 0:
        n -= os.sendfile(s.fileno(), src, 0, min(n, CHUNK))


_ZEROS_FD: list[int] = []


def _zeros_file() -> int:
    """One in-memory file of `CHUNK` zeros per process, opened once."""
    if not _ZEROS_FD:
        fd = os.memfd_create("abt-zeros")
        os.write(fd, bytes(CHUNK))
        _ZEROS_FD.append(fd)
    return _ZEROS_FD[0]


def receive(s: socket.socket, n: int) -> None:
    """Reads exactly `n` bytes; the peer closing before is an error."""
    buf = bytearray(CHUNK)
    while n > 0:
        got = s.recv_into(buf, min(n, CHUNK))
        if got == 0:
            raise OSError(f"the peer closed with {n} bytes still expected")
        n -= got


def wait_us(us: int) -> None:
    if us > 0:
        time.sleep(us / 1e6)


def wait_until_sent(s: socket.socket) -> None:
    """Returns once the kernel has sent every byte written to `s` (each at least once)."""
    unsent = array.array("i", [0])
    while True:
        fcntl.ioctl(s.fileno(), SIOCOUTQNSD, unsent, True)
        if unsent[0] == 0:
            return
        time.sleep(0.0005)


def concurrent(s: socket.socket, mine: list[list[int]], theirs: list[list[int]]) -> None:
    """Sends this side's ADUs while reading all of the peer's, each ADU followed by its
    wait from the moment its last byte left: a side's quiet time, as the a-b-t model
    measures it on the wire, runs from an ADU's last byte to the next one's first."""
    reader = threading.Thread(target=receive, args=(s, sum(b for b, _ in theirs)), daemon=True)
    reader.start()
    for k, (size, wait) in enumerate(mine):
        send(s, size)
        if k + 1 < len(mine):
            wait_until_sent(s)
            wait_us(wait)
    reader.join()


# -- the server --------------------------------------------------------------------------

def serve_one(s: socket.socket, plan: dict[str, Any]) -> None:
    try:
        if "concurrent" in plan:
            init, acc = plan["concurrent"]
            concurrent(s, acc, init)
        else:
            for request, delay, response, _ in plan["epochs"]:
                receive(s, request)
                wait_us(delay)
                send(s, response)
        # The client closes (or resets) when its vector ends: then so does the server.
        while s.recv(CHUNK):
            pass
    except OSError:
        pass  # a reset is part of some vectors; the client reports what it saw
    finally:
        s.close()


def server(ip: str, port: int, plans: list[dict[str, Any]]) -> None:
    by_port = {int(p["port"]): p for p in plans}
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((ip, port))
    ls.listen(256)
    while True:
        s, (_, peer_port) = ls.accept()
        plan = by_port.get(peer_port)
        if plan is None:
            s.close()
            continue
        threading.Thread(target=serve_one, args=(s, plan), daemon=True).start()


# -- the client --------------------------------------------------------------------------

def run_one(host: str, port: int, plan: dict[str, Any], t0: float, out: list[dict[str, Any]]) -> None:
    r: dict[str, Any] = {"local_port": int(plan["port"])}
    delay = t0 + float(plan.get("start_s", 0.0)) - time.time()
    if delay > 0:
        time.sleep(delay)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    stall = float(plan.get("stall_ms", 0)) / 1e3
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if stall:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, STALL_RCVBUF)
        s.bind(("", int(plan["port"])))
        for opt in (socket.SO_RCVTIMEO, socket.SO_SNDTIMEO):
            s.setsockopt(socket.SOL_SOCKET, opt, struct.pack("ll", 120, 0))
        r["start"] = time.time()
        s.connect((host, port))
        r["connected"] = time.time()
        steps: list[dict[str, float]] = []
        if "concurrent" in plan:
            init, acc = plan["concurrent"]
            concurrent(s, init, acc)
            steps.append({"done": time.time()})
        else:
            epochs = plan["epochs"]
            for k, (request, _, response, interval) in enumerate(epochs):
                step = {"request_sent": time.time()}
                send(s, request)
                if stall and response:
                    time.sleep(stall)
                receive(s, response)
                step["response_received"] = time.time()
                steps.append(step)
                if k + 1 < len(epochs) or plan.get("reset"):
                    wait_us(interval)
        r["exchanges"] = steps
        if plan.get("reset"):
            # SO_LINGER with a zero timeout: close sends a RST, not a FIN.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        r["closed"] = time.time()
    except OSError as e:
        r["error"] = f"{type(e).__name__}: {e}"
    finally:
        s.close()
    out.append(r)


def client(host: str, port: int, plans: list[dict[str, Any]]) -> None:
    t0 = time.time()
    out: list[dict[str, Any]] = []
    threads = [threading.Thread(target=run_one, args=(host, port, p, t0, out)) for p in plans]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in sorted(out, key=lambda r: r["local_port"]):
        print(json.dumps(r), flush=True)


def main() -> None:
    role, host, port, plan_path = sys.argv[1:5]
    with open(plan_path) as f:
        plans = json.load(f)
    (server if role == "server" else client)(host, int(port), plans)


if __name__ == "__main__":
    main()
