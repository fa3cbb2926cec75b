"""`shortflow watch` on the real kernel (root, the testbed's namespaces): a workload with
known losses crosses the testbed's emulated path while `watch` reads the server's veth and
tcpdump captures the same interface. `watch`'s rows equal `analyze`'s on the packets it
kept (`--pcap`), every column, and count what `analyze` counts on tcpdump's capture; its
counters — read back through a real Prometheus (Debian's, started here on the server
namespace's loopback) — equal the sums of its rows."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import shortflow
from shortflow.analyze import CAUSES

pytestmark = pytest.mark.netns

METRICS_PORT = 9918
PROMETHEUS_PORT = 9919
CONNECTIONS = 6
#: Columns counted, not timed: equal in both.
EXACT = ("client_port", "server_port", "syn_count", "synack_count", "established", "handshake", "outcome",
         "packets_c2s", "packets_s2c", "bytes_c2s", "bytes_s2c", "retx_timeout_s2c", "retx_fast_s2c", "retx_tlp_s2c",
         "retx_spurious_s2c", "rto_events", "fast_recoveries", "iw_segments", "rounds", "vantage")
#: Two sockets on one interface stamp a packet apart by a few µs.
TIME_SLACK_S = 0.0005


def prometheus_config(path: Path) -> Path:
    path.write_text(textwrap.dedent(f"""\
        global:
          scrape_interval: 500ms
          scrape_timeout: 400ms
        scrape_configs:
          - job_name: shortflow
            static_configs:
              - targets: ["127.0.0.1:{METRICS_PORT}"]
        """))
    return path


def query(topo: Any, promql: str) -> list[dict[str, Any]]:
    url = f"http://127.0.0.1:{PROMETHEUS_PORT}/api/v1/query?query={urllib.parse.quote(promql)}"
    out = subprocess.run(["ip", "netns", "exec", topo.names.ns("server"), "curl", "-sf", url],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["status"] == "success", doc
    return list(doc["data"]["result"])


def value(topo: Any, promql: str) -> float:
    result = query(topo, promql)
    return float(result[0]["value"][1]) if result else 0.0


def wait_for_scrape(topo: Any, expected_connections: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value(topo, "sum(shortflow_connections_total)") >= expected_connections:
            time.sleep(1.2)  # one more scrape: every counter of the last rows in it
            return
        time.sleep(0.3)
    raise AssertionError(f"Prometheus did not see {expected_connections} connections within {timeout:.0f} s")


def test_watch_rows_and_prometheus_counters_equal_analyze_on_the_capture(tmp_path):
    from shortflow.testbed import load
    from shortflow.testbed import names as N
    from shortflow.testbed.link import Link
    from shortflow.testbed.server import Nginx, body_path
    from shortflow.testbed.topology import Topology

    scenario = tmp_path / "s.toml"
    # The 2nd SYN/ACK lost (a handshake resend) and two of the responses' data segments
    # (repaired by fast retransmit, a probe or a timeout: the kernel's choice, counted).
    scenario.write_text('[path]\nrtt = "20ms"\nbandwidth = "50Mbit"\n[drop]\nsynack = [2]\ndata = [5, 58]\n')
    pcap, out_dir, summary = tmp_path / "server.pcap", tmp_path / "rows", tmp_path / "summary.json"
    kept = tmp_path / "kept.pcap"
    with Topology() as topo:
        for role in ("client", "server"):
            topo.set_route(role, [])
        link = Link(topo, load(scenario))
        link.start()
        Nginx(topo, [30_000], N.HTTP_PORT).start()
        dev = topo.names.server_dev
        dump = topo.spawn("tcpdump", "server", ["tcpdump", "-i", dev, "-n", "-U", "--immediate-mode",
                                                 "--time-stamp-precision=nano", "-s", "256", "-w", str(pcap), "tcp"],
                          stderr=subprocess.PIPE)
        assert dump.stderr is not None and "listening" in dump.stderr.readline()
        watch = topo.spawn("watch", "server", [sys.executable, "-m", "shortflow", "watch", "-i", dev, "--filter", "tcp",
                                               "--close-linger", "300ms", "--out", str(out_dir), "--pcap", str(kept), "--summary-json",
                                               str(summary), "--metrics", f"127.0.0.1:{METRICS_PORT}"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert watch.stderr is not None
        # It says so once the capture is open and the endpoint serves.
        line = watch.stderr.readline()
        while line and "watching" not in line:
            line = watch.stderr.readline()
        assert "watching" in line, watch.communicate(timeout=10)
        prom = topo.spawn("prometheus", "server", [
            "prometheus", f"--config.file={prometheus_config(tmp_path / 'prometheus.yml')}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{PROMETHEUS_PORT}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = topo.spawn("client", "client", [sys.executable, str(Path(shortflow.__file__).parent / "testbed" / "probe.py"),
                                                 N.SERVER_IP, str(N.HTTP_PORT), body_path(30_000), "300",
                                                 str(CONNECTIONS), "0.05"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _, err = client.communicate(timeout=120)
        assert client.returncode == 0, err
        # Every connection closed, its linger over, counted, and scraped.
        wait_for_scrape(topo, CONNECTIONS)
        counters = {
            "connections": value(topo, "sum(shortflow_connections_total)"),
            "synack": value(topo, 'sum(shortflow_handshake_retransmissions_total{kind="synack"})'),
            "syn": value(topo, 'sum(shortflow_handshake_retransmissions_total{kind="syn"})'),
            "drops": value(topo, "sum(shortflow_capture_drops_total)"),
        }
        by_class = {r["metric"]["class"]: float(r["value"][1])
                    for r in query(topo, "sum by (class) (shortflow_retransmissions_total)")}
        by_cause = {r["metric"]["cause"]: float(r["value"][1])
                    for r in query(topo, "sum by (cause) (shortflow_connection_seconds_total)")}
        ports = {r["metric"]["port"] for r in query(topo, "shortflow_connections_total")}
        watch.send_signal(signal.SIGTERM)
        _, werr = watch.communicate(timeout=30)
        assert watch.returncode == 0, werr
        assert "stopped by SIGTERM" in werr, werr
        prom.send_signal(signal.SIGTERM)
        prom.wait(timeout=30)
        time.sleep(0.2)
        dump.send_signal(signal.SIGINT)
        dump.communicate(timeout=10)
        link.stop()

    files = sorted(out_dir.glob("connections-*.parquet"))
    assert files, "watch wrote no rows"
    got = pq.read_table(files).drop_columns(["trace"]).sort_by("client_port").to_pylist()
    # The packets the watch read, kept as it read them: `analyze` with the same tracker
    # settings (its close linger above) gives the very same rows, times included.
    same = shortflow.analyze(str(kept), close_linger_s=0.3).table.drop_columns(["trace"]).sort_by("client_port")
    assert got == same.to_pylist()
    # tcpdump's capture of the same interface: the same connections, counted the same. (Its
    # timestamps are its own socket's, a few µs off under load, and two packets crossing on
    # the wire may reach the two sockets in either order: the time account's split may
    # differ by that much, so only the counts are held equal here.)
    expected = shortflow.analyze(str(pcap), close_linger_s=0.3).table.sort_by("client_port").to_pylist()
    assert len(got) == len(expected) == CONNECTIONS
    # The losses the scenario asked for are there (not a run that lost nothing).
    # (A lost SYN/ACK is sent again by its timer, and again when the client's SYN resend
    # crosses it: one or two more, the kernel's timing decides.)
    assert sum(r["synack_count"] for r in expected) >= CONNECTIONS + 1
    assert sum(r["retx_fast_s2c"] + r["retx_tlp_s2c"] + r["retx_timeout_s2c"] for r in expected) >= 2
    for g, e in zip(got, expected):
        assert {k: g[k] for k in EXACT} == {k: e[k] for k in EXACT}
        assert g["duration_s"] == pytest.approx(e["duration_s"], abs=TIME_SLACK_S)
    # The counters, through Prometheus, are the rows' sums.
    assert counters["connections"] == CONNECTIONS
    assert counters["synack"] == sum(r["synack_count"] - 1 for r in got) >= 1
    # The client's SYN timer fired too while the SYN/ACK was lost: its SYN went again.
    assert counters["syn"] == sum(r["syn_count"] - 1 for r in got) >= 1
    assert counters["drops"] == 0
    for klass in ("timeout", "fast", "tlp"):
        assert by_class.get(klass, 0.0) == sum(r[f"retx_{klass}_c2s"] + r[f"retx_{klass}_s2c"] for r in got), klass
    for cause in CAUSES:
        assert by_cause.get(cause, 0.0) == pytest.approx(sum(r[f"time_{cause}_s"] for r in got), abs=1e-6), cause
    assert ports == {str(N.HTTP_PORT)}
    doc = json.loads(summary.read_text())
    assert doc["summary"]["connections"] == CONNECTIONS and doc["capture"]["ring_drops"] == 0


def test_watch_errors_name_the_interface_and_what_is_missing(tmp_path):
    r = subprocess.run([sys.executable, "-m", "shortflow", "watch", "-i", "sf-no-such-if0", "--no-metrics",
                        "--duration", "1s"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "sf-no-such-if0" in r.stderr and "no such interface" in r.stderr, r.stderr
    r = subprocess.run([sys.executable, "-m", "shortflow", "watch", "-i", "lo", "--no-metrics", "--filter", "port eighty",
                        "--duration", "1s"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "libpcap" in r.stderr and "eighty" in r.stderr, r.stderr
    r = subprocess.run([sys.executable, "-m", "shortflow", "watch", "-i", "lo", "--metrics", "nowhere"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "HOST:PORT" in r.stderr, r.stderr


def test_the_bound_on_open_connections_ends_the_oldest_and_counts_them(tmp_path):
    """3,000 unanswered SYNs replayed onto a veth with room for 1,000 open connections: the
    oldest are ended (each still a row) and counted, none lost."""
    from netns import namespace_pair
    from syn_flood import syn_flood_pcap

    pcap = syn_flood_pcap(tmp_path / "syns.pcap", 3000)
    out, summary = tmp_path / "rows", tmp_path / "summary.json"
    with namespace_pair() as p:
        w = p.spawn(p.server, sys.executable, "-m", "shortflow", "watch", "-i", p.server_dev, "--no-metrics",
                    "--max-connections", "1000", "--out", str(out), "--summary-json", str(summary))
        assert w.stderr is not None
        line = w.stderr.readline()
        while line and "watching" not in line:
            line = w.stderr.readline()
        r = p.exec(p.client, "tcpreplay", "-q", "--pps=20000", "-i", p.client_dev, str(pcap))
        assert r.returncode == 0, r.stderr
        time.sleep(1.0)
        w.send_signal(signal.SIGTERM)
        _, err = w.communicate(timeout=60)
        assert w.returncode == 0, err
    rows = pq.read_table(sorted(out.glob("*.parquet")))
    assert rows.num_rows == 3000 and set(rows.column("syn_count").to_pylist()) == {1}
    capture = json.loads(summary.read_text())["capture"]
    # Evicted down to 95 % of the bound each time it was passed; the rest ended at the stop.
    assert 1900 <= capture["evicted"] <= 2100, capture
    outcomes = rows.column("outcome").to_pylist()
    assert outcomes.count("idle") == capture["evicted"] and outcomes.count("open") == 3000 - capture["evicted"]


def test_top_draws_the_time_account_and_the_worst_connections(tmp_path):
    """`--top` on a terminal (a pseudo-terminal here) while connections come and go."""
    from netns import namespace_pair

    with namespace_pair() as p:
        srv = p.spawn(p.server, sys.executable, "-m", "http.server", "8080", "--bind", p.server_ip)
        time.sleep(0.5)
        screen = tmp_path / "screen.txt"
        cmd = f"{sys.executable} -m shortflow watch -i {p.server_dev} --no-metrics --top --close-linger 100ms --duration 4s"
        top = subprocess.Popen(["ip", "netns", "exec", p.server, "script", "-qefc", cmd, str(screen)],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env={**__import__("os").environ, "COLUMNS": "120", "LINES": "40"})
        time.sleep(1.5)
        for _ in range(5):
            p.exec(p.client, "curl", "-s", "-o", "/dev/null", f"http://{p.server_ip}:8080/")
        top.communicate(timeout=60)
        srv.kill()
    text = screen.read_text(errors="replace")
    assert "time account of the connections ended in the last 60 s" in text
    assert "worst 10 connections ended in the last 60 s" in text
    assert f"{p.client_ip}:" in text and f"{p.server_ip}:8080" in text, text[-2000:]
    assert "application" in text or "the path" in text


def test_the_shipped_grafana_dashboard_asks_only_for_series_watch_serves():
    """Every metric a panel of the dashboard queries is one the endpoint serves (with the
    labels it filters and groups by), so no panel stays empty for a misspelt name."""
    import re
    from importlib.resources import files

    import pyarrow as pa
    from prometheus_client import generate_latest

    from shortflow.watch.metrics import WatchMetrics

    m = WatchMetrics()
    a = shortflow.analyze(str(Path(__file__).parent / "data" / "real" / "pcap2har-pcapr-losses-keepalive.pcap"))
    m.add_ended(a.table)
    m.add_ended(pa.Table.from_pylist([], schema=a.table.schema))
    m.add_stats({"ring_drops": 0, "interface_drops": 0, "evicted": 0, "packets": 1, "open_connections": 0})
    served = generate_latest(m.registry).decode()
    series = {line.split("{")[0].split(" ")[0] for line in served.splitlines() if line and not line.startswith("#")}
    labels = {name: set(re.findall(r'(\w+)="', line)) for line in served.splitlines() if not line.startswith("#")
              for name in [line.split("{")[0].split(" ")[0]]}
    dash = json.loads(files("shortflow").joinpath("data/grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    assert len(exprs) >= 9
    for expr in exprs:
        names = re.findall(r"\b(shortflow_\w+)", expr)
        assert names, expr
        for name, selector in re.findall(r"\b(shortflow_\w+)(?:\{([^}]*)\})?", expr):
            assert name in series, (name, expr)
            for label in re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", selector):
                assert label in labels[name], (label, name, expr)
        for label in re.findall(r"by \((\w+)\)", expr):
            assert label == "le" or any(label in labels[n] for n in names), (label, expr)
