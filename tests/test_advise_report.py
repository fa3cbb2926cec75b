"""`shortflow advise --report DIR`: the analysis' page with what would help — the fixes in
the order and with the figures `--json` gives, the share of connections the replays hold,
the command that applies each fix — as Debian's chromium renders it (its DOM, no console
message)."""

from __future__ import annotations

import html as htmllib
import json
import re
import subprocess
import sys
from pathlib import Path

from test_analyze_report import _chromium, _console_errors

SHORTFLOW = [sys.executable, "-m", "shortflow"]

#: 120 connections near the server, a fifth of the SYN/ACKs and 3 % of the data lost, and
#: a server with document 002's initial window of two segments: the window and the SYN/ACK
#: timer both help.
SCENARIO = """\
seed = 11
[path]
rtt = "100ms"
[server]
initial_window = 2
[random_loss]
per_connection = true
synack = 0.2
data = 0.03
[workload]
request = "300B"
response = "20kB"
connections = 120
interval = "50ms"
"""


def _text(cell: str) -> str:
    return htmllib.unescape(re.sub(r"<[^>]+>", "", cell)).strip()


def test_the_report_says_what_would_help_in_chromium(tmp_path: Path) -> None:
    sc, pcap, out, doc = tmp_path / "s.toml", tmp_path / "s.pcap", tmp_path / "report", tmp_path / "advice.json"
    sc.write_text(SCENARIO)
    subprocess.run([*SHORTFLOW, "simulate", str(sc), "--set", 'capture.point="server"', "--pcap", str(pcap), "-q"],
                   check=True, timeout=120)
    r = subprocess.run([*SHORTFLOW, "advise", str(pcap), "--report", str(out), "--json", str(doc)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    advice = json.loads(doc.read_text())
    page = out / "report.html"
    r = _chromium(page, tmp_path / "profile", "--dump-dom")
    assert r.returncode == 0, r.stderr[-2000:]
    assert _console_errors(r.stderr) == []
    dom = r.stdout
    start = dom.index('<h2 id="what-would-help">What would help</h2>')
    part = dom[start:dom.index("<h2", start + 1)]
    # The fidelity share, as the JSON counts it.
    replay = advice["replay"]
    fidelity = _text(re.search(r'<span id="fidelity">(.*?)</span>', part, re.S).group(1))
    assert " ".join(fidelity.split()) == (f"{replay['faithful']} of {replay['connections']} connections "
                                          f"({replay['faithful_share']:.0%}) replay within 10 % of their observed duration")
    # The fixes: one row each, best first, with the JSON's figures and commands.
    table = re.search(r'<table id="fixes">(.*?)</table>', part, re.S).group(1)
    rows = [[_text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)][1:]
    assert len(rows) == len(advice["fixes"]) >= 7
    for k, (row, f) in enumerate(zip(rows, advice["fixes"]), 1):
        assert row[0] == str(k) and row[1] == f["fix"] and row[2] == f"{f['connections_helped']:,}", (row, f)
        assert row[3].startswith(f"{f['saved_s_total']:.3g} ["), (row, f)
        assert row[6:9] == [f"{f['harm'][h]:,}" for h in ("extra_packets", "spurious_retransmissions",
                                                           "connections_slower")], (row, f)
        neighbours = f["harm"]["neighbours_s"]
        assert row[9] == (f"{neighbours:.3g}" if neighbours is not None else "–"), (row, f)
        assert row[10] == f["apply"], (row, f)
    # A window of two segments: a larger one is among the best, and saves time.
    best = advice["fixes"][0]
    assert "IW" in best["fix"] and best["saved_s_total"] > 1, best
    # What the replays cannot show is said beside them.
    assert "cannot show what a larger initial window does to its neighbours" in part
    # The rest of the analysis' page is there too.
    for heading in ("Where the time went", "The worst connections", "Document 000, Table 1"):
        assert heading in dom
