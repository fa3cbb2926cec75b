"""`shortflow synopt -d DELAY_MS -r RETRIES (-c | -s | --router) -p PORT[,PORT…]`: the SYN
optimizer daemon of document 000 (runs until SIGINT/SIGTERM; counters on SIGUSR1)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from shortflow.cli.common import FAILURE, USAGE, fail
from shortflow.exceptions import PrivilegeError, SynoptError


def register(app: typer.Typer) -> None:
    @app.command("synopt")
    def synopt_cmd(
        delay: Annotated[str, typer.Option("-d", "--delay", metavar="DELAY_MS",
                                           help="wait this long for an answer before each resend: milliseconds (200) or with a unit (200ms)")],
        retries: Annotated[int, typer.Option("-r", "--retries", help="resend each SYN or SYN/ACK at most this many times")],
        ports: Annotated[str, typer.Option("-p", "--port", metavar="PORT[,PORT…]", help="server port(s) to protect")],
        client: Annotated[bool, typer.Option("-c", "--client", help="client side: keep outgoing SYNs")] = False,
        server: Annotated[bool, typer.Option("-s", "--server", help="server side: keep outgoing SYN/ACKs")] = False,
        router: Annotated[bool, typer.Option("--router", help="router: keep the SYNs and SYN/ACKs it forwards")] = False,
        json_stats: Annotated[Optional[Path], typer.Option("--json-stats", metavar="FILE", help="write the counters as JSON here (exit, SIGUSR1)")] = None,
        max_held: Annotated[int, typer.Option("--max-held", min=1, max=1 << 24, help="copies held at most; the oldest is evicted beyond")] = 65_536,
        queue_num: Annotated[int, typer.Option("--queue-num", help="NFQUEUE number of the daemon's rules")] = 7100,
        queue_max_len: Annotated[int, typer.Option("--queue-max-len", min=1, max=1 << 20, help="packets waiting for the daemon at most; beyond, they pass without a copy (fail-open)")] = 4096,
        no_ipv6: Annotated[bool, typer.Option("--no-ipv6", help="IPv4 only")] = False,
        fail_open: Annotated[bool, typer.Option("--fail-open", help="traffic flows when the daemon is dead or overloaded: the default and only behaviour (rules use --queue-bypass)")] = True,
        rt_priority: Annotated[int, typer.Option("--rt-priority", help="SCHED_FIFO priority of the daemon (0: normal priority)")] = 10,
    ) -> None:
        """Resend a lost SYN or SYN/ACK after DELAY_MS instead of the kernel's 1 s (needs root).

        Fail-open: the daemon's iptables rules carry --queue-bypass, so traffic flows if the daemon dies; it removes its rules on SIGINT/SIGTERM, and its next start or `shortflow testbed clean` removes those of a killed daemon.
        """
        from shortflow import synopt

        del fail_open  # always on: accepted for the document's interface

        try:
            modes = [m for m, on in (("client", client), ("server", server), ("router", router)) if on]
            if len(modes) != 1:
                raise SynoptError("choose exactly one of -c (client), -s (server), --router")
            o = synopt.Options(delay_ms=synopt.parse_delay_ms(delay), retries=retries, mode=modes[0],
                               ports=synopt.parse_ports(ports), json_stats=json_stats, max_held=max_held,
                               queue_num=queue_num, ipv6=not no_ipv6, rt_priority=rt_priority, queue_max_len=queue_max_len)
            synopt.exec_daemon(o)
        except (SynoptError, PrivilegeError) as e:
            fail(e, FAILURE if isinstance(e, synopt.DaemonMissing) else USAGE)
