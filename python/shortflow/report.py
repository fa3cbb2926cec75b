"""`shortflow analyze --report DIR`: one self-contained HTML page (figures embedded as
PNG data URIs, no network needed to view it) with document 000's Table 1 and Figure 1,
the time account, the worst connections' time-sequence graphs, CDFs; `shortflow advise
--report DIR` adds what would help (the fixes ranked, and the share of connections the
replays hold).

Every figure reads at any table size: an empty one says so in words, log axes carry few
enough labels not to overlap, a value beyond an axis is counted in words."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from shortflow import _core
from shortflow.analyze import CAUSE_WORDS, CAUSES, WAITED_CAUSES, Analysis, share_not_the_paths
from shortflow.units import format_seconds

if TYPE_CHECKING:
    from shortflow.advise import Advice

TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>shortflow report</title><link rel="icon" href="data:,">
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
<h2 id="time-account">Where the time went</h2>
{% if filter_expr %}<p class="small">Only the packets the libpcap filter <code>{{ filter_expr }}</code> selects (outer headers of tunnelled packets).</p>{% endif %}
<p>Users waited {{ format_seconds(waited) }} over {{ "{:,}".format(connections) }} connections (first SYN to last data byte):</p>
<table><tr><th>cause</th><th>time</th><th>share</th></tr>
{% for c, s, share in breakdown|sort(attribute="1", reverse=True) if s > 0 %}<tr><td>{{ words[c] }}</td><td class="n">{{ format_seconds(s) }}</td><td class="n">{{ "{:.1%}".format(share) }}</td></tr>
{% endfor %}</table>
<img alt="shares of the time users waited" src="data:image/png;base64,{{ fig_breakdown }}">
{% if advice %}<h2 id="what-would-help">What would help</h2>
<p>Each connection replayed in the simulator, unchanged and under each start-up fix of the {{ advice.vantage }}'s host
(<code>shortflow advise</code>). <span id="fidelity">{{ "{:,}".format(advice.faithful) }} of {{ "{:,}".format(advice.connections) }}
connections ({{ "{:.0%}".format(advice.faithful_share) }}) replay within 10 % of their observed duration</span>; only those feed
the estimates.</p>
<table id="fixes"><tr><th>#</th><th>fix</th><th>connections helped</th><th>seconds saved, total</th><th>median</th><th>p95</th>
<th>extra packets</th><th>spurious retransmissions</th><th>connections made slower</th><th>seconds the neighbours lost</th><th>how to apply it</th></tr>
{% for f in advice.fixes %}<tr><td class="n">{{ loop.index }}</td><td>{{ f.fix }}</td><td class="n">{{ "{:,}".format(f.connections_helped) }}</td>
<td class="n">{{ est(f.saved_s_total, f.saved_s_total_ci) }}</td><td class="n">{{ est(f.saved_s_median, f.saved_s_median_ci) }}</td>
<td class="n">{{ est(f.saved_s_p95, f.saved_s_p95_ci) }}</td><td class="n">{{ "{:,}".format(f.extra_packets) }}</td>
<td class="n">{{ "{:,}".format(f.spurious_retransmissions) }}</td><td class="n">{{ "{:,}".format(f.connections_slower) }}</td>
<td class="n">{{ "{:.3g}".format(f.neighbours_s) if f.neighbours_s is not none else "–" }}</td>
<td><code>{{ f.apply }}</code></td></tr>
{% endfor %}</table>
<p class="small">Seconds saved on the connections replayed faithfully, with bootstrap 95 % intervals; median and p95 per connection.
Seconds the neighbours lost: what a fix's larger flights cost the connections that overlapped on one path, replayed together on the shared dumbbell (–: not replayed together).</p>
{% if advice.reasons %}<ul class="small">{% for why, n in advice.reasons.most_common() %}<li>not faithful: {{ "{:,}".format(n) }} — {{ why }}</li>{% endfor %}</ul>{% endif %}
<ul class="small">{% for c in advice.caveats %}<li>{{ c }}</li>{% endfor %}</ul>{% endif %}
<h2 id="worst">The worst connections</h2>
<p class="small">The connections with the most time lost to something other than the path, each with its time-sequence graph and the command that draws it.</p>
{% for w in worst %}<h3 id="conn-{{ w.id }}">{{ w.title }}</h3><p class="small">{{ w.lost }}</p>
<p><code>{{ w.command }}</code></p>{% if w.thinned %}
<p class="small">{{ w.thinned }}</p>{% endif %}
<img alt="time-sequence graph of connection {{ w.id }}" src="data:image/png;base64,{{ w.png }}">{% else %}<p>No connection lost time to anything but the path.</p>{% endfor %}
<h2 id="data-phase">Data phase</h2>
<table>{% for k, v in counts %}<tr><td>{{ k }}</td><td class="n">{{ "{:,}".format(v) }}</td></tr>{% endfor %}</table>
<h2 id="table1">Document 000, Table 1</h2>
<table><tr><th>row</th><th>SYN</th><th>SYN/ACK</th></tr>
{% for name, a, b in table1 %}<tr><td>{{ name }}</td><td class="n">{{ a }}</td><td class="n">{{ b }}</td></tr>{% endfor %}</table>
<h2 id="figure1">Document 000, Figure 1: gaps before repeated SYNs</h2>
{% if fig_gaps %}<img alt="duplicate SYN gaps" src="data:image/png;base64,{{ fig_gaps }}">{% endif %}
{% if gaps_note %}<p class="note">{{ gaps_note }}</p>{% endif %}
<h2 id="distributions">Distributions</h2>
<img alt="CDFs" src="data:image/png;base64,{{ fig_cdfs }}">
<table><tr><th>column</th><th>n</th><th>p50</th><th>p90</th><th>p99</th></tr>
{% for name, p in percentiles %}<tr><td>{{ name }}</td><td class="n">{{ p.n }}</td>
<td class="n">{{ fmt(p.p50) }}</td><td class="n">{{ fmt(p.p90) }}</td><td class="n">{{ fmt(p.p99) }}</td></tr>{% endfor %}</table>
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


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def breakdown_figure(breakdown: list[tuple[str, float, float]]) -> Any:
    """The shares of the time users waited as one stacked bar; the legend beside the bar,
    clear of the axis' title."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 2.4), dpi=100, layout="constrained")
    if not any(share > 0 for _, _, share in breakdown):
        ax.text(0.5, 0.5, "users waited no time: nothing to share out", ha="center", va="center", transform=ax.transAxes)
    left = 0.0
    for c, _, share in breakdown:
        if share > 0:  # a cause that took no time has no bar, nor a legend entry
            ax.barh([0], [share], left=left, label=CAUSE_WORDS.get(c, c))
        left += share
    ax.set_xlim(0, 1)
    ax.set_yticks([])
    ax.set_xlabel("share of the time users waited (idle and teardown apart)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), borderaxespad=0)
    return fig


#: The CDFs drawn: column, axis label, and whether a log axis suits it.
CDF_COLUMNS = (("duration_s", "connection duration (s)", True), ("handshake_rtt_s", "handshake RTT (s)", True),
               ("rtt_ratio", "mean data RTT / handshake RTT", False), ("max_idle_s", "longest gap between packets (s)", True))


def cdf_figure(table: Any) -> Any:
    """The CDFs of `CDF_COLUMNS`, each on a log axis when its values span more than a
    decade (major ticks only, at most six: labels that never overlap); an empty column
    says so in words."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    plt = _pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(9, 6), dpi=100, layout="constrained")
    for ax, (name, label, log_ok) in zip(axes.flat, CDF_COLUMNS):
        v = table.column(name).to_numpy(zero_copy_only=False).astype(float)
        v = np.sort(v[np.isfinite(v)])
        ax.set_title(f"CDF of the {label}", fontsize=9)
        if not v.size:
            ax.text(0.5, 0.5, "no connection has this value", ha="center", va="center", transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        ax.step(v, np.arange(1, v.size + 1) / v.size, where="post")
        if log_ok and v[0] > 0 and v[-1] / v[0] > 10:
            ax.set_xscale("log")
            # Decades only over a wide span; 1, 2, 5 of each over two decades or less. Minor
            # ticks carry no label (theirs are what overlapped).
            wide = v[-1] / v[0] > 100
            ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0,) if wide else (1.0, 2.0, 5.0), numticks=8))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
        else:
            ax.locator_params(axis="x", nbins=5)
        ax.set_xlabel(label, fontsize=8)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    return fig


def _estimate(x: float, ci: tuple[float, float]) -> str:
    """A saving and its interval, in seconds, to three figures."""
    return f"{x:.3g} [{ci[0]:.3g}, {ci[1]:.3g}]"


def write_report(a: Analysis, doc: dict[str, Any], out_dir: Path, *, traces: list[Path], worst: int = 3,
                 filter_expr: str | None = None, idle_timeout_s: float | None = None,
                 close_linger_s: float | None = None, advice: Advice | None = None) -> Path:
    """Writes `out_dir/report.html` and returns its path; the filter and timeouts are the
    analysis' (they decide the ids of the connections it draws). With `advice`, the page
    says what would help."""
    tracking = [w for flag, v, d in (("--idle-timeout", idle_timeout_s, _core.DEFAULT_IDLE_TIMEOUT_S),
                                     ("--close-linger", close_linger_s, _core.DEFAULT_CLOSE_LINGER_S))
                if v is not None and v != d for w in (flag, f"{v:g}s")]
    import jinja2
    import pyarrow.compute as pc

    from shortflow.analyze import table1_rows
    from shortflow.plot.tsg import draw, packets, thinned_note
    from shortflow.worst import worst_connections

    out_dir.mkdir(parents=True, exist_ok=True)
    t = a.table
    # What users waited through (idle and teardown, which nobody waits for, apart).
    shares = doc["time_waited_share"]
    breakdown = [(c, doc["time_lost_s"][c], shares[c] or 0.0) for c in WAITED_CAUSES]
    fig_breakdown = _png(breakdown_figure(breakdown))

    gaps = pc.list_flatten(t.column("syn_gaps_s")).to_numpy(zero_copy_only=False)
    gaps_note = ""
    fig_gaps = ""
    if gaps.size == 0:
        gaps_note = "No SYN was sent again in these traces: there is no gap to draw."
    else:
        from shortflow.plot.gaps import duplicate_gap_histogram

        gaps_png = out_dir / "gaps.png"
        drawn = duplicate_gap_histogram(t, gaps_png)
        fig_gaps = base64.b64encode(gaps_png.read_bytes()).decode()
        gaps_png.unlink()
        if drawn.beyond:
            gaps_note = (f"{drawn.beyond:,} of the {gaps.size:,} gaps are longer than the axis' {drawn.max_s:g} s "
                         f"(the longest {gaps.max():.1f} s) and are not drawn.")
    fig_cdfs = _png(cdf_figure(t))

    # The worst connections: most time lost to causes other than the path, first file.
    worst_rows: list[dict[str, Any]] = []
    if t.num_rows and traces:
        first = str(traces[0])
        chosen = worst_connections(t, worst, trace=first)
        ids = [w.conn_id for w in chosen]
        # A trace read only in part (cut short, damaged) gives the packets before the bad
        # byte; its error is the analysis' own, already in `a.errors`.
        pk = packets(traces[0], ids, errors=[], filter_expr=filter_expr, idle_timeout_s=idle_timeout_s,
                     close_linger_s=close_linger_s) if ids else {}
        rows = {int(c): i for i, c in enumerate(t.column("conn_id").to_pylist())
                if str(t.column("trace")[i]) == first and int(c) in ids}
        for w in chosen:
            i = rows[w.conn_id]
            png = out_dir / f"conn-{w.conn_id}.png"
            title = f"connection {w.conn_id}: {w.client} → {w.server}\n{Path(first).name}, the {'client' if w.client_data else 'server'}'s data"
            draw(pk[w.conn_id], png, title=title, server_data=not w.client_data)
            parts = ", ".join(f"{CAUSE_WORDS.get(c, c)} {format_seconds(t.column(f'time_{c}_s')[i].as_py())}"
                              for c in CAUSES if c != "network" and t.column(f"time_{c}_s")[i].as_py() > 0)
            worst_rows.append({"id": w.conn_id, "title": f"connection {w.conn_id} ({w.client} → {w.server})",
                               "lost": f"lasted {format_seconds(w.duration_s)}: {parts}",
                               "command": w.graph_command(filter_expr=filter_expr, tracking=tracking),
                               "thinned": thinned_note(pk[w.conn_id]) if pk[w.conn_id]["thinned"] else "",
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
        version=doc["version"], files=[str(p) for p in traces], vantage=doc["vantage"], waited=doc["waited_s"],
        connections=doc["connections"],
        breakdown=breakdown, fig_breakdown=fig_breakdown, counts=counts, table1=table1_rows(a), fig_gaps=fig_gaps,
        gaps_note=gaps_note, filter_expr=filter_expr, words=CAUSE_WORDS, format_seconds=format_seconds,
        fig_cdfs=fig_cdfs, percentiles=list(doc["percentiles"].items()), fmt=_fmt, worst=worst_rows,
        per_file=per_file, file_headers=[h for h, _ in FILE_COLUMNS], advice=advice, est=_estimate,
    )
    path = out_dir / "report.html"
    path.write_text(html)
    return path
