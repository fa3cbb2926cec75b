"""`shortflow analyze`'s data-phase diagnosis as a user sees it: the summary JSON's keys
and breakdown, the table's schema (from the Rust core) and Parquet metadata, `-` for
standard input and output, and a simulated document-003 run read back."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import shortflow
from shortflow.analyze import CAUSES, SUMMARY_KEYS, schema_rows

SHORTFLOW = [sys.executable, "-m", "shortflow"]
REQUIRED = ("timeout_retransmissions", "fast_retransmissions", "tlp_probes", "spurious_retransmissions",
            "delayed_ack_stalls", "zero_window_stalls", "capture_duplicates", "syn_retries_after_rst", "time_lost_s")


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    r = subprocess.run([*SHORTFLOW, *args], capture_output=True, input=stdin, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    return r


@pytest.fixture(scope="module")
def doc003(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, shortflow.SimulationResult]:
    pcap = tmp_path_factory.mktemp("sim") / "doc003.pcap"
    res = shortflow.simulate(shortflow.Scenario.builtin("003-bsd-client"), ["workload.connections=5"], pcap=pcap)
    return pcap, res


def test_summary_json_answers_where_the_time_went(doc003, tmp_path):
    pcap, res = doc003
    out = tmp_path / "s.json"
    run("analyze", str(pcap), "--summary-json", str(out), "-q")
    s = json.loads(out.read_text())
    assert list(s) == list(SUMMARY_KEYS)
    assert all(k in s for k in REQUIRED)
    assert set(s["time_lost_s"]) == set(CAUSES)
    assert sum(s["time_lost_s"].values()) == pytest.approx(s["duration_s"], abs=1e-6)
    # Document 003: the BSD client's delayed ACKs stall the Solaris server on every connection.
    assert s["delayed_ack_stalls"] >= len(res.connections)
    # The tick is recognised where a connection's delayed ACKs waited different times yet
    # left on one 200 ms phase (the first connection); the later ones start on a tick and
    # wait a whole tick each time, which a fixed 200 ms timer would do too.
    assert s["tick_receivers"] >= 1
    assert s["time_lost_share"]["delayed_ack"] > 0.5
    # What users waited: everything but idle and teardown, whose shares it gives.
    apart = s["time_lost_s"]["idle"] + s["time_lost_s"]["teardown"]
    assert s["waited_s"] == pytest.approx(s["duration_s"] - apart, abs=1e-6)
    assert sum(s["time_waited_share"].values()) == pytest.approx(1.0)
    assert s["delayed_acks"] == sum(c["delayed_acks"] for c in res.connections)
    assert s["percentiles"]["duration_s"]["n"] == len(res.connections)
    assert s["version"] == shortflow.__version__ and s["vantage"] == "server"
    assert [f["path"] for f in s["files"]] == [str(pcap)]


def test_breakdown_is_printed(doc003):
    pcap, _ = doc003
    r = run("analyze", str(pcap))
    text = r.stdout.decode()
    lines = text.splitlines()
    k = next(i for i, line in enumerate(lines) if line.startswith("users waited"))
    assert "(first SYN to last data byte)" in lines[k], lines[k]
    # The account's rows follow, each a share, a time and a cause: delayed ACKs among them.
    rows = [line for line in lines[k + 1:] if re.match(r"\s+(<1|\d+)%\s", line)]
    assert any(line.endswith("delayed-ACK stalls") for line in rows), text


def test_several_files_have_a_section_each(tmp_path):
    paths = []
    for i in range(2):
        p = tmp_path / f"g{i}.pcap"
        shortflow.generate(p, connections=100 + 50 * i, seed=i)
        paths.append(p)
    out = tmp_path / "s.json"
    run("analyze", *map(str, paths), "--summary-json", str(out), "-q", "--workers", "2")
    s = json.loads(out.read_text())
    assert [f["connection_tries"] for f in s["files"]] == [100, 150]
    assert s["connection_tries"] == 250
    # Printed: after the answer for all, a line per file (its own counts); the report has a row each.
    text = run("analyze", *map(str, paths), "--report", str(tmp_path / "r"), "--workers", "2").stdout.decode()
    lines = text.splitlines()
    k = lines.index("each of the 2 files (the total above):")
    assert k > lines.index(next(ln for ln in lines if ln.startswith("users waited"))), text
    for line, path, tries in zip(lines[k + 1:k + 3], paths, (100, 150)):
        assert line.startswith(f"  {path}: ") and f" · {tries} connection tries, " in line, line
    html = (tmp_path / "r" / "report.html").read_text()
    assert "<h2>Each file</h2>" in html and all(f"<td>{p}</td>" in html for p in paths)
    # One file: no per-file section (it would repeat the total).
    one = run("analyze", str(paths[0]), "--table1").stdout.decode()
    assert "each of the" not in one and "connection tries total" in one


def test_schema_is_the_cores_and_parquet_carries_metadata(doc003, tmp_path):
    pcap, _ = doc003
    run("analyze", str(pcap), "--out", str(tmp_path), "-q")
    f = pq.ParquetFile(tmp_path / "connections.parquet")
    t = f.read()
    rows = schema_rows()
    assert t.column_names == [r[0] for r in rows]
    # The Arrow types built are the ones the core declares (Parquet renames list items).
    mem = shortflow.analyze(pcap).table
    assert [str(mem.schema.field(r[0]).type) for r in rows] == [r[1] for r in rows]
    assert str(t.schema.field("first_seen").type) == "timestamp[ns]"
    assert "end" not in t.column_names and "outcome" in t.column_names
    assert t.schema.field("duration_s").metadata[b"unit"] == b"s"
    meta = f.schema_arrow.metadata
    assert meta[b"shortflow_version"].decode() == shortflow.__version__
    assert meta[b"vantage"] == b"server"
    assert json.loads(meta[b"files"]) == [str(pcap)]
    assert b"analyze" in meta[b"command"]


def test_columns_flag_prints_the_schema():
    r = run("analyze", "--columns")
    text = r.stdout.decode()
    for name, *_ in schema_rows():
        assert name in text
    # The exchanges table's own, after the connections'.
    exchanges = text[text.index("Exchanges table columns"):]
    for name in ("request_bytes", "response_bytes", "think_before_s", "ttfb_s", "ttlb_s", "time_idle_s"):
        assert f"\n{name}" in exchanges or f"│ {name}" in exchanges, name
    # Then the summary document's keys, each with its unit and meaning, as --summary-json writes them.
    keys = text[text.index("--summary-json keys"):]
    rows = [line.split("\t") for line in keys.splitlines()[1:] if "\t" in line]
    assert [r[0] for r in rows[1:]] == list(SUMMARY_KEYS), rows[:3]
    waited = next(r for r in rows if r[0] == "waited_s")
    assert waited[1] == "s" and waited[2].startswith("The connection-seconds users waited through"), waited


def test_dash_reads_stdin_and_writes_stdout(doc003):
    pcap, _ = doc003
    r = run("analyze", "-", "--summary-json", "-", stdin=pcap.read_bytes())
    s = json.loads(r.stdout)
    assert s["connection_tries"] == 5


def test_report_is_one_self_contained_page(doc003, tmp_path):
    pcap, _ = doc003
    run("analyze", str(pcap), "--report", str(tmp_path / "rep"), "-q")
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "Table 1" in html and "Where the time went" in html and "delayed-ACK stalls" in html
    # Figures embedded: breakdown, CDFs and the three worst connections' graphs, each named.
    for alt in ("shares of the time users waited", "CDFs"):
        assert f'<img alt="{alt}" src="data:image/png;base64,' in html
    assert len(re.findall(r'<img alt="time-sequence graph of connection \d+" src="data:image/png;base64,', html)) == 3
    assert "http://" not in html and "https://" not in html
    assert list((tmp_path / "rep").iterdir()) == [tmp_path / "rep" / "report.html"]


def test_graph_draws_a_connection(doc003, tmp_path):
    pcap, _ = doc003
    png = tmp_path / "c.png"
    assert run("graph", str(pcap), "--conn", "0", "-o", str(png)).returncode == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = tmp_path / "c.svg"
    run("graph", str(pcap), "--conn", "1", "-o", str(svg))
    assert b"<svg" in svg.read_bytes()[:400]
    bad = subprocess.run([*SHORTFLOW, "graph", str(pcap), "--conn", "99"], capture_output=True, text=True)
    assert bad.returncode == 1 and "no connection with conn_id 99" in bad.stderr


def test_connection_packets_carry_the_analyzers_classes():
    from shortflow.plot.tsg import packets

    path = Path(__file__).parent / "data" / "real" / "one_tcp_stream.pcap"
    pk = packets(path, [0])[0]
    assert len(pk["ts_ns"]) == 36
    # The two client retransmissions the table counts are marked on their packets.
    assert sum(e.startswith("retx") or e == "tlp" for e in pk["event"]) == 2
