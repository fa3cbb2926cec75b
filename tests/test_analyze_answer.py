"""`shortflow analyze` answers first (the time account, the worst connections and the
command that graphs each), lists connections with `-l`, and `shortflow graph` draws what
the SVG says it draws: each mark's class and colour, the legend's words beside them,
checked against tshark's own reading of the capture."""

from __future__ import annotations

import gzip
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import shortflow

DATA = Path(__file__).parent / "data" / "real"
SHORTFLOW = [sys.executable, "-m", "shortflow"]
SVG = "{http://www.w3.org/2000/svg}"
#: A download repaired by fast retransmits, then by a timeout after a 1 s silence.
SACK = DATA / "sv-sack-recovery-window-updates.pcap.gz"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([*SHORTFLOW, *args], capture_output=True, text=True, timeout=120, cwd=cwd)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


@pytest.fixture(scope="module")
def sack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sack") / "sack.pcap"
    out.write_bytes(gzip.decompress(SACK.read_bytes()))
    return out


@pytest.fixture(scope="module")
def lossy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lossy") / "lossy.pcap"
    shortflow.generate(path, connections=300, seed=11, ack_loss=0.15)
    return path


def test_the_answer_comes_first(lossy: Path) -> None:
    out = run("analyze", str(lossy)).stdout.splitlines()
    # What was read, then the time account, then the worst connections; Table 1 not
    # printed unless handshake losses lead (here slow-start rounds cost more).
    assert re.match(r"[\d,]+ packets, 300 connections: 300 connection tries", out[0]), out[0]
    assert out[1].startswith("capture point: ")
    assert out[2].startswith("users waited ") and "in all over 300 connections" in out[2]
    a = shortflow.analyze(lossy)
    from shortflow.analyze import CAUSE_WORDS, CAUSES
    doc_lost = {c: float(sum(a.table.column(f"time_{c}_s").to_pylist())) for c in CAUSES}
    account = [ln for ln in out[3:] if re.match(r"\s+(<1|\d+)%\s", ln)]
    # Largest first, as many rows as causes that took time.
    assert len(account) == sum(1 for c, v in doc_lost.items() if v > 0 and c not in ("idle", "teardown"))
    first_cause = max((v, c) for c, v in doc_lost.items() if c not in ("idle", "teardown"))[1]
    assert account[0].endswith(CAUSE_WORDS[first_cause]), account[0]
    i = next(k for k, ln in enumerate(out) if ln.startswith("the 5 worst connections"))
    worst = out[i + 1:i + 11]
    ids = [int(m.group(1)) for ln in worst if (m := re.match(r"\s+conn (\d+)\s", ln))]
    assert len(ids) == 5
    # The first is the connection that lost most to something other than the path.
    t = a.table
    lost = [sum(t.column(f"time_{c}_s")[k].as_py() for c in ("handshake", "slow_start", "receive_window", "timeout",
                                                                 "fast_retransmit", "tlp", "delayed_ack", "zero_window",
                                                                 "application")) for k in range(t.num_rows)]
    assert ids[0] == t.column("conn_id")[max(range(t.num_rows), key=lambda k: lost[k])].as_py()
    # Each is followed by the command that graphs it, which runs as printed.
    command = worst[1].strip()
    assert command.startswith("shortflow graph ") and f"--conn {ids[0]}" in command
    assert "Document 000, Table 1" not in "\n".join(out)
    assert any(ln.startswith("document 000's Table 1 (--table1)") for ln in out)
    assert "Document 000, Table 1" in run("analyze", str(lossy), "--table1").stdout


