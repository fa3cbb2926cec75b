"""Without a table to write, `analyze` keeps a digest of the connections (the worst
connections' rows, the values of the summary's percentiles) instead of the table: the same
answer and `--summary-json`, in memory that does not grow ~800 bytes a connection."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import shortflow
from shortflow.analyze import summary_document
from shortflow.worst import worst_connections
from syn_flood import syn_flood_pcap

DATA = Path(__file__).parent / "data" / "real"
REAL = sorted(p for p in DATA.iterdir() if p.suffix in (".pcap", ".pcapng", ".gz"))


def _same_answer(paths: list[Path], worst: int = 5) -> None:
    # The digest tracked on one thread and sharded over four trackers (two workers).
    whole = shortflow.analyze(paths, workers=2)
    for workers in (1, 2):
        digest = shortflow.analyze(paths, workers=workers, table=False, worst=worst)
        assert digest.rows == 0, "no table was built"
        assert summary_document(digest) == summary_document(whole)
        assert worst_connections(digest.worst_rows, worst) == worst_connections(whole.table, worst)


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_a_digest_gives_the_answer_the_table_gives_on_real_captures(path):
    _same_answer([path])


def test_a_digest_gives_the_answer_the_table_gives_over_several_traces(tmp_path):
    # Two generated traces with losses (their worst connections are ranked together) and
    # real ones, tracked on two threads each.
    a = tmp_path / "a.pcap"
    b = tmp_path / "b.pcap"
    shortflow.generate(a, connections=3000, syn_loss=0.05, seed=3)
    shortflow.generate(b, connections=2000, syn_loss=0.02, seed=4)
    for worst in (1, 5, 40):
        _same_answer([a, b, DATA / "pcap2har-pcapr-losses-keepalive.pcap"], worst)


def test_the_command_prints_and_writes_the_same_with_and_without_the_table(tmp_path):
    trace = tmp_path / "t.pcap"
    shortflow.generate(trace, connections=2000, syn_loss=0.05, seed=9)

    def run(*extra: str) -> tuple[str, str]:
        summary = tmp_path / f"s{len(extra)}.json"
        out = subprocess.run([sys.executable, "-m", "shortflow", "analyze", str(trace), "--summary-json", str(summary),
                              "--worst", "7", *extra], capture_output=True, text=True, check=True).stdout
        # The lines saying what was written differ; the answer above them must not.
        return "\n".join(line for line in out.splitlines() if not line.startswith(("table:", "exchanges:", "summary:"))), \
            summary.read_text()

    digest = run()
    whole = run("--out", str(tmp_path / "tables"))
    assert "the 7 worst connections" in digest[0]
    assert digest == whole


def test_a_million_unanswered_syns_take_little_memory(tmp_path):
    # Each try is held in 128 bytes while only its SYN is seen and ends when its next SYN
    # is overdue; the summary keeps a digest, not a table: the whole command's peak RSS.
    trace = syn_flood_pcap(tmp_path / "syns.pcap", 1_000_000, per_second=5_000)
    summary = tmp_path / "s.json"
    # Measured by a fresh process of its own: RUSAGE_CHILDREN is the largest child so far.
    measure = ("import resource, subprocess, sys; "
               "subprocess.run(sys.argv[1:], capture_output=True, check=True); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", measure, sys.executable, "-m", "shortflow", "analyze", str(trace),
                          "--summary-json", str(summary)], capture_output=True, text=True, check=True).stdout
    peak_mib = int(out) / 1024
    assert 50 < peak_mib < 300, f"{peak_mib:.0f} MiB"
    doc = json.loads(summary.read_text())
    assert (doc["connection_tries"], doc["successful"]) == (1_000_000, 0)
    assert doc["percentiles"]["duration_s"]["n"] == 1_000_000


def test_the_answer_from_a_digest_imports_no_pandas():
    # pandas' import alone is ~0.3 s, more than a small capture's whole answer.
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "shortflow", "analyze",
                        str(DATA / "one_tcp_stream.pcap"), "--summary-json", "-"], capture_output=True, text=True,
                       check=True)
    assert json.loads(r.stdout)["percentiles"]["duration_s"]["n"] == 1
    imported = {line.split("|")[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    assert "numpy" in imported and "pandas" not in imported
