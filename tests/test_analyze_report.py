"""`analyze --report`: every section checked by what it says, every figure readable at any
table size (matplotlib's own text extents), and the page opened in Debian's chromium."""

from __future__ import annotations

import html as htmllib
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import shortflow
from shortflow.analyze import CAUSE_WORDS, WAITED_CAUSES, summary_document
from shortflow.units import format_seconds
from shortflow.worst import worst_connections

SHORTFLOW = [sys.executable, "-m", "shortflow"]
CHROMIUM = ["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("report")
    trace = d / "lossy.pcap"
    shortflow.generate(trace, connections=400, seed=7, syn_loss=0.1, ack_loss=0.1, vantage="client")
    r = subprocess.run([*SHORTFLOW, "analyze", str(trace), "--report", str(d / "out"), "-q"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return trace, d / "out" / "report.html"


def section(html: str, anchor: str) -> str:
    """The text of the section whose heading has id `anchor`, up to the next h2."""
    start = html.index(f'<h2 id="{anchor}">')
    end = html.find("<h2", start + 1)
    return html[start:end if end > 0 else len(html)]


def cells(part: str) -> list[list[str]]:
    return [[htmllib.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", part, re.S)]


def test_each_section_says_what_the_analysis_found(report: tuple[Path, Path]) -> None:
    trace, page = report
    html = page.read_text()
    a = shortflow.analyze(trace)
    doc = summary_document(a)
    # The time account: a row per cause that took time, in the command line's words.
    account = {r[0]: r[1] for r in cells(section(html, "time-account"))[1:]}
    expected = {CAUSE_WORDS[c]: format_seconds(doc["time_lost_s"][c]) for c in WAITED_CAUSES if doc["time_lost_s"][c] > 0}
    assert account == expected
    # The worst connections: their ids, 4-tuples, graphs and commands.
    worst = section(html, "worst")
    for w in worst_connections(a.table, 3, trace=str(trace)):
        assert f'<h3 id="conn-{w.conn_id}">connection {w.conn_id} ({w.client} → {w.server})</h3>' in htmllib.unescape(worst)
        assert f'alt="time-sequence graph of connection {w.conn_id}"' in worst
        assert htmllib.escape(w.graph_command(), quote=False) in worst
    # The data phase: each count as the summary has it.
    data = {r[0]: int(r[1].replace(",", "")) for r in cells(section(html, "data-phase"))}
    for key in ("timeout_retransmissions", "fast_retransmissions", "delayed_acks", "capture_duplicates", "open_tries"):
        assert data[key] == doc[key], key
    assert len(data) >= 10
    # Table 1: the tries and multiple SYNs.
    t1 = {r[0]: r[1:] for r in cells(section(html, "table1"))[1:]}
    assert t1["connection tries total"][0] == f"{doc['connection_tries']:,}"
    assert t1["multiple SYNs (SYN/ACKs)"][0] == f"{doc['multiple_syns']:,}"
    # Figure 1: SYNs were repeated near the client, so it is drawn.
    assert doc["multiple_syns"] > 0 and 'alt="duplicate SYN gaps"' in section(html, "figure1")
    # The distributions: p50 of the duration.
    dist = {r[0]: r for r in cells(section(html, "distributions"))[1:]}
    assert dist["duration_s"][2] == f"{doc['percentiles']['duration_s']['p50']:.4g}"


def _overlaps(boxes: list[Any]) -> list[tuple[int, int]]:
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes)) if boxes[i].overlaps(boxes[j])]


@pytest.mark.parametrize("values", [[0.011, 0.012], [0.003, 0.004, 0.9], [1e-4, 2e-4, 5e-4, 2.0, 30.0], [0.2] * 3])
def test_cdf_tick_labels_never_overlap(values: list[float]) -> None:
    from shortflow.report import cdf_figure

    n = len(values)
    t = pa.table({"duration_s": values, "handshake_rtt_s": values, "rtt_ratio": [1.0 + v for v in values],
                  "max_idle_s": [v / 2 for v in values]})
    fig = cdf_figure(t)
    renderer = fig.canvas.get_renderer()
    fig.canvas.draw()
    for ax in fig.axes:
        # Major and minor labels alike (a log axis over less than a decade labels its minor ticks).
        labels = [lab for lab in [*ax.get_xticklabels(), *ax.get_xticklabels(minor=True)]
                  if lab.get_visible() and lab.get_text()]
        boxes = [lab.get_window_extent(renderer) for lab in labels]
        # Only the labels inside the axis' span are drawn.
        lo, hi = ax.get_xlim()
        inside = [b for b, lab in zip(boxes, labels) if lo <= lab.get_position()[0] <= hi]
        assert not _overlaps(inside), (ax.get_title(), [lab.get_text() for lab in labels])
    assert n


def test_breakdown_legend_clear_of_the_axis_title() -> None:
    from shortflow.report import breakdown_figure

    fig = breakdown_figure([(c, 1.0, 1 / len(WAITED_CAUSES)) for c in WAITED_CAUSES])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent(renderer)
    assert not legend.overlaps(ax.xaxis.label.get_window_extent(renderer))
    assert not legend.overlaps(ax.get_window_extent(renderer))
    # Inside the figure: nothing cut off.
    assert fig.bbox.contains(legend.x0, legend.y0) and fig.bbox.contains(legend.x1, legend.y1)


def test_figure1_says_what_it_cannot_draw(tmp_path: Path) -> None:
    from shortflow.plot.gaps import duplicate_gap_histogram

    lists = pa.list_(pa.float64())
    none = pa.table({"syn_gaps_s": pa.array([[], []], lists)})
    drawn = duplicate_gap_histogram(none, tmp_path / "none.svg")
    assert drawn.gaps == 0 and "No SYN was sent again" in (tmp_path / "none.svg").read_text()
    # A 32 s gap is drawn at 32 s (the axis reaches past it), a 300 s one is counted in words.
    far = pa.table({"syn_gaps_s": pa.array([[1.0, 3.0], [32.0], [300.0]], lists)})
    drawn = duplicate_gap_histogram(far, tmp_path / "far.svg")
    assert drawn.max_s >= 33 and drawn.beyond == 1
    assert "1 longer than 130 s not drawn (longest 300.0 s)" in (tmp_path / "far.svg").read_text()


def test_a_report_without_repeated_syns_says_so(tmp_path: Path) -> None:
    trace = tmp_path / "clean.pcap"
    shortflow.generate(trace, connections=50, seed=1, syn_loss=0.0, synack_loss=0.0, ack_loss=0.0)
    subprocess.run([*SHORTFLOW, "analyze", str(trace), "--report", str(tmp_path / "r"), "-q"], check=True, timeout=120)
    fig1 = section((tmp_path / "r" / "report.html").read_text(), "figure1")
    assert "No SYN was sent again in these traces" in fig1 and "<img" not in fig1


def _chromium(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CHROMIUM, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *extra,
                           page.as_uri()], capture_output=True, text=True, timeout=120)


def _console_errors(stderr: str) -> list[str]:
    # Chromium's log of the page's console: `…:CONSOLE:line] "message", source: …`, one
    # line a message (console.error and uncaught exceptions alike). The report runs no
    # script: any message at all is a fault.
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln]


