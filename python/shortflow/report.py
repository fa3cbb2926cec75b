"""`shortflow analyze --report DIR`: one self-contained HTML page (figures embedded as
PNG data URIs, no network needed to view it) with document 000's Table 1 and Figure 1,
the time-lost breakdown, CDFs, and the worst connections' time-sequence graphs."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import numpy as np

from shortflow.analyze import CAUSES, WAITED_CAUSES, Analysis, share_not_the_paths

TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>shortflow report</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1000px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; } td, th { border: 1px solid #ccc; padding: 3px 8px; }
td.n { text-align: right; font-variant-numeric: tabular-nums; } img { max-width: 100%; }
.small { color: #666; font-size: 90%; }
</style></head><body>
<h1>Where the connections lost their time</h1>
<p class="small">shortflow {{ version }} · {{ files|join(", ") }} · capture point: {{ vantage }}</p>
{% if per_file %}<h2>Each file</h2>
<table><tr><th>file</th>{% for h in file_headers %}<th>{{ h }}</th>{% endfor %}<th>time not the path's</th><th>capture point</th></tr>
{% for f in per_file %}<tr><td>{{ f.path }}</td>{% for v in f.counts %}<td class="n">{{ "{:,}".format(v) }}</td>{% endfor %}
<td class="n">{{ f.lost }}</td><td>{{ f.vantage }}</td></tr>{% endfor %}</table>{% endif %}
<h2>Time lost, over all connections</h2>
<p>Of {{ "{:,.1f}".format(duration) }} connection-seconds:</p>
<table><tr><th>cause</th><th>seconds</th><th>share</th></tr>
{% for c, s, share in breakdown %}<tr><td>{{ c }}</td><td class="n">{{ "{:,.3f}".format(s) }}</td><td class="n">{{ "{:.1%}".format(share) }}</td></tr>
{% endfor %}</table>
<img alt="time-lost breakdown" src="data:image/png;base64,{{ fig_breakdown }}">
<h2>Data phase</h2>
<table>{% for k, v in counts %}<tr><td>{{ k }}</td><td class="n">{{ "{:,}".format(v) }}</td></tr>{% endfor %}</table>
<h2>Document 000, Table 1</h2>
<table><tr><th>row</th><th>SYN</th><th>SYN/ACK</th></tr>
{% for name, a, b in table1 %}<tr><td>{{ name }}</td><td class="n">{{ a }}</td><td class="n">{{ b }}</td></tr>{% endfor %}</table>
<h2>Document 000, Figure 1: gaps before repeated SYNs</h2>
<img alt="duplicate SYN gaps" src="data:image/png;base64,{{ fig_gaps }}">
<h2>Distributions</h2>
<img alt="CDFs" src="data:image/png;base64,{{ fig_cdfs }}">
<table><tr><th>column</th><th>n</th><th>p50</th><th>p90</th><th>p99</th></tr>
{% for name, p in percentiles %}<tr><td>{{ name }}</td><td class="n">{{ p.n }}</td>
<td class="n">{{ fmt(p.p50) }}</td><td class="n">{{ fmt(p.p90) }}</td><td class="n">{{ fmt(p.p99) }}</td></tr>{% endfor %}</table>
<h2>The worst connections</h2>
<p class="small">The connections with the most time lost to something other than the path, each with its time-sequence graph.</p>
{% for w in worst %}<h3>{{ w.title }}</h3><p class="small">{{ w.lost }}</p>
<img alt="time-sequence graph" src="data:image/png;base64,{{ w.png }}">{% endfor %}
</body></html>
"""


#: The per-file table's columns: a header and the file section's key in `--summary-json`.
FILE_COLUMNS = (
    ("packets", "packets"),
    ("tries", "connection_tries"),
    ("successful", "successful"),
    ("not successful", "unsuccessful"),
    ("multiple SYNs", "multiple_syns"),
    ("SYN retransmissions", "syn_retransmissions"),
    ("timeout retransmissions", "timeout_retransmissions"),
    ("fast retransmissions", "fast_retransmissions"),
    ("tail loss probes", "tlp_probes"),
    ("delayed-ACK stalls", "delayed_ack_stalls"),
)


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.4g}"


