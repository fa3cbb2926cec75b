"""`shortflow analyze` and `shortflow generate` as a user runs them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

import shortflow
from shortflow.analyze import SUMMARY_KEYS

SHORTFLOW = [sys.executable, "-m", "shortflow"]


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([*SHORTFLOW, *args], capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError(f"exit {r.returncode}\nstdout:{r.stdout}\nstderr:{r.stderr}")
    return r


@pytest.fixture(scope="module")
def lossy_trace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    path = tmp_path_factory.mktemp("traces") / "lossy.pcap"
    truth = shortflow.generate(path, connections=800, seed=3, syn_loss=0.1, synack_loss=0.1, ack_loss=0.1, vantage="server")
    return path, truth


def test_summary_json_has_exactly_the_table1_keys(lossy_trace, tmp_path):
    path, truth = lossy_trace
    out = tmp_path / "s.json"
    run("analyze", str(path), "--summary-json", str(out), "-q")
    s = json.loads(out.read_text())
    assert list(s) == list(SUMMARY_KEYS)
    assert s["connection_tries"] == truth["connections"]
    assert s["successful"] == truth["successful"]
    # A try still inside its SYN ladder when the capture ended is open, not failed.
    assert s["unsuccessful"] + s["open_tries"] == truth["connections"] - truth["successful"]
    assert s["multiple_syns"] == truth["multiple_syns"]
    assert s["multiple_syns"] == s["multiple_syns_successful"] + s["multiple_syns_unsuccessful"]
    assert s["packets"] == truth["packets"]
    assert s["syn_retransmissions"] == truth["syns_captured"] - truth["connections"]
    assert s["duplicate_syn_every"] == pytest.approx(s["successful"] / s["multiple_syns_successful"])


def _csv_cell(value: object) -> object:
    """What a CSV cell reads back as, for the in-memory value: lists are `;`-joined, nulls
    and empty lists are empty cells, booleans `true`/`false`."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return [_csv_cell(v) for v in value]
    return value


def _from_csv(text: str, like: object) -> object:
    """A CSV cell parsed to the type of the in-memory value it must equal."""
    if isinstance(like, list):
        return [] if text == "" else [_from_csv(t, like[0] if like else "") for t in text.split(";")]
    if isinstance(like, bool) or like is None:
        return text
    if isinstance(like, int):
        return int(text)
    if isinstance(like, float):
        return float(text)
    if hasattr(like, "value") and hasattr(like, "tz"):  # a timestamp[ns] cell (pandas.Timestamp)
        import pandas as pd

        return pd.Timestamp(text)
    return text


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_table_formats(lossy_trace, tmp_path, fmt):
    """Every value of every written row equals the in-memory table's (`shortflow.analyze`)."""
    import csv

    path, truth = lossy_trace
    run("analyze", str(path), "--out", str(tmp_path), "--format", fmt, "-q")
    f = tmp_path / f"connections.{fmt}"
    want = shortflow.analyze(path).table.to_pylist()
    assert len(want) == truth["connections"]
    assert any(r["syn_count"] > 1 for r in want) and any(r["synack_count"] > 1 for r in want)
    if fmt == "parquet":
        assert pq.read_table(f).to_pylist() == want
    elif fmt == "jsonl":
        got = [json.loads(line) for line in f.read_text().splitlines()]
        assert len(got) == len(want)
        for i, (g, exp) in enumerate(zip(got, want)):
            assert list(g) == list(exp), i
            for key, value in exp.items():
                # Timestamps are written as ISO text; everything else as its JSON value.
                cell = _from_csv(g[key], value) if isinstance(g[key], str) else g[key]
                assert cell == value, (i, key, g[key], value)
    else:
        with f.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        assert len(rows) == len(want) and list(rows[0]) == list(want[0])
        for i, (got, exp) in enumerate(zip(rows, want)):
            for key, value in exp.items():
                cell = _from_csv(got[key], value)
                assert cell == _csv_cell(value), (i, key, got[key], value)
        assert pcsv.read_csv(f).num_rows == len(want)


def test_table1_is_printed_with_synack_rows_and_vantage(lossy_trace):
    path, _ = lossy_trace
    r = run("analyze", str(path))
    assert "connection tries total" in r.stdout
    assert "SYN/ACK" in r.stdout
    assert "near the server" in r.stdout