def test_the_report_in_chromium(report: tuple[Path, Path], tmp_path: Path) -> None:
    trace, page = report
    # The console check sees an error when there is one.
    bad = tmp_path / "bad.html"
    bad.write_text("<!doctype html><html><body><script>console.error('boom'); nosuchfunction();</script></body></html>")
    seen = _console_errors(_chromium(bad, tmp_path / "p0", "--dump-dom").stderr)
    assert any("boom" in ln for ln in seen) and any("nosuchfunction" in ln for ln in seen), seen
    r = _chromium(page, tmp_path / "p1", "--dump-dom")
    assert r.returncode == 0, r.stderr[-2000:]
    assert _console_errors(r.stderr) == []
    dom = r.stdout
    worst = worst_connections(shortflow.analyze(trace).table, 1, trace=str(trace))[0]
    assert f'id="conn-{worst.conn_id}"' in dom and f"connection {worst.conn_id}" in dom
    for heading in ("Where the time went", "The worst connections", "Data phase", "Document 000, Table 1"):
        assert heading in dom
    shot = tmp_path / "shot.png"
    r = _chromium(page, tmp_path / "p2", f"--screenshot={shot}", "--window-size=1200,2400", "--hide-scrollbars")
    assert r.returncode == 0 and _console_errors(r.stderr) == []
    from PIL import Image

    img = Image.open(shot).convert("RGB")
    colours = img.getcolors(maxcolors=1 << 20) or []
    # Not blank: text and figures make many colours, and most of the page is not one colour.
    assert len(colours) > 50, len(colours)
    assert max(n for n, _ in colours) < 0.97 * img.width * img.height
