"""The analyzer beside tshark over a whole directory of captures: for each file, the counts
tests/test_trace_real_captures.py compares (data retransmissions, SYN retransmissions,
tries refused by RST and by ICMP, SYNs resent after a RST, Fast Open tries, segments out of
order), read from tshark's own fields by that test's helpers; prints the files where they
differ and how many agree. A way to find what the analyzer (or tshark) gets wrong on
corpora too large to keep in the repository, e.g. suricata-verify's ~1,500 captures:

    .venv/bin/python benches/tshark_sweep.py DIR [--jsonl OUT]

Captures the analyzer cannot read to the end are listed with their error (what was read
before it is still compared). tshark takes ~0.5 s a file.

With `--exchanges` it compares instead each connection's exchanges with the HTTP messages
tshark reads from their payload (tests/test_trace_exchanges_tshark.py's comparison): the
requests in order, each response by the request it answers. Where they differ the a-b-t
model may mean it (pipelined requests are one ADU, so are two responses to one request,
and frames after an upgrade are data), so the differences are listed to be read.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import shortflow
import test_trace_exchanges_tshark as exchanges
import test_trace_real_captures as real

#: The counts compared (tshark's read by the test's own helpers, which live with it).
COUNTS = ("data_retransmissions", "syn_retransmissions", "refused_rst", "refused_icmp", "syn_retries_after_rst",
          "fast_open", "out_of_order")


def ours(path: Path) -> tuple[dict[str, int], list[str]]:
    a = shortflow.analyze(path)
    s = a.raw_summary
    counts = {
        "data_retransmissions": real._data_retransmissions(s),
        "syn_retransmissions": s["syn_retransmissions"],
        "refused_rst": s["refused_rst"],
        "refused_icmp": s["refused_icmp"],
        "syn_retries_after_rst": s["syn_retries_after_rst"],
        "fast_open": s["fast_open"],
        "out_of_order": s["out_of_order_segments"],
    }
    return counts, [str(e) for e in a.errors]


def tshark(path: Path, tmp: Path) -> dict[str, int]:
    h = real._read_tshark_handshakes(path, tmp)
    return {
        "data_retransmissions": real._tshark_count(path, tmp, real.TSHARK_RETX),
        "syn_retransmissions": h.syn_retransmissions,
        "refused_rst": len(h.rst_refused),
        "refused_icmp": len(h.icmp_refused),
        "syn_retries_after_rst": h.syns_after_rst,
        "fast_open": len(h.fast_open),
        "out_of_order": real._tshark_count(path, tmp, "tcp.analysis.out_of_order"),
    }


def sweep_exchanges(files: list[Path]) -> None:
    """Each file's exchanges beside tshark's HTTP messages; a line per file that differs."""
    with_http = agree = 0
    for p in files:
        try:
            compared, differences = exchanges.exchange_differences(p)
        except shortflow.exceptions.ShortflowError as e:
            print(f"{p.name}: not read: {e}")
            continue
        except Exception as e:  # tshark refuses some damaged files outright
            print(f"{p.name}: tshark: {type(e).__name__}")
            continue
        if not compared and not differences:
            continue  # no HTTP tshark could read
        with_http += 1
        agree += not differences
        if differences:
            print(f"{p.name}: " + "; ".join(differences[:3]))
    print(f"\n{with_http} of {len(files)} files with HTTP; exchanges as tshark's messages in {agree}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--jsonl", type=Path, help="also write one JSON record per file here")
    ap.add_argument("--exchanges", action="store_true", help="compare exchange sizes with tshark's HTTP messages")
    args = ap.parse_args()
    files = sorted(p for p in args.dir.iterdir() if p.is_file() and p.stat().st_size > 0)
    if args.exchanges:
        sweep_exchanges(files)
        return
    out = args.jsonl.open("w") if args.jsonl else None
    differ = {c: 0 for c in COUNTS}
    compared = 0
    with tempfile.TemporaryDirectory() as tmp:
        for p in files:
            try:
                mine, errors = ours(p)
            except shortflow.exceptions.ShortflowError as e:
                print(f"{p.name}: not read: {e}")
                continue
            if errors:
                print(f"{p.name}: {errors[0]}")
            try:
                theirs = tshark(p, Path(tmp))
            except Exception as e:  # tshark refuses some damaged files outright
                print(f"{p.name}: tshark: {type(e).__name__}")
                continue
            compared += 1
            diff = {c: (mine[c], theirs[c]) for c in COUNTS if mine[c] != theirs[c]}
            for c in diff:
                differ[c] += 1
            if diff:
                print(f"{p.name}: " + ", ".join(f"{c} {a} (tshark {b})" for c, (a, b) in diff.items()))
            if out:
                out.write(json.dumps({"file": p.name, "ours": mine, "tshark": theirs, "errors": errors}) + "\n")
    print(f"\n{compared} of {len(files)} files compared; files that differ, by count: "
          + ", ".join(f"{c} {n}" for c, n in differ.items()))


if __name__ == "__main__":
    main()
