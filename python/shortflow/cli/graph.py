"""`shortflow graph TRACE --conn ID`: one connection's time-sequence graph."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from shortflow.cli.common import FAILURE, USAGE, check_output_file, clip, duration_option, error, examples, fail, say


def _seconds(text: str | None, flag: str, *, zero_ok: bool = True) -> float | None:
    return None if text is None else duration_option(text, flag, zero_ok=zero_ok)


def register(app: typer.Typer) -> None:
    @app.command("graph", epilog=examples("shortflow graph capture.pcap --conn 3",
                                          "shortflow graph capture.pcap --conn 3 --from 1.2s --to 1.5s -o conn-3.svg",
                                          "shortflow graph capture.pcap --filter 'port 443' --conn 0 --client-data"))
    def graph_cmd(
        trace: Annotated[Path, typer.Argument(help="pcap or pcapng file, plain or gzip", dir_okay=False)],
        conn: Annotated[int, typer.Option("--conn", min=0, help="the connection's conn_id in `shortflow analyze` (order of first appearance; with the same --filter)")],
        out: Annotated[Optional[Path], typer.Option("--output", "-o", help="PNG or SVG file (without it: conn-ID.png in the current directory, and it says so)")] = None,
        client_data: Annotated[bool, typer.Option("--client-data", help="draw the client's data (and the server's ACKs) instead of the server's")] = False,
        filter_expr: Annotated[Optional[str], typer.Option("--filter", metavar="EXPR", help="the libpcap filter the analysis had (it decides the connections' ids); it matches the outer headers of tunnelled packets")] = None,
        start: Annotated[Optional[str], typer.Option("--from", metavar="TIME", help="zoom: from this long after the connection's first packet (e.g. 1.2s, 300ms)")] = None,
        end: Annotated[Optional[str], typer.Option("--to", metavar="TIME", help="zoom: to this long after the connection's first packet")] = None,
        idle_timeout: Annotated[Optional[str], typer.Option("--idle-timeout", metavar="DURATION", help="the --idle-timeout the analysis had (it decides where a connection ends, and so the ids)")] = None,
        close_linger: Annotated[Optional[str], typer.Option("--close-linger", metavar="DURATION", help="the --close-linger the analysis had (likewise)")] = None,
    ) -> None:
        """Draw a connection's Stevens time-sequence graph: data, ACKs and the receive
        window, SACK blocks and duplicate ACKs, SYN/FIN/RST, retransmissions by class, and
        its long gaps labelled with their cause."""
        from shortflow.exceptions import FilterError, ShortflowError
        from shortflow.plot.tsg import draw, four_tuple, packets, thinned_note

        if not trace.is_file():
            fail(f"{clip(trace)}: no such file", USAGE)
        lo, hi = _seconds(start, "--from"), _seconds(end, "--to")
        idle_s = _seconds(idle_timeout, "--idle-timeout", zero_ok=False)
        linger_s = _seconds(close_linger, "--close-linger")
        if lo is not None and hi is not None and hi <= lo:
            fail(f"--from {clip(start)} --to {clip(end)}: the end must come after the start", USAGE)
        path = out or Path(f"conn-{conn}.png")
        if path.suffix.lower() not in (".png", ".svg"):
            fail(f"--output {clip(path)}: the file must end in .png or .svg", USAGE)
        check_output_file(path, "--output")
        # A trace cut short or damaged part-way: the connection as far as it was read is
        # drawn, and the error said after (the status is still a failure).
        errors: list[str] = []
        try:
            pk = packets(trace, [conn], errors=errors, filter_expr=filter_expr, idle_timeout_s=idle_s,
                         close_linger_s=linger_s, time_range_s=(lo, hi))[conn]
        except FilterError as e:
            fail(f"--filter {clip(filter_expr)!r}: {e}", USAGE)
        except ShortflowError as e:
            fail(e, FAILURE)
        if not pk["ts_ns"]:
            where = f" in the part read ({errors[0]})" if errors else ""
            fail(f"{clip(trace)}: no connection with conn_id {conn}{where}", FAILURE)
        tuple_text = four_tuple(pk)
        side = "client" if client_data else "server"
        title = f"connection {conn}: {tuple_text}\n{trace.name}, the {side}'s data" if tuple_text else \
            f"connection {conn}\n{trace.name}, the {side}'s data"
        draw(pk, path, title=title, server_data=not client_data, time_range_s=(lo, hi))
        # Where it went, in full: without -o the file is made in the current directory.
        if out is None:
            say(f"no -o given: wrote the time-sequence graph of connection {conn} to {path.resolve()}")
        else:
            say(f"time-sequence graph of connection {conn}: {path.resolve()}")
        if pk["thinned"]:
            say(f"thinned: {thinned_note(pk)} (zoom in with --from/--to for every packet)")
        for message in errors:
            error(f"{message} — the connection's {len(pk['ts_ns']):,} packets before it are drawn")
        if errors:
            raise typer.Exit(FAILURE)
