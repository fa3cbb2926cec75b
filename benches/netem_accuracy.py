"""Accuracy of the testbed's link emulator (`shortflow-netem`), measured end to end.

Delay: a UDP echo between the client and server namespaces through the router; each probe's
RTT (perf_counter in the client) minus the configured RTT is the error, which includes the
veth/kernel path and Python's own time (~tens of µs), so it bounds the emulator's error
from above. The emulator's own release lateness (deadline → verdict) is printed beside it.

Rate: UDP packets of 1400 B blasted from several client processes for a few seconds with a
10 ms one-way delay; the emulator's lateness shows when releases begin to drift.

    sudo .venv/bin/python benches/netem_accuracy.py delay 10ms 20ms 50ms 100ms
    sudo .venv/bin/python benches/netem_accuracy.py handshake 10ms 20ms 50ms 100ms
    sudo .venv/bin/python benches/netem_accuracy.py rate 20000 40000 80000 0   (0: unpaced)

`--count N` sets the probes of `delay` (300) and the connections of `handshake` (30),
`--seconds S` each `rate` step's length (3 s): the test suite's smoke run is a few of each.
"""

from __future__ import annotations

import statistics
import sys
import textwrap

from shortflow.scenario import Scenario
from shortflow.testbed import names as N
from shortflow.testbed.link import Link
from shortflow.testbed.scenario_real import RealScenario, load
from shortflow.testbed.system import in_ns
from shortflow.testbed.topology import Topology
from shortflow.units import parse_duration

ECHO = textwrap.dedent("""
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", 9000))
    print("ready", flush=True)
    while True:
        d, a = s.recvfrom(2048); s.sendto(d, a)
""")

PROBE = textwrap.dedent("""
    import socket, sys, time
    n, gap = int(sys.argv[2]), float(sys.argv[3])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
    for i in range(n):
        t0 = time.perf_counter(); s.sendto(b"x" * 64, (sys.argv[1], 9000)); s.recv(2048)
        print(time.perf_counter() - t0); time.sleep(gap)
""")

# Paced in batches of 32 packets at `pps` packets per second (0: as fast as it can).
BLAST = textwrap.dedent("""
    import socket, sys, time
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); t0 = time.time(); end = t0 + float(sys.argv[2]); n = 0
    buf, pps = b"x" * 1400, float(sys.argv[3])
    while time.time() < end:
        for _ in range(32):
            s.sendto(buf, (sys.argv[1], 9001)); n += 1
        if pps:
            wait = t0 + n / pps - time.time()
            if wait > 0:
                time.sleep(wait)
    print(n)
""")


def scenario(rtt_s: float, *overrides: str) -> RealScenario:
    """A resolved scenario of this RTT (the model's defaults otherwise), realised for the kernel."""
    text = f'name = "bench"\n[path]\nrtt = "{rtt_s * 1e6:.0f}us"\n'
    return load(Scenario.from_text(text, source="bench.toml", overrides=overrides))


def delay(rtt_text: str, probes: int = 300) -> None:
    rtt = parse_duration(rtt_text)
    with Topology() as t:
        t.set_route("client", [])
        t.set_route("server", [])
        link = Link(t, scenario(rtt))
        link.start()
        echo = t.spawn("echo", "server", [sys.executable, "-c", ECHO], stdout=-1)
        # The first probe waits for the echo's socket: sent earlier (Python starting on the
        # busy cores) it met a closed port and the probe timed out.
        assert echo.stdout is not None and echo.stdout.readline().strip() in ("ready", b"ready")
        out = in_ns(t.names.ns("client"), sys.executable, "-c", PROBE, N.SERVER_IP, str(probes), "0.005", timeout=120).stdout
        stats = link.stop()
    err_ms = [(float(x) - rtt) * 1e3 for x in out.split()]
    late = stats["forward"]["lateness"], stats["reverse"]["lateness"]
    print(f"RTT {rtt_text}: {len(err_ms)} probes, error mean {statistics.mean(err_ms):+.3f} ms, "
          f"stddev {statistics.stdev(err_ms):.3f} ms, min {min(err_ms):+.3f}, max {max(err_ms):+.3f} ms; "
          f"emulator lateness mean {late[0]['mean_us']:.1f}/{late[1]['mean_us']:.1f} µs, "
          f"stddev {late[0]['stddev_us']:.1f}/{late[1]['stddev_us']:.1f} µs, max {late[0]['max_us']:.0f}/{late[1]['max_us']:.0f} µs (fwd/rev)")


def rate(pps: float, seconds: float = 3.0, senders: int = 2) -> None:
    with Topology() as t:
        t.set_route("client", [])
        t.set_route("server", [])
        link = Link(t, scenario(0.02))
        link.start()
        procs = [t.spawn(f"blast{i}", "client", [sys.executable, "-c", BLAST, N.SERVER_IP, str(seconds), str(pps / senders)],
                         stdout=-1) for i in range(senders)]
        sent = sum(int(p.communicate(timeout=seconds + 30)[0]) for p in procs)
        stats = link.stop()
    f = stats["forward"]
    print(f"rate: offered {sent / seconds:,.0f} pkt/s (1400 B UDP, {senders} senders), emulator saw "
          f"{f['packets'] / seconds:,.0f} pkt/s, released {f['released']}, overflows {stats['overflows']}; "
          f"lateness mean {f['lateness']['mean_us']:.1f} µs, stddev {f['lateness']['stddev_us']:.1f} µs, "
          f"max {f['lateness']['max_us']:.0f} µs")


def handshake(rtt_text: str, connections: int = 30) -> None:
    """TCP handshake RTT of real connections (nginx, built-in client), read by the project
    analyzer from the router's client-side capture, against the configured RTT."""
    from shortflow.testbed.runner import run as run_scenario

    rtt = parse_duration(rtt_text)
    s = scenario(rtt, f"workload.connections={connections}", f"workload.interval={(0.05 + rtt) * 1e6:.0f}us",
                 "workload.response=1000B")
    r = run_scenario(s)
    err_ms = [(c["handshake_rtt_s"] - rtt) * 1e3 for c in r["connections"]]
    print(f"handshake RTT {rtt_text}: {len(err_ms)} connections, error mean {statistics.mean(err_ms):+.3f} ms, "
          f"stddev {statistics.stdev(err_ms):.3f} ms, max {max(err_ms):+.3f} ms")


def _option(args: list[str], name: str) -> str | None:
    """Removes ``name VALUE`` from `args` and returns VALUE (None when absent)."""
    if name not in args:
        return None
    i = args.index(name)
    value = args[i + 1]
    del args[i : i + 2]
    return value


if __name__ == "__main__":
    argv = sys.argv[1:]
    count, seconds = _option(argv, "--count"), _option(argv, "--seconds")
    if argv[0] == "handshake":
        for r in argv[1:] or ["10ms", "20ms", "50ms", "100ms"]:
            handshake(r, int(count or 30))
    elif argv[0] == "delay":
        for r in argv[1:] or ["10ms", "20ms", "50ms", "100ms"]:
            delay(r, int(count or 300))
    else:
        for pps in argv[1:] or ["20000", "40000", "80000", "0"]:
            rate(float(pps), float(seconds or 3.0))
