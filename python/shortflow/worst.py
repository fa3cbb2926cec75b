"""The worst connections of an analysis: those that lost the most time to something other
than the path, each with the cause that took most of it and the `shortflow graph` command
that draws it. `analyze` prints them first, its report draws them."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shortflow import _core

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

#: The causes a connection can lose time to: what users waited through, but the path.
LOST_CAUSES: tuple[str, ...] = tuple(_core.LOST_CAUSES)

#: Causes whose time is spent on one side's data: the graph shows that side's sequence.
_DATA_CAUSES = ("timeout", "fast_retransmit", "tlp", "slow_start", "receive_window", "zero_window", "delayed_ack")


@dataclass(frozen=True)
class Connection:
    """One connection of the table, as the worst list shows it."""

    trace: str
    conn_id: int
    client: str
    server: str
    duration_s: float
    #: Seconds lost to causes other than the path.
    lost_s: float
    #: The cause that took most of them, and its seconds.
    main_cause: str
    main_cause_s: float
    #: The client's data is where the connection lost its time (an upload): its graph
    #: draws the client's sequence.
    client_data: bool

    def graph_command(self, *, filter_expr: str | None = None, output: str | None = None,
                      tracking: Sequence[str] = ()) -> str:
        """The shell command that draws this connection's time-sequence graph; with the
        analysis' filter and its timeouts given other than their defaults (`tracking`, as
        options), since they decide the connections' ids."""
        words = ["shortflow", "graph", self.trace, "--conn", str(self.conn_id)]
        if self.client_data:
            words.append("--client-data")
        if filter_expr is not None:
            words += ["--filter", filter_expr]
        words += tracking
        if output is not None:
            words += ["-o", output]
        return shlex.join(words)


def endpoint(ip: object, port: object) -> str:
    """``10.0.0.1:80``, ``[2001:db8::1]:443``."""
    text = str(ip)
    return f"[{text}]:{port}" if ":" in text else f"{text}:{port}"


def lost_by_cause(table: pa.Table) -> dict[str, np.ndarray]:
    """Each connection's seconds lost to each of `LOST_CAUSES`."""
    import numpy as np

    from shortflow.arrow_table import floats

    # fmax: a null (NaN) counts as no time lost.
    return {c: np.fmax(floats(table.column(f"time_{c}_s")), 0.0) for c in LOST_CAUSES}


def main_causes(lost_by: dict[str, np.ndarray]) -> tuple[list[str | None], np.ndarray]:
    """Each connection's main lost cause (None when it lost nothing) and its seconds; of
    equal causes the first in `LOST_CAUSES`."""
    import numpy as np

    stacked = np.vstack([lost_by[c] for c in LOST_CAUSES])
    if stacked.shape[1] == 0:
        return [], np.zeros(0)
    best = np.argmax(stacked, axis=0)  # the first of equal maxima
    seconds = stacked[best, np.arange(stacked.shape[1])]
    names: list[str | None] = [LOST_CAUSES[b] if s > 0 else None for b, s in zip(best.tolist(), seconds.tolist())]
    return names, seconds


def worst_connections(table: pa.Table, n: int, *, trace: str | None = None) -> list[Connection]:
    """The `n` connections (of `trace` only, when given) that lost the most time to causes
    other than the path, most first; none that lost nothing."""
    import numpy as np

    if n <= 0 or table.num_rows == 0:
        return []
    lost_by = lost_by_cause(table)
    lost: np.ndarray = np.zeros(table.num_rows)
    for v in lost_by.values():
        lost += v
    keep = lost > 0
    if trace is not None:
        import pyarrow as pa
        import pyarrow.compute as pc

        mine = pc.equal(table.column("trace").cast(pa.string()), trace)  # in Arrow, not a str a row
        from shortflow.arrow_table import floats

        keep &= floats(pc.cast(mine, pa.uint8())) > 0
    candidates = np.flatnonzero(keep)
    if candidates.size > n:
        # The n largest (and any equal to the n-th, so that ties keep the table's order).
        nth = np.partition(lost[candidates], candidates.size - n)[candidates.size - n]
        candidates = candidates[lost[candidates] >= nth]
    # Most lost first; equal losses in the table's order (the stable sort keeps it).
    order = candidates[np.argsort(-lost[candidates], kind="stable")][:n]
    names, seconds = main_causes({c: v[order] for c, v in lost_by.items()})
    traces = [str(table.column("trace")[int(i)].as_py()) for i in order]
    out = []
    for k, i in enumerate(order.tolist()):
        main = names[k]
        assert main is not None, "a connection that lost time has a main cause"
        out.append(Connection(
            trace=traces[k],
            conn_id=int(table.column("conn_id")[i].as_py()),
            client=endpoint(table.column("client_ip")[i].as_py(), table.column("client_port")[i].as_py()),
            server=endpoint(table.column("server_ip")[i].as_py(), table.column("server_port")[i].as_py()),
            duration_s=float(table.column("duration_s")[i].as_py()),
            lost_s=float(lost[i]),
            main_cause=main,
            main_cause_s=float(seconds[k]),
            client_data=main in _DATA_CAUSES and client_sent_more(table, i),
        ))
    return out


def client_sent_more(table: pa.Table, i: int) -> bool:
    """The client's data had more repairs than the server's, or, with none either way,
    there was more of it."""
    def repairs(side: str) -> int:
        return sum(int(table.column(f"retx_{k}_{side}")[i].as_py()) for k in ("timeout", "fast", "tlp"))

    c2s, s2c = repairs("c2s"), repairs("s2c")
    if c2s != s2c:
        return c2s > s2c
    return int(table.column("bytes_c2s")[i].as_py()) > int(table.column("bytes_s2c")[i].as_py())
