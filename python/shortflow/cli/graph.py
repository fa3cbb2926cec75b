"""`shortflow graph TRACE --conn ID`: one connection's time-sequence graph."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from shortflow.cli.common import FAILURE, USAGE, check_output_file, clip, error, examples, fail, say


def register(app: typer.Typer) -> None:
    @app.command("graph", epilog=examples("shortflow graph capture.pcap --conn 3",
                                          "shortflow graph capture.pcap --conn 3 --client-data -o conn-3-client.svg"))
    def graph_cmd(
        trace: Annotated[Path, typer.Argument(help="pcap or pcapng file, plain or gzip", dir_okay=False)],
        conn: Annotated[int, typer.Option("--conn", min=0, help="the connection's conn_id in `shortflow analyze --out` (order of first appearance)")],
        out: Annotated[Optional[Path], typer.Option("--output", "-o", help="PNG or SVG file (default conn-ID.png)")] = None,
        client_data: Annotated[bool, typer.Option("--client-data", help="draw the client's data (and the server's ACKs) instead of the server's")] = False,
    ) -> None:
        """Draw a connection's Stevens time-sequence graph: data, ACKs, SACK blocks,
        retransmissions by class, and its long gaps labelled with their cause."""
        from shortflow.exceptions import ShortflowError
        from shortflow.plot.tsg import draw, packets

        if not trace.is_file():
            fail(f"{clip(trace)}: no such file", USAGE)
        path = out or Path(f"conn-{conn}.png")
        if path.suffix.lower() not in (".png", ".svg"):
            fail(f"--output {clip(path)}: the file must end in .png or .svg", USAGE)
        check_output_file(path, "--output")
        # A trace cut short or damaged part-way: the connection as far as it was read is
        # drawn, and the error said after (the status is still a failure).
        errors: list[str] = []
        try:
            pk = packets(trace, [conn], errors=errors)[conn]
        except ShortflowError as e:
            fail(e, FAILURE)
        if not pk["ts_ns"]:
            where = f" in the part read ({errors[0]})" if errors else ""
            fail(f"{clip(trace)}: no connection with conn_id {conn}{where}", FAILURE)
        draw(pk, path, title=f"{trace.name}, connection {conn}", server_data=not client_data)
        # Where it went, in full: without -o the file is made in the current directory.
        say(f"time-sequence graph of connection {conn}: {path.resolve()}")
        for message in errors:
            error(f"{message} — the connection's {len(pk['ts_ns']):,} packets before it are drawn")
        if errors:
            raise typer.Exit(FAILURE)
