"""Document 003: a 13,549 B response from a Solaris server; tcp_slow_start_initial 1 vs 2
with a BSD-tick (IRIX) client, figures 2.1/2.2, and Solaris to Solaris, figures 3.1-3.5."""

from __future__ import annotations

from shortflow.reproduce import NONE, Row, Why, row, run_case

#: 4-17 ms per flight, over the one to three flights before the last byte.
INDY = Why("the IRIX Indy took 4-17 ms to answer each flight (figure timestamps); our client answers at once",
           0.004, 0.017 * 3)


def rows() -> list[Row]:
    out: list[Row] = []
    for iw, figure, paper in ((1, "2.1", 0.250), (2, "2.2", 0.021)):
        result, scenario, ov = run_case("003-bsd-client", [f"server.slow_start_initial={iw}"])
        c = result.connections[0]
        out.append(row("003", f"figure-{figure}", f"IW {iw}, BSD-tick client, transfer time", paper, c["complete_s"], "s",
                       scenario, ov, INDY))
    delays = Why("the paper's figure is read as whole delayed-ACK intervals (200 ms each); "
                 "ours adds the transfer itself (~6 ms, as in figure 3.5)", -0.010, -0.002)
    lucky_why = Why("the paper's 1998 hosts took ~1.5 ms longer to process the segments; ours take none", 0.0005, 0.0025)
    solaris: tuple[tuple[int, str, float, int, list[str], Why], ...] = (
        (1, "3.1/3.2", 0.40, 2, [], delays),
        (2, "3.3/3.4", 0.20, 1, [], delays),
        (2, "3.5", 0.0075, 0, ["client.ack_every=4"], lucky_why),
    )
    for iw, figure, paper, acks, extra, why in solaris:
        result, scenario, ov = run_case("003-solaris", [f"server.slow_start_initial={iw}", *extra])
        c = result.connections[0]
        lucky = ", the lucky run (client ACKs every 4th segment)" if extra else ""
        out.append(row("003", f"figure-{figure}", f"IW {iw}, Solaris client{lucky}, transfer time", paper, c["complete_s"], "s",
                       scenario, ov, why))
        out.append(row("003", f"figure-{figure}", f"IW {iw}, Solaris client{lucky}, delayed ACKs", acks, c["delayed_acks"], "ACKs",
                       scenario, ov, NONE))
    return out
