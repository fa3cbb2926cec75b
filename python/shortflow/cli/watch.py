"""`shortflow watch -i IFACE`: the time account live on an interface."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from shortflow.cli.common import (
    FAILURE,
    USAGE,
    check_output_dir,
    check_output_file,
    clip,
    duration_option,
    examples,
    fail,
    note,
    write_json,
)

DEFAULT_METRICS = "127.0.0.1:9108"


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        fail(f"--metrics {clip(text)!r}: give HOST:PORT, e.g. {DEFAULT_METRICS}", USAGE)
    return host.strip("[]") or "0.0.0.0", int(port)


def _ports(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        ports = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        fail(f"--ports {clip(text)!r}: a comma-separated list of port numbers", USAGE)
    if not ports or any(not 0 < p < 65536 for p in ports):
        fail(f"--ports {clip(text)!r}: ports are 1 to 65535", USAGE)
    return ports


def register(app: typer.Typer) -> None:
    @app.command("watch", epilog=examples(
        "sudo shortflow watch -i eth0 --top",
        "sudo shortflow watch -i eth0 --filter 'tcp port 443' --out /var/lib/shortflow --rotate 1h",
        "sudo shortflow watch -i eth0 --metrics 127.0.0.1:9108 --ports 80,443"))
    def watch_cmd(
        interface: Annotated[str, typer.Option("--interface", "-i", metavar="IFACE", help="the interface to read (needs CAP_NET_RAW; `any` for all)")],
        filter_expr: Annotated[Optional[str], typer.Option("--filter", metavar="EXPR", help="a libpcap filter expression, run in the kernel (it matches the outer headers of tunnelled packets)")] = None,
        out: Annotated[Optional[Path], typer.Option("--out", metavar="DIR", help="write the connection rows to Parquet files in DIR, one per --rotate")] = None,
        rotate: Annotated[str, typer.Option("--rotate", metavar="DURATION", help="how long each Parquet file covers")] = "1h",
        metrics: Annotated[str, typer.Option("--metrics", metavar="ADDRESS", help="HOST:PORT of the Prometheus endpoint (/metrics)")] = DEFAULT_METRICS,
        no_metrics: Annotated[bool, typer.Option("--no-metrics", help="serve no metrics")] = False,
        ports: Annotated[Optional[str], typer.Option("--ports", metavar="P,P,...", help="server ports with a label of their own (default: the first 20 seen; the rest are \"other\")")] = None,
        top: Annotated[bool, typer.Option("--top", help="a one-screen live view, redrawn each second")] = False,
        max_connections: Annotated[int, typer.Option("--max-connections", metavar="N", min=1, help="open connections kept at most; beyond, the least recently seen are ended and counted")] = 200_000,
        snaplen: Annotated[int, typer.Option("--snaplen", metavar="BYTES", min=68, max=262144, help="bytes kept of each packet (headers are all the analyzer reads)")] = 256,
        buffer: Annotated[str, typer.Option("--buffer", metavar="SIZE", help="the kernel ring's size")] = "64MiB",
        promiscuous: Annotated[bool, typer.Option("--promiscuous", help="see traffic not addressed to this host (needs CAP_NET_ADMIN)")] = False,
        idle_timeout: Annotated[str, typer.Option("--idle-timeout", metavar="DURATION", help="a connection with no packet this long ends as idle")] = "300s",
        close_linger: Annotated[str, typer.Option("--close-linger", metavar="DURATION", help="after both FINs or a RST, late packets still belong to the connection this long")] = "5s",
        duration: Annotated[Optional[str], typer.Option("--duration", metavar="DURATION", help="stop after this long (default: until SIGTERM or Ctrl-C)")] = None,
        pcap: Annotated[Optional[Path], typer.Option("--pcap", metavar="FILE", help="keep every packet read in this pcap file (nanosecond timestamps): `analyze` on it gives the rows the watch gave")] = None,
        summary_json: Annotated[Optional[Path], typer.Option("--summary-json", metavar="FILE", help="at the end, write the summary of every connection seen (as analyze's) and the capture's counts")] = None,
    ) -> None:
        """Watch an interface: every connection's time account as it ends, as Prometheus
        metrics, rotated Parquet files and a one-screen view. SIGTERM or Ctrl-C ends the
        open connections, counts and writes them, and exits 0."""
        from shortflow.exceptions import ShortflowError
        from shortflow.units import parse_size

        rotate_s = duration_option(rotate, "--rotate")
        idle_s = duration_option(idle_timeout, "--idle-timeout", zero_ok=False)
        linger_s = duration_option(close_linger, "--close-linger")
        duration_s = duration_option(duration, "--duration") if duration is not None else None
        try:
            buffer_bytes = parse_size(buffer, what="--buffer")
        except ValueError as e:
            fail(clip(e), USAGE)
        if rotate_s < 1:
            fail(f"--rotate {clip(rotate)}: at least 1s", USAGE)
        if not 1 << 16 <= buffer_bytes <= 1 << 31:
            fail(f"--buffer {clip(buffer)}: from 64KiB to 2GiB", USAGE)
        if filter_expr is not None:
            from shortflow import _core
            from shortflow.exceptions import FilterError

            try:
                _core.check_filter(filter_expr)
            except FilterError as e:
                fail(f"--filter {clip(filter_expr)!r}: {e}", USAGE)
        address = None if no_metrics else _address(metrics)
        fixed_ports = _ports(ports)
        if out is not None:
            check_output_dir(out, "--out")
            out.mkdir(parents=True, exist_ok=True)
        if pcap is not None:
            check_output_file(pcap, "--pcap")
        if summary_json is not None and str(summary_json) != "-":
            check_output_file(summary_json, "--summary-json")
        from shortflow.watch.live import LiveAnalysis, WatchConfig
        from shortflow.watch.metrics import Ports, WatchMetrics
        from shortflow.watch.rotate import RotatingParquet
        from shortflow.watch.run import run

        config = WatchConfig(interface, filter_expr, snaplen, promiscuous, buffer_bytes, idle_s, linger_s, max_connections,
                             str(pcap) if pcap is not None else None)
        try:
            analysis = LiveAnalysis(config)
        except ShortflowError as e:
            fail(e, FAILURE)
        registry = WatchMetrics(Ports(fixed_ports))
        if address is not None:
            try:
                registry.serve(*address)
            except OSError as e:
                fail(f"--metrics {address[0]}:{address[1]}: {e.strerror or e}", FAILURE)
            note(f"metrics on http://{address[0]}:{address[1]}/metrics")
        writer = None
        if out is not None:
            import shortflow

            writer = RotatingParquet(out, rotate_s, {"shortflow_version": shortflow.__version__,
                                                     "command": "watch", "interface": interface})
        on_slice = _top_view(interface) if top else None
        note(f"watching {interface}" + (f" ({filter_expr})" if filter_expr else ""))
        try:
            result = run(analysis, metrics=registry, out=writer, duration_s=duration_s, on_slice=on_slice)
        except ShortflowError as e:
            fail(e, FAILURE)
        s = result.stats
        note(f"{s['packets']:,} packets, {result.rows:,} connections; ring drops {s['ring_drops']:,}, "
             f"interface drops {s['interface_drops']:,}, evicted {s['evicted']:,} (stopped by {result.stopped_by})")
        for path in result.files:
            note(f"wrote {path}")
        if summary_json is not None:
            write_json(summary_json, {"summary": result.summary, "capture": s}, "--summary-json")


def _top_view(interface: str):  # type: ignore[no-untyped-def]
    import time

    from rich.console import Console
    from rich.live import Live

    from shortflow.watch.top import TopView

    view = TopView()
    console = Console()
    live = Live(console=console, auto_refresh=False, transient=False)
    live.start()
    state = {"last": time.monotonic(), "packets": 0}

    def on_slice(rows, stats):  # type: ignore[no-untyped-def]
        view.add(rows)
        now = time.monotonic()
        if now - state["last"] >= 1.0:
            rate = (stats["packets"] - state["packets"]) / (now - state["last"])
            state["last"], state["packets"] = now, stats["packets"]
            live.update(view.render(interface, stats, rate), refresh=True)

    return on_slice
