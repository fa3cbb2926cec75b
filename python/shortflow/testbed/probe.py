"""The built-in HTTP client, run inside the client namespace as a plain script (it imports
nothing from shortflow, so it starts fast): sequential connections, each one request of an
exact size and one response read to its end, with per-phase wall-clock times (the clock
tcpdump stamps packets with) printed as one JSON line per connection.

    python probe.py SERVER PORT PATH REQUEST_BYTES CONNECTIONS INTERVAL_S

It asks for real-time scheduling (SCHED_FIFO) first, so that it reads each segment as soon
as the kernel queues it, as the simulator's application does. What the kernel's receiver
announces depends on when the application reads: a read frees buffer space and may send
the ACK that `__tcp_ack_snd_check` held back (`tcp_cleanup_rbuf`), and autotuning runs in
the read (`tcp_rcv_space_adjust`). On a loaded machine a normal-priority reader woke up
after 4-18 segments (in the random agreement suite), which held ACKs and autotuning back by a
flight. Each result line says which priority the client got (`realtime`).
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
import time


def request(host: str, path: str, size: int) -> bytes:
    """A GET padded with an `X-Pad` header to exactly `size` bytes."""
    head = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n"
    bare = len(head) + len("X-Pad: \r\n\r\n")
    if size < bare:
        raise SystemExit(f"request size {size} B is below the {bare} B a GET needs")
    return (head + "X-Pad: " + "p" * (size - bare) + "\r\n\r\n").encode()


def one(host: str, port: int, path: str, req: bytes) -> dict[str, object]:
    r: dict[str, object] = {"start": time.time()}
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(120)
    buf = bytearray(65536)
    view = memoryview(buf)
    try:
        s.connect((host, port))
        r["connected"] = time.time()
        # Blocking reads with the kernel's own timeout (SO_RCVTIMEO): one system call per
        # read, where Python's timeout polls before each recv; into one buffer, where recv
        # allocates 64 KiB a call. The reader must keep up with a segment every ~40 µs
        # (300 Mbit/s): the kernel sends its ACKs as the reads free the window.
        s.settimeout(None)
        for opt in (socket.SO_RCVTIMEO, socket.SO_SNDTIMEO):
            s.setsockopt(socket.SOL_SOCKET, opt, struct.pack("ll", 120, 0))
        s.sendall(req)
        r["request_sent"] = time.time()
        # Streamed: only the header is kept, the body is counted (a 2 GB response must
        # not be held in memory).
        head = bytearray()
        body_bytes = -1
        while n := s.recv_into(buf):
            if body_bytes >= 0:
                body_bytes += n
                continue
            if "first_byte" not in r:
                r["first_byte"] = time.time()
            head += view[:n]
            end = head.find(b"\r\n\r\n")
            if end >= 0:
                body_bytes = len(head) - end - 4
                del head[end:]
            elif len(head) > 1 << 16:
                raise OSError("no end of the HTTP header in the first 64 KiB")
        r["complete"] = time.time()
        head_bytes = bytes(head)
        r["status"] = int(head_bytes.split(b" ", 2)[1]) if head_bytes.startswith(b"HTTP/") else None
        r["header_bytes"] = len(head_bytes) + 4
        r["body_bytes"] = max(body_bytes, 0)
        r["local_port"] = s.getsockname()[1]
    except OSError as e:
        r["error"] = f"{type(e).__name__}: {e}"
    finally:
        s.close()
    return r


#: SCHED_FIFO priority: above every normal task, below the kernel's own threaded IRQs (50).
RT_PRIORITY = 10


def realtime() -> bool:
    """SCHED_FIFO for this process when the system allows it (root here); False if not."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RT_PRIORITY))
    except (OSError, AttributeError):
        return False
    return True


def main() -> None:
    host, port, path, size, count, interval = sys.argv[1:7]
    rt = realtime()
    req = request(host, path, int(size))
    t0 = time.time()
    for i in range(int(count)):
        # Connections start on a fixed grid, so a slow one does not shift the next.
        wait = t0 + i * float(interval) - time.time()
        if wait > 0:
            time.sleep(wait)
        print(json.dumps({**one(host, int(port), path, req), "realtime": rt}), flush=True)


if __name__ == "__main__":
    main()
