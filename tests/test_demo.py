"""`shortflow demo` (what `make demo` runs): the analyzer on the shipped trace, then every
paper figure beside the simulator's."""

from __future__ import annotations

import subprocess
import sys


def test_demo_analyzes_the_shipped_trace_and_reproduces_the_documents(tmp_path):
    r = subprocess.run([sys.executable, "-m", "shortflow", "demo", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=120, env={"COLUMNS": "200", "PATH": ""})
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "duplicate-syn-gaps.png").stat().st_size > 1000
    for heading in ("demo-server-2008.pcap.gz", "document 000 · table4-client", "document 002 · 35kB-page-310ms",
                    "document 003 · figure-2.1"):
        assert heading in r.stdout, heading
    assert "UNEXPLAINED" not in r.stdout
