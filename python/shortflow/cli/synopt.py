"""`shortflow synopt -d DELAY_MS -r RETRIES (-c | -s | --router) -p PORT[,PORT…]`: the SYN
optimizer daemon of document 000 (runs until SIGINT/SIGTERM; counters on SIGUSR1), and its
sub-command `shortflow synopt status [--json]`: the live counters of the daemons running
here (as `shortflow tune status` is the tuner's)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from shortflow.cli.common import FAILURE, USAGE, examples, fail, say, write_json
from shortflow.exceptions import PrivilegeError, SynoptError


def _status(as_json: bool) -> None:
    from shortflow import synopt

    daemons = synopt.status()
    if as_json:
        write_json("-", daemons)
        return
    if not daemons:
        say("no shortflow-synopt daemon runs in this network namespace")
    for d in daemons:
        if not d["answering"]:
            say(f"run {d['run_id']}: no answer within 1 s (stopped or hung?): traffic flows, "
                "unprotected (its rules only copy packets)")
            continue
        lat = d.get("resend_lateness") or {}
        late = f", resend lateness p50 ≤ {lat['p50_us_at_most']:g} µs, p99 ≤ {lat['p99_us_at_most']:g} µs" \
            if lat.get("count") else ""
        say(f"run {d['run_id']} (pid {d['pid']}, {d['mode']} mode, ports {','.join(map(str, d['ports']))}): "
            f"held {d['held']}, taken {d['copies_taken']}, answered {d['answered']}, resent {d['resends']}, "
            f"shed {d['shed']} ({d['shed_prefix']} by prefix budget), bypassed {d['bypassed']}{late}")


synopt_app = typer.Typer(invoke_without_command=True, no_args_is_help=False,
                         epilog=examples("sudo shortflow synopt -d 200 -r 3 -c -p 80,443",
                                         "sudo shortflow synopt -d 200ms -r 3 --router -p 80 --json-stats counters.json",
                                         "sudo shortflow synopt status --json"))


@synopt_app.command("status", epilog=examples("sudo shortflow synopt status", "sudo shortflow synopt status --json"))
def status_cmd(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Print the live counters of the shortflow-synopt daemons in this network namespace."""
    # `synopt --json status`, the form before `status` was a sub-command, still works.
    _status(as_json or bool((ctx.obj or {}).get("json")))


@synopt_app.callback()
def synopt_cmd(
    ctx: typer.Context,
    delay: Annotated[Optional[str], typer.Option("-d", "--delay", metavar="DELAY_MS",
                                                 help="wait this long for an answer before each resend: milliseconds (200) or with a unit (200ms)")] = None,
    retries: Annotated[Optional[int], typer.Option("-r", "--retries", help="resend each SYN or SYN/ACK at most this many times")] = None,
    ports: Annotated[Optional[str], typer.Option("-p", "--port", metavar="PORT[,PORT…]", help="server port(s) to protect")] = None,
    client: Annotated[bool, typer.Option("-c", "--client", help="client side: keep outgoing SYNs")] = False,
    server: Annotated[bool, typer.Option("-s", "--server", help="server side: keep outgoing SYN/ACKs")] = False,
    router: Annotated[bool, typer.Option("--router", help="router: keep the SYNs and SYN/ACKs it forwards")] = False,
    json_stats: Annotated[Optional[Path], typer.Option("--json-stats", metavar="FILE", help="write the counters as JSON here (exit, SIGUSR1)")] = None,
    max_held: Annotated[int, typer.Option("--max-held", min=1, max=1 << 24, help="copies held at most; beyond, new ones are shed")] = 65_536,
    prefix_budget: Annotated[int, typer.Option("--prefix-budget", help="copies held at most per initiator /24 (IPv6: /48); beyond, that prefix's newest are shed (0: no budget)")] = 1024,
    prefix_len: Annotated[str, typer.Option("--prefix-len", metavar="V4,V6", help="prefix lengths grouping initiators for --prefix-budget")] = "24,48",
    rcvbuf_kb: Annotated[int, typer.Option("--rcvbuf-kb", metavar="KB", help="receive buffer of the copies: a burst beyond it loses copies (counted as bypassed), never packets")] = 8192,
    group: Annotated[int, typer.Option("--group", "--queue-num", help="NFLOG group of the daemon's rules")] = 7100,
    no_ipv6: Annotated[bool, typer.Option("--no-ipv6", help="IPv4 only")] = False,
    fail_open: Annotated[bool, typer.Option("--fail-open", help="traffic flows when the daemon is dead, hung or overloaded: the default and only behaviour (rules only copy packets)")] = True,
    as_json: Annotated[bool, typer.Option("--json", hidden=True, help="the old `synopt --json status`: print JSON")] = False,
    rt_priority: Annotated[int, typer.Option("--rt-priority", help="SCHED_FIFO priority of the daemon (0: normal priority)")] = 10,
    unowned_table: Annotated[bool, typer.Option("--unowned-table", help="make the nftables table with the nft command, not owned by the daemon: a SIGKILL then leaves it until the next start or `shortflow testbed clean`")] = False,
) -> None:
    """Resend a lost SYN or SYN/ACK after DELAY_MS instead of the kernel's 1 s (needs root);
    `synopt status` prints the counters of the daemons running here.

    Fail-open: the rules in the daemon's own nftables table (inet sf-<run id>-synopt) only copy packets (NFLOG), so traffic flows if the daemon hangs or dies; it deletes its whole table on SIGINT/SIGTERM, and the table belongs to the daemon's netlink socket (Linux 5.12+, libnftables), so the kernel deletes it when the daemon is killed; without that (or with --unowned-table) its next start or `shortflow testbed clean` deletes a killed daemon's table.
    """
    from shortflow import synopt

    del fail_open  # always on: accepted for the document's interface

    if ctx.invoked_subcommand is not None:
        ctx.obj = {"json": as_json}
        return
    try:
        missing = [flag for flag, v in (("-d", delay), ("-r", retries), ("-p", ports)) if v is None]
        if missing:
            raise SynoptError(f"missing {', '.join(missing)}: e.g. shortflow synopt -d 200 -r 3 -c -p 80")
        assert delay is not None and retries is not None and ports is not None
        modes = [m for m, on in (("client", client), ("server", server), ("router", router)) if on]
        if len(modes) != 1:
            raise SynoptError("choose exactly one of -c (client), -s (server), --router")
        o = synopt.Options(delay_ms=synopt.parse_delay_ms(delay), retries=retries, mode=modes[0],
                           ports=synopt.parse_ports(ports), json_stats=json_stats, max_held=max_held,
                           group=group, ipv6=not no_ipv6, rt_priority=rt_priority, prefix_budget=prefix_budget,
                           prefix_len=synopt.parse_prefix_len(prefix_len), rcvbuf_kb=rcvbuf_kb, unowned_table=unowned_table)
        synopt.exec_daemon(o)
    except (SynoptError, PrivilegeError) as e:
        fail(e, FAILURE if isinstance(e, synopt.DaemonMissing) else USAGE)


def register(app: typer.Typer) -> None:
    app.add_typer(synopt_app, name="synopt")