def test_the_printed_graph_command_draws_the_worst_connection(lossy: Path, tmp_path: Path) -> None:
    out = run("analyze", str(lossy), "--worst", "1").stdout
    command = next(ln.strip() for ln in out.splitlines() if ln.strip().startswith("shortflow graph"))
    words = shlex.split(command)[1:]
    r = run(*words, cwd=tmp_path)
    conn = words[words.index("--conn") + 1]
    # Without -o it says where it wrote, in full.
    assert f"no -o given: wrote the time-sequence graph of connection {conn} to {tmp_path / f'conn-{conn}.png'}" in r.stdout
    assert (tmp_path / f"conn-{conn}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_graph_command_carries_the_timeouts_that_decide_the_ids(tmp_path: Path) -> None:
    # A keep-alive capture with rests over half a second: with --idle-timeout 0.5s a rest
    # ends a connection and the next packets start another, so the ids are not the
    # default's. The printed command says so, and draws the row the analysis meant.
    capture = DATA / "pcap2har-pcapr-losses-keepalive.pcap"
    short = shortflow.analyze(str(capture), idle_timeout_s=0.5).table
    assert short.num_rows > shortflow.analyze(str(capture)).table.num_rows
    out = run("analyze", str(capture), "--idle-timeout", "500ms", "--worst", "3").stdout
    commands = [shlex.split(ln.strip())[1:] for ln in out.splitlines() if ln.strip().startswith("shortflow graph")]
    assert commands and all(w[w.index("--idle-timeout") + 1] == "0.5s" for w in commands), out
    for words in commands:
        conn = int(words[words.index("--conn") + 1])
        svg = tmp_path / f"conn-{conn}.svg"
        r = run(*words, "-o", str(svg))
        row = short.slice(conn, 1).to_pylist()[0]
        title = f"connection {conn}: {row['client_ip']}:{row['client_port']} → {row['server_ip']}:{row['server_port']}"
        assert title in svg.read_text(), (title, r.stdout)
        # The same command without the timeout draws another connection's packets (or
        # another stretch of this one's): the option is what makes the id this row's.
        from shortflow.plot.tsg import packets

        drawn = packets(capture, [conn], idle_timeout_s=0.5)[conn]
        assert len(drawn["ts_ns"]) == row["packets_c2s"] + row["packets_s2c"] + row["capture_duplicates"]


def test_handshake_losses_leading_bring_table1(tmp_path: Path) -> None:
    path = tmp_path / "syn.pcap"
    shortflow.generate(path, connections=200, seed=2, syn_loss=0.3)
    out = run("analyze", str(path)).stdout
    assert "handshake losses" in out.splitlines()[3], out
    assert "Document 000, Table 1" in out


def test_units_fit_the_value(sack: Path) -> None:
    out = run("analyze", str(sack)).stdout
    # A few hundred µs of fast-retransmit repair is printed in µs, not as 0.000 s.
    assert re.search(r"\s\d+ µs  loss repair by fast retransmit", out), out
    assert "0.000 s" not in out


def test_listing_one_line_per_connection(lossy: Path) -> None:
    a = shortflow.analyze(lossy)
    # In a pipe: a tab-separated table with a header, a row per connection.
    out = run("analyze", str(lossy), "-l").stdout.splitlines()
    assert out[0] == "# connections (shortflow analyze -l)"
    header = out[1].split("\t")
    rows = [dict(zip(header, ln.split("\t"))) for ln in out[2:]]
    assert len(rows) == a.table.num_rows == 300
    t = a.table
    for k in (0, 137, 299):
        r = rows[k]
        assert int(r["conn_id"]) == t.column("conn_id")[k].as_py()
        assert r["client"] == f"{t.column('client_ip')[k]}:{t.column('client_port')[k]}"
        assert int(r["packets_s2c"]) == t.column("packets_s2c")[k].as_py()
        retx = sum(t.column(f"retx_{x}_s2c")[k].as_py() for x in ("timeout", "fast", "tlp"))
        assert int(r["retx_s2c"]) == retx
    # --format csv: the same rows as CSV; --format jsonl: one object a line.
    csv = run("analyze", str(lossy), "-l", "--format", "csv").stdout.splitlines()
    assert csv[0].replace('"', "").split(",") == header and len(csv) == 301
    jsonl = run("analyze", str(lossy), "-l", "--format", "jsonl").stdout.splitlines()
    assert len(jsonl) == 300 and '"main_cause"' in jsonl[0]


def test_listing_on_a_terminal_reads_like_tcptrace(sack: Path) -> None:
    # A pseudo-terminal: the listing as lines a person reads.
    import os
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # the child runs the command with its standard output on the terminal
        os.execv(sys.executable, [sys.executable, "-m", "shortflow", "analyze", str(sack), "-l"])
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.waitpid(pid, 0)
    text = b"".join(chunks).decode()
    line = next(ln for ln in text.splitlines() if re.search(r"(^|\x1b\[\d*K)0:  ", ln))
    assert "10.38.251.146:33372 → 10.38.251.147:80" in line
    assert re.search(r"\d+> \d+<", line) and "resent 0> 18<" in line and "fin" in line, line
    assert "most to handshake losses 1 s" in line, line


def _marks(svg: Path) -> dict[str, list[tuple[int, str]]]:
    """Each class of mark in the SVG: (µs since the first packet, stroke colour) per mark."""
    out: dict[str, list[tuple[int, str]]] = {}
    for g in ET.parse(svg).getroot().iter(f"{SVG}g"):
        m = re.fullmatch(r"([a-z_]+)-(\d+)-(\d+)", g.get("id", ""))
        if not m:
            continue
        path = g.find(f"{SVG}path")
        style = path.get("style", "") if path is not None else ""
        colour = re.search(r"stroke: (#[0-9a-f]{6})", style)
        out.setdefault(m.group(1), []).append((int(m.group(2)), colour.group(1) if colour else ""))
    return out


def _legend(svg: Path) -> dict[str, tuple[str, str]]:
    """Legend entries by class: (the handle's colour, the label's words)."""
    root = ET.parse(svg).getroot()
    groups = {g.get("id"): g for g in root.iter(f"{SVG}g") if g.get("id", "").startswith("legend-")}
    out = {}
    for gid, g in groups.items():
        if gid.endswith("-label"):
            continue
        cls = gid.removeprefix("legend-")
        style = " ".join(p.get("style", "") for p in g.iter(f"{SVG}path")) + " ".join(
            u.get("style", "") for u in g.iter(f"{SVG}use"))
        colour = re.search(r"stroke: (#[0-9a-f]{6})", style)
        text = "".join(groups[f"{gid}-label"].itertext()).strip()
        out[cls] = (colour.group(1) if colour else "", text)
    return out


def _tshark(capture: Path, display_filter: str, *fields: str) -> list[list[str]]:
    r = subprocess.run(["tshark", "-r", str(capture), "-Y", display_filter, "-T", "fields", *sum((["-e", f] for f in fields), [])],
                       capture_output=True, text=True, check=True, timeout=60)
    return [ln.split("\t") for ln in r.stdout.splitlines()]


def test_graph_marks_and_legend_say_what_tshark_sees(sack: Path, tmp_path: Path) -> None:
    svg = tmp_path / "g.svg"
    r = run("graph", str(sack), "--conn", "0", "-o", str(svg))
    assert str(svg) in r.stdout
    marks, legend = _marks(svg), _legend(svg)
    # The legend: each class with its own colour and words (swapping two fails here).
    assert legend["retx_timeout"] == ("#d62828", "retransmission after timeout")
    assert legend["retx_fast"] == ("#f77f00", "fast retransmission")
    assert legend["dupack"][1] == "duplicate ACK" and legend["sack"][1] == "SACK block"
    assert legend["rwin"][1].startswith("receive window") and legend["syn"][1] == "SYN" and legend["fin"][1] == "FIN"
    # Each mark is drawn in its class' colour.
    assert {c for _, c in marks["retx_timeout"]} == {"#d62828"}
    assert {c for _, c in marks["retx_fast"]} == {"#f77f00"}
    # The classes are tshark's: its fast retransmissions are ours; its retransmissions from
    # the first one after the capture's second of silence (the timer's expiry) are our
    # timeout class, and none of ours is before it.
    t0 = float(_tshark(sack, "frame.number == 1", "frame.time_epoch")[0][0])
    fast = {round((float(t) - t0) * 1e6) for (t,) in _tshark(sack, "tcp.analysis.fast_retransmission", "frame.time_epoch")}
    assert fast and fast <= {t for t, _ in marks["retx_fast"]}, (fast, marks["retx_fast"])
    retx = [(float(t) - t0, float(d)) for t, d in _tshark(sack, "tcp.analysis.retransmission and tcp.len > 0",
                                                          "frame.time_epoch", "frame.time_delta")]
    expiry = next(t for t, d in retx if d > 0.5)
    after = sorted(round(t * 1e6) for t, _ in retx if t >= expiry)
    assert sorted(t for t, _ in marks["retx_timeout"]) == after
    # Duplicate ACKs: tshark's, each one ours.
    dup = {round((float(t) - t0) * 1e6) for (t,) in _tshark(sack, "tcp.analysis.duplicate_ack", "frame.time_epoch")}
    assert dup and dup <= {t for t, _ in marks["dupack"]}
    # SYNs and FINs of both sides.
    syns = len(_tshark(sack, "tcp.flags.syn == 1", "frame.number"))
    fins = len(_tshark(sack, "tcp.flags.fin == 1", "frame.number"))
    assert len(marks["syn"]) == syns and len(marks["fin"]) == fins


def test_graph_zoom_and_title(sack: Path, tmp_path: Path) -> None:
    svg = tmp_path / "z.svg"
    run("graph", str(sack), "--conn", "0", "-o", str(svg), "--from", "1.5s", "--to", "2.1s")
    root = ET.parse(svg).getroot()
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]
    assert any("connection 0: 10.38.251.146:33372 → 10.38.251.147:80" in t for t in texts), texts
    # The x axis' tick labels (ms) lie within the zoom.
    ticks = [float(t.replace("−", "-").replace(",", "")) for g in root.iter(f"{SVG}g")
             if g.get("id", "").startswith("xtick_") for t in ["".join(g.itertext()).strip()] if t]
    assert ticks and min(ticks) >= 1450 and max(ticks) <= 2150, ticks
    bad = subprocess.run([*SHORTFLOW, "graph", str(sack), "--conn", "0", "--from", "2s", "--to", "1s"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "the end must come after the start" in bad.stderr


def test_graph_of_a_kernel_fast_retransmit(tmp_path: Path) -> None:
    # The testbed's capture of a Linux server repairing one loss by fast retransmit (see
    # tests/data/testbed/SOURCES.md): tshark's fast retransmission and duplicate ACKs are
    # the graph's, and nothing is marked a timeout.
    capture = Path(__file__).parent / "data" / "testbed" / "fast-retransmit-server-side.pcap"
    svg = tmp_path / "fr.svg"
    run("graph", str(capture), "--conn", "0", "-o", str(svg))
    marks = _marks(svg)
    t0 = float(_tshark(capture, "frame.number == 1", "frame.time_epoch")[0][0])

    def times(display_filter: str) -> set[int]:
        return {round((float(t) - t0) * 1e6) for (t,) in _tshark(capture, display_filter, "frame.time_epoch")}

    assert times("tcp.analysis.fast_retransmission") == {t for t, _ in marks["retx_fast"]}
    assert times("tcp.analysis.duplicate_ack") <= {t for t, _ in marks["dupack"]}
    assert "retx_timeout" not in marks
    assert _legend(svg)["retx_fast"] == ("#f77f00", "fast retransmission")