def write_report(a: Analysis, doc: dict[str, Any], out_dir: Path, *, traces: list[Path], worst: int = 3,
                 filter_expr: str | None = None) -> Path:
    """Writes `out_dir/report.html` and returns its path."""
    import jinja2
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from shortflow.analyze import table1_rows
    from shortflow.plot.gaps import duplicate_gap_histogram
    from shortflow.plot.tsg import draw, packets

    out_dir.mkdir(parents=True, exist_ok=True)
    t = a.table
    # What users waited through (idle and teardown, which nobody waits for, apart).
    shares = doc["time_waited_share"]
    breakdown = [(c, doc["time_lost_s"][c], shares[c] or 0.0) for c in WAITED_CAUSES]
    fig, ax = plt.subplots(figsize=(8, 2.2), dpi=100)
    left = 0.0
    for c, _, share in breakdown:
        ax.barh([0], [share], left=left, label=c)
        left += share
    ax.set_xlim(0, 1)
    ax.set_yticks([])
    ax.set_xlabel("share of the connection-seconds users waited (idle and teardown apart)")
    ax.legend(ncol=4, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.45))
    fig.tight_layout()
    fig_breakdown = _png(fig)

    gaps_png = out_dir / "gaps.png"
    duplicate_gap_histogram(t, gaps_png)
    fig_gaps = base64.b64encode(gaps_png.read_bytes()).decode()
    gaps_png.unlink()

    fig, axes = plt.subplots(2, 2, figsize=(9, 6), dpi=100)
    for ax, name in zip(axes.flat, ("duration_s", "handshake_rtt_s", "rtt_ratio", "max_idle_s")):
        v = t.column(name).to_numpy(zero_copy_only=False).astype(float)
        v = np.sort(v[np.isfinite(v)])
        if v.size:
            ax.step(v, np.arange(1, v.size + 1) / v.size, where="post")
            if name != "rtt_ratio" and v[0] > 0:
                ax.set_xscale("log")
        ax.set_title(f"CDF of {name}", fontsize=9)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig_cdfs = _png(fig)

    # The worst connections: most time lost to causes other than the path, first file.
    worst_rows: list[dict[str, Any]] = []
    if t.num_rows and traces:
        lost = sum(t.column(f"time_{c}_s").to_numpy(zero_copy_only=False) for c in WAITED_CAUSES if c != "network")
        first = str(traces[0])
        in_first = np.array([str(x) == first for x in t.column("trace").to_pylist()])
        order = [i for i in np.argsort(-lost) if in_first[i] and lost[i] > 0][:worst]
        ids = [int(t.column("conn_id")[i].as_py()) for i in order]
        # A trace read only in part (cut short, damaged) gives the packets before the bad
        # byte; its error is the analysis' own, already in `a.errors`.
        pk = packets(traces[0], ids, errors=[]) if ids else {}
        for i, cid in zip(order, ids):
            png = out_dir / f"conn-{cid}.png"
            draw(pk[cid], png, title=f"connection {cid}")
            parts = ", ".join(f"{c} {t.column(f'time_{c}_s')[i].as_py():.3f} s" for c in CAUSES
                              if c != "network" and t.column(f"time_{c}_s")[i].as_py() > 0)
            worst_rows.append({"title": f"connection {cid} ({t.column('client_ip')[i]}:{t.column('client_port')[i]} → "
                                        f"{t.column('server_ip')[i]}:{t.column('server_port')[i]})",
                               "lost": f"duration {t.column('duration_s')[i].as_py():.3f} s: {parts}",
                               "png": base64.b64encode(png.read_bytes()).decode()})
            png.unlink()

    # With several files, a row each (their `--summary-json` sections) before the totals.
    per_file = [{"path": f["path"], "counts": [f[k] for _, k in FILE_COLUMNS], "vantage": f["vantage"],
                 "lost": "–" if (share := share_not_the_paths(f)) is None else f"{share:.1%}"}
                for f in doc["files"]] if len(doc["files"]) > 1 else []
    counts = [(k, doc[k]) for k in ("timeout_retransmissions", "rto_events", "fast_retransmissions", "tlp_probes",
                                    "path_mtu_retransmissions", "unprompted_retransmissions", "spurious_retransmissions",
                                    "out_of_order_segments", "delayed_acks", "delayed_ack_stalls", "zero_window_stalls",
                                    "capture_duplicates", "syn_retries_after_rst", "open_tries")]
    html = jinja2.Environment(autoescape=True).from_string(TEMPLATE).render(
        version=doc["version"], files=[str(p) for p in traces], vantage=doc["vantage"], duration=doc["duration_s"],
        breakdown=breakdown, fig_breakdown=fig_breakdown, counts=counts, table1=table1_rows(a), fig_gaps=fig_gaps,
        fig_cdfs=fig_cdfs, percentiles=list(doc["percentiles"].items()), fmt=_fmt, worst=worst_rows,
        per_file=per_file, file_headers=[h for h, _ in FILE_COLUMNS],
    )
    path = out_dir / "report.html"
    path.write_text(html)
    return path
