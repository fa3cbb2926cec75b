"""`shortflow graph TRACE --conn ID`: one connection's time-sequence graph."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

err = Console(stderr=True)


def register(app: typer.Typer) -> None:
    @app.command("graph")
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
            err.print(f"[red]error:[/red] {trace}: no such file")
            raise typer.Exit(2)
        path = out or Path(f"conn-{conn}.png")
        if path.suffix.lower() not in (".png", ".svg"):
            err.print(f"[red]error:[/red] --output {path}: the file must end in .png or .svg")
            raise typer.Exit(2)
        try:
            pk = packets(trace, [conn])[conn]
        except ShortflowError as e:
            err.print(f"[red]error:[/red] {e}")
            raise typer.Exit(1) from None
        if not pk["ts_ns"]:
            err.print(f"[red]error:[/red] {trace}: no connection with conn_id {conn}", soft_wrap=True, highlight=False)
            raise typer.Exit(1)
        draw(pk, path, title=f"{trace.name}, connection {conn}", server_data=not client_data)
        print(path)
