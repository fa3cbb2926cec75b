"""Resend precision of `shortflow synopt`, from a capture: N connections from the client
namespace to a port whose SYNs the server drops (silent), a client-mode daemon with
-d DELAY -r 3, tcpdump on the client's veth. For each SYN (same port and ISN) the k-th
resend's time minus (original + k × DELAY) is the error: what the kernel's packet tap saw,
so it includes the daemon's queueing, timer and send path. The kernel's own 1 s
retransmission is told apart by its time (> 3 × DELAY + 100 ms) and left out.

Also the pass-through cost: connect() time of M connections to a listening server, with
and without the daemon (each SYN and SYN/ACK makes a round trip through user space).

    sudo .venv/bin/python benches/synopt_precision.py [CONNECTIONS] [DELAY_MS] [--load] [--no-rt]

`--load` runs two busy-looping processes (one per core) during the measurement; `--no-rt`
runs the daemon at normal priority (`--rt-priority 0`) instead of SCHED_FIFO 10.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from shortflow.tcp import SYN, read_pcap
from shortflow.testbed import names as N
from shortflow.testbed.system import in_ns
from shortflow.testbed.topology import Topology
from synopt_bed import Bed

SILENT, OPEN = 9, 8080

OPENER = """
import socket, sys, time
n, port = int(sys.argv[1]), int(sys.argv[2])
socks = []
for i in range(n):
    s = socket.socket(); s.setblocking(False)
    s.connect_ex(("{server}", port)); socks.append(s)
    time.sleep(0.013)  # spread the timers
time.sleep(1.5)
"""

CONNECTOR = """
import socket, sys, time, json
n, port = int(sys.argv[1]), int(sys.argv[2])
out = []
for i in range(n):
    s = socket.socket(); t = time.perf_counter(); s.connect(("{server}", port)); out.append(time.perf_counter() - t); s.close()
    time.sleep(0.002)
print(json.dumps(out))
"""

LISTENER = """
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", {port})); s.listen(512)
while True:
    c, _ = s.accept(); c.close()
"""


def errors_ms(pcap: Path, delay_s: float) -> list[float]:
    first: dict[tuple[int, int], float] = {}
    errs = []
    for seg in read_pcap(pcap):
        if seg.flags != SYN or seg.dst_port != SILENT:
            continue
        key = (seg.src_port, seg.seq)
        if key not in first:
            first[key] = seg.ts
            continue
        since = seg.ts - first[key]
        k = round(since / delay_s)
        if 1 <= k <= 3 and since < 3 * delay_s + 0.1:
            errs.append((since - k * delay_s) * 1000)
    return errs


def connect_times(b: Bed, n: int) -> list[float]:
    r = in_ns(b.ns("client"), sys.executable, "-c", CONNECTOR.format(server=N.SERVER_IP), str(n), str(OPEN), timeout=60)
    return [t * 1000 for t in json.loads(r.stdout)]


def summary(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"n": len(xs), "mean": round(statistics.mean(xs), 3), "stdev": round(statistics.stdev(xs), 3),
            "min": round(xs[0], 3), "p50": round(xs[len(xs) // 2], 3), "p99": round(xs[int(len(xs) * 0.99) - 1], 3),
            "max": round(xs[-1], 3)}


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 40
    delay_ms = int(args[1]) if len(args) > 1 else 200
    rt = ["--rt-priority", "0"] if "--no-rt" in sys.argv else []
    load: list[subprocess.Popen[bytes]] = []
    with Topology() as topo:
        topo.set_route("client", [])
        topo.set_route("server", [])
        in_ns(topo.names.ns("server"), "iptables", "-A", "INPUT", "-p", "tcp", "--dport", str(SILENT),
              "-m", "comment", "--comment", f"{topo.names.prefix}silent", "-j", "DROP")
        topo.spawn("listener", "server", [sys.executable, "-c", LISTENER.format(port=OPEN)])
        b = Bed(topo, None)  # type: ignore[arg-type]
        time.sleep(0.3)
        base = connect_times(b, 300)
        if "--load" in sys.argv:
            load = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
        d = b.start_synopt("client", "-d", str(delay_ms), "-r", "3", "-c", "-p", f"{SILENT},{OPEN}", *rt)
        pcap = topo.workdir / "client.pcap"
        tcpdump = topo.spawn("tcpdump", "client", ["tcpdump", "-i", topo.names.client_dev, "-n", "-U",
                                                    "--immediate-mode", "-w", str(pcap), "tcp"],
                             stderr=subprocess.PIPE)
        assert tcpdump.stderr is not None
        tcpdump.stderr.readline()
        in_ns(b.ns("client"), sys.executable, "-c", OPENER.format(server=N.SERVER_IP), str(n), str(SILENT), timeout=60)
        with_daemon = connect_times(b, 300)
        time.sleep(0.2)
        tcpdump.send_signal(2)
        tcpdump.wait(timeout=10)
        stats, _ = b.stop_synopt(d)
        for p in load:
            p.kill()
            p.wait()
        errs = errors_ms(pcap, delay_ms / 1000)
    print(json.dumps({
        "connections": n, "delay_ms": delay_ms, "load": bool(load), "rt_priority": 0 if rt else 10,
        "resend_error_ms": summary(errs),
        "daemon_resend_lateness": stats["resend_lateness"],
        "connect_ms_without_daemon": summary(base), "connect_ms_with_daemon": summary(with_daemon),
    }, indent=1))


if __name__ == "__main__":
    main()
