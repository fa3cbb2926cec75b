"""A SYN flood: SYNs at RATE per second for SECONDS from 200 forged addresses of one /24
(10.231.9.0/24) to a silent port, through a router-mode `shortflow-synopt -d 200 -r 3`,
while a legitimate client of another /24 (10.231.1.1) connects to nginx once every 100 ms
with its first SYN of each connection dropped at the server (iptables statistic nth 2): its
connect time is ~200 ms + RTT when the daemon resends on time, ~1 s when it does not.

Prints per daemon: generator rate, daemon counters, resend lateness (p50/p99 bin edges,
max), VmRSS max, daemon CPU (user+system over the flood), legitimate connect times.

    sudo .venv/bin/python benches/synopt_flood_fair.py [RATE SECONDS] [--daemon PATH] [-- EXTRA DAEMON ARGS]

`--daemon target/nfqueue-baseline/shortflow-synopt` runs the earlier NFQUEUE daemon
(without --prefix-budget, which it lacks) as the peer (copy it there from a build of
f590dfa, the last commit with it); `--daemon none` runs no daemon (the generator's ceiling, and the
kernel's own 1 s SYN RTO for the legitimate client).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from shortflow import synopt
from shortflow.testbed import names as N
from shortflow.testbed.server import Nginx, body_path
from shortflow.testbed.system import in_ns
from shortflow.testbed.topology import Topology

SILENT_PORT = 9
FLOOD_SRC = "10.231.9.1"


def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def run(rate: int, seconds: float, daemon: str, extra: list[str]) -> dict:
    gen = Path(synopt.binary()).with_name("shortflow-synflood")
    with Topology() as topo:
        topo.set_route("client", [])
        topo.set_route("server", [])
        srv = topo.names.ns("server")
        tag = f"{topo.names.prefix}bench"
        in_ns(srv, "iptables", "-A", "INPUT", "-p", "tcp", "--dport", str(SILENT_PORT), "-m", "comment",
              "--comment", tag, "-j", "DROP")
        in_ns(srv, "iptables", "-A", "INPUT", "-p", "tcp", "--dport", "80", "--syn", "-m", "statistic", "--mode", "nth",
              "--every", "2", "--packet", "0", "-m", "comment", "--comment", tag, "-j", "DROP")
        for ns in (topo.names.ns("client"), srv):
            in_ns(ns, "sysctl", "-q", "-w", "net.ipv4.tcp_no_metrics_save=1")
        # The router forwards the forged /24 like the real one (no reverse-path check).
        in_ns(topo.names.ns("router"), "sysctl", "-q", "-w", "net.ipv4.conf.all.rp_filter=0")
        Nginx(topo, [1000]).start()
        stats_path = topo.workdir / "stats.json"
        if daemon == "none":
            d = topo.spawn("idle", "router", ["sleep", "3600"])
            stats_path.write_text("{}")
        else:
            d = topo.spawn("synopt", "router", [daemon, "-d", "200", "-r", "3", "--router", "-p", f"{SILENT_PORT},80",
                                                "--no-ipv6", "--json-stats", str(stats_path), *extra],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            assert d.stdout is not None
            ready = d.stdout.readline()
            assert ready.startswith("ready"), (ready, d.stderr.read() if d.stderr else "")
        pid = d.pid  # `ip netns exec` execs the daemon
        cpu0 = proc_cpu_s(pid)
        g = topo.spawn("synflood", "client", [str(gen), "--src", FLOOD_SRC, "--sources", "200", "--dst", N.SERVER_IP,
                                              "--port", str(SILENT_PORT), "--rate", str(rate), "--seconds", str(seconds)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        started = time.monotonic()
        time.sleep(0.2)  # the flood reaches its pace
        connects, rss, mid = [], [], None

        while g.poll() is None:
            r = in_ns(topo.names.ns("client"), "curl", "-s", "-o", "/dev/null", "--max-time", "5", "-w",
                      "%{http_code} %{time_connect}", f"http://{N.SERVER_IP}{body_path(1000)}", check=False)
            code, t = r.stdout.split()
            if g.poll() is None and code == "200":
                connects.append(float(t))
            rss.append(rss_kb(pid))
            if mid is None and daemon != "none" and g.poll() is None and time.monotonic() - started >= seconds / 2:
                # The live counters, asked once mid-flood: half its time in. Asked at the
                # first connect (~0.4 s in), a loaded machine's generator had not yet
                # reached the daemon (2 copies taken, both the legitimate client's).
                mid = json.loads(in_ns(topo.names.ns("router"), sys.executable, "-m", "shortflow", "synopt", "status",
                                       "--json").stdout)
            time.sleep(0.1)
        cpu = proc_cpu_s(pid) - cpu0
        out, err = g.communicate()
        assert g.returncode == 0, err
        time.sleep(1.0)
        alive = d.poll() is None
        d.terminate()
        d.wait(timeout=10)
        s = json.loads(stats_path.read_text())
    connects.sort()
    q = lambda p: connects[min(len(connects) - 1, int(p * len(connects)))]  # noqa: E731
    gen_out = json.loads(out)
    return {"daemon": daemon, "extra": extra, "rate": rate, "seconds": seconds, "generator": gen_out,
            "survived": alive, "daemon_cpu_s": round(cpu, 2), "daemon_cpu_share": round(cpu / gen_out["seconds"], 3),
            "rss_kB_max": max(rss), "legit_connects": len(connects),
            "legit_connect_s": {"median": statistics.median(connects), "p90": q(0.9), "max": connects[-1]},
            "legit_over_0_5s": sum(c > 0.5 for c in connects), "counters": s, "status_mid_flood": mid}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("rate", type=int, nargs="?", default=100_000)
    ap.add_argument("seconds", type=float, nargs="?", default=10.0)
    ap.add_argument("--daemon", default=None)
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    print(json.dumps(run(a.rate, a.seconds, a.daemon or synopt.binary(), a.extra)))


if __name__ == "__main__":
    sys.exit(main())
