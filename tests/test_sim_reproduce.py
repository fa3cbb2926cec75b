"""`shortflow reproduce`: every row has the JSON keys, and the figures the simulator must
get right (hand-computed from the documents) are right."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from shortflow.reproduce import reproduce

KEYS = {"document", "figure", "case", "paper", "ours", "unit"}


@pytest.fixture(scope="module")
def rows():
    # 001 and 004 (aggregate traffic, minutes in full) have their own tests in test_sim_web.py.
    return reproduce(["000", "002", "003"])


def find(rows, document, figure, case):
    (r,) = [r for r in rows if (r.document, r.figure, r.case) == (document, figure, case)]
    return r


def test_json_rows_have_the_keys(tmp_path):
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "shortflow", "reproduce", "all", "--quick", "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert {d["document"] for d in data} == {"000", "001", "002", "003", "004"}
    for d in data:
        assert KEYS <= set(d), d
        assert d["scenario"].startswith("scenarios/")
        assert isinstance(d["ours"], (int, float))


def test_unknown_document_exits_2():
    r = subprocess.run([sys.executable, "-m", "shortflow", "reproduce", "005"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "005" in r.stderr


def test_doc000_table4(rows):
    # The RTO ladder 3, 6, 12 s and the optimizer's 200 ms copies, over a 1 ms LAN.
    expect = {
        ("table4-client", "1 SYN lost, without optimizer"): 3.001,
        ("table4-client", "1 SYN lost, with optimizer"): 0.201,
        ("table4-client", "3 SYNs lost, without optimizer"): 21.001,
        ("table4-client", "3 SYNs lost, with optimizer"): 0.601,
        ("table4-server", "1 SYN lost, with optimizer"): 3.001,
        ("table4-server", "3 SYN/ACKs lost, without optimizer"): 9.001,
        ("table4-server", "3 SYN/ACKs lost, with optimizer"): 0.601,
        ("table4-client-rfc6298", "3 SYNs lost, without optimizer"): 7.001,
        ("table4-client-linux", "1 SYN lost, without optimizer"): 1.001,
    }
    for (figure, case), want in expect.items():
        assert find(rows, "000", figure, case).ours == pytest.approx(want, abs=1e-3), (figure, case)


def test_every_difference_is_explained(rows):
    from shortflow.reproduce import agrees

    differing = [r for r in rows if r.paper is not None and not agrees(r.paper, r.ours)]
    assert differing, "some figures do differ from the papers (e.g. the paper's 258 ms resend)"
    for r in differing:
        # The mechanism offered accounts for the difference actually found, which the note gives.
        assert r.note and not r.note.startswith("UNEXPLAINED") and "paper − ours = " in r.note, r
        d = float(r.note.split("paper − ours = ")[1].split()[0])
        assert d == pytest.approx(r.paper - r.ours, rel=1e-3), r


@pytest.mark.parametrize("scale", [1.5, 0.5, 1.03])
def test_a_wrong_figure_is_not_explained(rows, scale):
    """Every figure the papers give, made wrong on purpose: its note must call the
    difference unexplained, not repeat the canned sentence."""
    from shortflow.reproduce import agrees, row

    checked = 0
    for r in rows:
        if r.paper is None or r.ours is None or r.paper == 0:
            continue
        wrong = r.ours * scale
        # A mechanism accounting for a range of differences W wide cannot tell an error
        # smaller than W (figure 2.2's 4-17 ms per flight against our 5.5 ms): skipped, counted.
        if agrees(r.paper, wrong) or abs(wrong - r.ours) <= r.why.high - r.why.low:
            continue
        bad = row(r.document, r.figure, r.case, r.paper, wrong, r.unit, r.scenario, r.overrides, r.why)
        assert bad.note.startswith("UNEXPLAINED"), (r.figure, r.case, r.paper, wrong, bad.note)
        checked += 1
    assert checked >= (24 if scale != 1.03 else 10), checked  # of the 31 rows with a paper figure


def test_doc002_rounds_and_page(rows):
    for iw, paper in ((2, [2904, 8712, 20328, 43560]), (10, [14520, 43560])):
        got = [find(rows, "002", "bytes-per-round-trip", f"IW {iw}, by round trip {k}").ours for k in range(1, len(paper) + 1)]
        assert got == paper
    assert find(rows, "002", "35kB-page-310ms", "IW 2, request to last byte").ours == pytest.approx(4 * 0.31, abs=0.01)
    assert find(rows, "002", "35kB-page-310ms", "IW 10, request to last byte").ours == pytest.approx(2 * 0.31, abs=0.01)
    on = find(rows, "002", "keep-alive-idle", "IW 2, 2nd 35 kB response after 2 s idle, slow start after idle on").ours
    off = find(rows, "002", "keep-alive-idle", "IW 2, 2nd 35 kB response after 2 s idle, slow start after idle off").ours
    assert on == pytest.approx(4 * 0.31, abs=0.01) and off == pytest.approx(0.31, abs=0.01)


def test_doc003_delayed_acks(rows):
    # The IRIX client answers data 4.1 ms late (processing_time, fitted from figure 2.2).
    assert 0.250 <= find(rows, "003", "figure-2.1", "IW 1, BSD-tick client, transfer time").ours < 0.254
    assert abs(find(rows, "003", "figure-2.2", "IW 2, BSD-tick client, transfer time").ours - 0.021) < 0.001
    assert find(rows, "003", "figure-3.1/3.2", "IW 1, Solaris client, delayed ACKs").ours == 2
    assert find(rows, "003", "figure-3.3/3.4", "IW 2, Solaris client, delayed ACKs").ours == 1


def test_doc003_processing_time_is_fitted_from_figure_2_2():
    """The scenario's client.processing_time is the median answer time in figure 2.2's own
    timestamps, and every figure's packets line up with the simulator's within a few ms."""
    from shortflow.reproduce import doc003
    from shortflow.scenario import Scenario

    fit = doc003.fit_processing_time()
    assert fit == pytest.approx(0.0041, abs=5e-5)
    assert 'processing_time = "4.1ms"' in Scenario.builtin("003-bsd-client").text
    table = doc003.packet_table("2.2")
    matched = [r for r in table if r["delta_s"] is not None]
    assert len(table) == 21 and len(matched) == 19
    assert max(abs(r["delta_s"]) for r in matched) < 0.002