def test_plot_is_a_png(lossy_trace, tmp_path):
    path, _ = lossy_trace
    png = tmp_path / "gaps.png"
    run("analyze", str(path), "--plot", str(png), "-q")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_truncated_trace_names_file_and_offset_and_keeps_results(lossy_trace, tmp_path):
    path, truth = lossy_trace
    data = path.read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[: len(data) // 2 + 7])
    out = tmp_path / "s.json"
    r = run("analyze", str(cut), "--summary-json", str(out), "-q", check=False)
    assert r.returncode == 1
    assert "cut.pcap: byte " in r.stderr and "truncated" in r.stderr
    s = json.loads(out.read_text())
    assert 0 < s["packets"] < truth["packets"]
    assert 0 < s["connection_tries"] < truth["connections"]


def test_graph_and_report_of_a_truncated_trace_draw_what_was_read(lossy_trace, tmp_path):
    from shortflow.plot.tsg import packets

    path, _ = lossy_trace
    data = path.read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[: len(data) // 2 + 7])
    # The first connection ends long before the cut: its packets are all there.
    errors: list[str] = []
    assert packets(cut, [0], errors=errors) == packets(path, [0])
    assert len(errors) == 1 and "cut.pcap: byte " in errors[0] and "truncated" in errors[0]
    with pytest.raises(shortflow.TraceReadError, match="cut.pcap: byte "):
        packets(cut, [0])

    png = tmp_path / "c.png"
    r = run("graph", str(cut), "--conn", "0", "-o", str(png), check=False)
    assert r.returncode == 1 and "cut.pcap: byte " in r.stderr and "packets before it are drawn" in r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    r = run("analyze", str(cut), "--report", str(tmp_path / "rep"), "-q", check=False)
    assert r.returncode == 1 and "cut.pcap: byte " in r.stderr
    html = (tmp_path / "rep" / "report.html").read_text()
    # From the part read: the worst connections' graphs, each under its connection's id.
    # Captured near the server, no lost SYN was seen sent again: Figure 1 says so in words.
    assert len(re.findall(r'<img alt="time-sequence graph of connection \d+"', html)) == 3
    assert "No SYN was sent again in these traces" in html and 'alt="duplicate SYN gaps"' not in html


def test_gzip_and_pcapng_from_the_cli(tmp_path):
    gz = tmp_path / "t.pcapng.gz"
    truth = shortflow.generate(gz, connections=100, format="pcapng", gzip=True, link="sll2")
    assert gz.read_bytes()[:2] == b"\x1f\x8b"
    a = shortflow.analyze(gz)
    assert a.summary["connection_tries"] == truth["connections"]
    assert not a.errors


def test_bad_arguments_are_clear_errors(lossy_trace, tmp_path):
    path, _ = lossy_trace
    r = run("analyze", str(path), "--format", "xml", check=False)
    assert r.returncode == 2 and "--format" in r.stderr
    r = run("analyze", str(tmp_path / "missing.pcap"), check=False)
    assert r.returncode == 2 and "missing.pcap" in r.stderr
    r = run("analyze", str(path), "--idle-timeout", "30", check=False)
    assert r.returncode == 2 and "no unit" in r.stderr
    r = run("generate", str(tmp_path / "x.pcap"), "--vantage", "middle", check=False)
    assert r.returncode == 2 and "vantage" in r.stderr


def test_python_api_unpacks_and_has_arrow_types(lossy_trace):
    path, truth = lossy_trace
    table, summary = shortflow.analyze(path)
    assert table.num_rows == truth["connections"]
    assert summary["connection_tries"] == truth["connections"]
    assert str(table.schema.field("syn_gaps_s").type) == "list<item: double>"
    df = table.to_pandas() if _has_pandas() else None
    assert df is None or len(df) == truth["connections"]


def test_several_traces_with_workers_add_up(tmp_path):
    truths = []
    paths = []
    for i in range(3):
        p = tmp_path / f"t{i}.pcap"
        truths.append(shortflow.generate(p, connections=200, seed=i, syn_loss=0.2))
        paths.append(p)
    a = shortflow.analyze(paths, workers=2)
    assert a.summary["connection_tries"] == sum(t["connections"] for t in truths)
    assert a.summary["multiple_syns"] == sum(t["multiple_syns"] for t in truths)
    assert a.table.column("trace").unique().to_pylist() == [str(p) for p in paths]


def test_one_file_on_several_threads_writes_the_same_table_and_summary(lossy_trace, tmp_path):
    """--workers 3 on one file tracks its connections on threads sharded by 4-tuple: the
    Parquet table (rows, ids, order) and the summary equal one thread's."""
    path, _ = lossy_trace
    outs = {}
    for n in (1, 3):
        d = tmp_path / f"w{n}"
        # A short idle timeout ends connections mid-trace: the shards' sweeps are exercised.
        run("analyze", str(path), "--workers", str(n), "--idle-timeout", "2s", "--close-linger", "0s",
            "--out", str(d), "--summary-json", str(d / "s.json"), "-q")
        table = pq.read_table(d / "connections.parquet")
        outs[n] = (table.replace_schema_metadata(None), json.loads((d / "s.json").read_text()))
    (t1, s1), (t3, s3) = outs[1], outs[3]
    assert t1.num_rows > 0
    assert t1.equals(t3)
    assert s1 == s3


def _has_pandas() -> bool:
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


def test_generator_option_beyond_the_models_range_names_the_option(tmp_path):
    p = tmp_path / "far.pcap"
    # The generator's options become scenario keys: a 100 s RTT is beyond path.rtt_max's range.
    with pytest.raises(shortflow.ShortflowError, match="rtt_max_s: .*60s"):
        shortflow.generate(p, connections=5, rtt_max_s=100.0)
    assert not p.exists(), "refused before the file is created"


def test_a_table_that_cannot_be_written_fails_with_its_path(lossy_trace, tmp_path):
    # The table is written on a thread beside the summary: its error still ends the
    # command, names the file, and no summary claims a table was written.
    path, _ = lossy_trace
    (tmp_path / "out" / "connections.parquet").mkdir(parents=True)
    r = run("analyze", str(path), "--out", str(tmp_path / "out"), "--summary-json", str(tmp_path / "s.json"), check=False)
    assert r.returncode == 1, r
    assert "connections.parquet" in r.stderr and "directory" in r.stderr.lower(), r.stderr
    assert "table:" not in r.stdout
    assert not (tmp_path / "s.json").exists()


def test_packets_cut_before_their_tcp_header_are_named_in_a_warning(lossy_trace, tmp_path):
    """16 B of Linux SLL, 40 of IPv6 and 20 of TCP do not fit in a 70 B snap length: every
    packet is skipped, which the user is told, with the file; a whole trace gets no warning."""
    cut = tmp_path / "sll70.pcap"
    shortflow.generate(cut, connections=20, seed=1, link="sll", ipv6=True, snaplen=70)
    r = run("analyze", str(cut), "-q")
    assert f"warning: {cut}: " in r.stderr and " packets skipped: malformed, or cut by the capture's snap length" in r.stderr
    whole = run("analyze", str(lossy_trace[0]), "-q")
    assert "skipped" not in whole.stderr, whole.stderr


def _main_with_atexit_probe(*args: str) -> subprocess.CompletedProcess[str]:
    """`shortflow ARGS` with an `atexit` hook that says whether the interpreter tore down."""
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('TEARDOWN RAN', file=sys.stderr))\n"
            f"sys.argv = ['shortflow', *{list(args)!r}]\n"
            "from shortflow.cli import main\n"
            "main()\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_analyze_ends_without_teardown_and_its_output_arrives_whole(lossy_trace, tmp_path):
    path, truth = lossy_trace
    on_file = tmp_path / "s.json"
    run("analyze", str(path), "--summary-json", str(on_file), "-q")
    r = _main_with_atexit_probe("analyze", str(path), "--summary-json", "-")
    assert r.returncode == 0, r.stderr
    # Buffered output was flushed before the process ended.
    assert json.loads(r.stdout) == json.loads(on_file.read_text())
    assert "TEARDOWN RAN" not in r.stderr
    # A failure still ends with its status and its message.
    r = _main_with_atexit_probe("analyze", str(tmp_path / "missing.pcap"))
    assert r.returncode != 0 and "missing.pcap" in r.stderr
    # Other commands keep the interpreter's teardown (their atexit hooks clean the host).
    r = _main_with_atexit_probe("scenario", "keys")
    assert r.returncode == 0 and "TEARDOWN RAN" in r.stderr


def test_standard_input_from_a_file_is_read_from_where_it_stands(tmp_path: Path) -> None:
    """`(head -c 24 >/dev/null; shortflow analyze -) < trace`: standard input is read from
    its position, not mapped from the file's start, and errors name the file's own byte."""
    trace = tmp_path / "t.pcap"
    shortflow.generate(trace, connections=20)
    with trace.open("rb", buffering=0) as f:
        r = subprocess.run([*SHORTFLOW, "analyze", "-", "-q"], stdin=f, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        os.lseek(f.fileno(), 24, os.SEEK_SET)  # past the file header: records follow
        r = subprocess.run([*SHORTFLOW, "analyze", "-", "-q"], stdin=f, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "-: byte 24: not a pcap or pcapng file" in r.stderr, r.stderr
