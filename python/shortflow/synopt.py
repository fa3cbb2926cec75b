"""`shortflow synopt`: the SYN optimizer of document 000 on a real host. This module checks
the options, finds the Rust daemon `shortflow-synopt` and builds its command line; the
daemon does the work (NFLOG copies, resends, its own nftables table). `status()` asks the
running daemons of this network namespace for their live counters.

Fail-open by construction: the daemon's rules only copy packets (NFLOG), so a daemon that
is stopped, hung, overloaded or killed never delays a connection; its next start (or
``shortflow testbed clean``) removes rules a killed daemon left.
"""

from __future__ import annotations

import json
import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shortflow.exceptions import SynoptError
from shortflow.host import HostError, daemons, require_root
from shortflow.units import parse_duration

BINARY = "shortflow-synopt"
MODES = ("client", "server", "router")
#: The default NFLOG group.
DEFAULT_GROUP = 7100
DEFAULT_MAX_HELD = 65_536
#: Copies held at most per initiator source prefix (/24, /48) before its newest are shed.
DEFAULT_PREFIX_BUDGET = 1024
#: The daemon's own defaults for --prefix-len and --rcvbuf-kb (crates/synopt/src/cli.rs).
DEFAULT_PREFIX_LEN = (24, 48)
DEFAULT_RCVBUF_KB = 8192


class DaemonMissing(SynoptError):
    """The `shortflow-synopt` binary is not built or not where it was said to be."""


def binary() -> str:
    """The daemon's program file: `$SHORTFLOW_SYNOPT`, then `shortflow-synopt` on PATH, then
    the repository's build (`shortflow.host.daemons`)."""
    try:
        found = daemons.find_binary("synopt")
    except HostError as e:
        raise DaemonMissing(str(e)) from None
    if found is None:
        raise DaemonMissing(f"{BINARY} not found: build it with `make build` (or `cargo build --release -p shortflow-synopt`), "
                            "or set SHORTFLOW_SYNOPT to its path")
    return found


def launcher() -> list[str]:
    """The command that starts the daemon: its binary when there is one (`binary()`), else
    the extension module's copy (a package installed with pip)."""
    try:
        return daemons.command("synopt")
    except HostError as e:
        raise DaemonMissing(str(e)) from None


def parse_ports(text: str) -> list[int]:
    """`80` or `80,443,8080` → ports; anything else is an error naming the bad part.

    >>> parse_ports("80,8080")
    [80, 8080]
    """
    ports: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not re.fullmatch(r"[0-9]{1,5}", part) or not 1 <= int(part) <= 65535:
            raise SynoptError(f"-p {text!r}: {part!r} is not a port (1-65535); write e.g. 80 or 80,443")
        if int(part) not in ports:
            ports.append(int(part))
    return ports


def parse_prefix_len(text: str) -> tuple[int, int]:
    """``V4,V6`` prefix lengths.

    >>> parse_prefix_len("16,32")
    (16, 32)
    """
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise SynoptError(f"--prefix-len {text!r}: give the IPv4 and IPv6 prefix lengths, e.g. 24,48")
    return int(parts[0]), int(parts[1])


def parse_delay_ms(text: str) -> int:
    """`-d`: milliseconds, as in the document (`-d 200`), or a duration with its unit
    (`200ms`, `0.2s`); at least 1 ms, whole milliseconds.

    >>> parse_delay_ms("200"), parse_delay_ms("0.25s")
    (200, 250)
    """
    text = text.strip()
    try:
        ms = float(text) if re.fullmatch(r"[0-9]+", text) else parse_duration(text, what="-d") * 1000
    except ValueError as e:
        raise SynoptError(f"{e} (-d is the delay in milliseconds, e.g. -d 200)") from None
    if ms < 1 or abs(ms - round(ms)) > 1e-9:
        raise SynoptError(f"-d {text!r}: the delay must be a whole number of milliseconds, at least 1")
    return int(round(ms))


@dataclass
class Options:
    delay_ms: int
    retries: int
    mode: str
    ports: list[int]
    json_stats: Path | None = None
    max_held: int = DEFAULT_MAX_HELD
    group: int = DEFAULT_GROUP
    ipv6: bool = True
    #: SCHED_FIFO priority of the daemon (0: normal priority; precision degrades under load).
    rt_priority: int = 10
    #: Copies held at most per source prefix of the initiator (0: no budget).
    prefix_budget: int = DEFAULT_PREFIX_BUDGET
    #: The prefix lengths (IPv4, IPv6) that group initiators for `prefix_budget`.
    prefix_len: tuple[int, int] = DEFAULT_PREFIX_LEN
    #: Receive buffer of the daemon's copies, kB: a burst beyond it loses copies (counted
    #: as bypassed), never packets.
    rcvbuf_kb: int = DEFAULT_RCVBUF_KB
    #: Make the nftables table with the `nft` command, not owned by the daemon (a SIGKILL
    #: then leaves it until the next start or `shortflow testbed clean`).
    unowned_table: bool = False
    extra: list[str] = field(default_factory=list)

    def check(self) -> None:
        if self.mode not in MODES:
            raise SynoptError(f"mode {self.mode!r}: choose one of -c (client), -s (server), --router")
        if not 0 <= self.retries <= 100:
            raise SynoptError(f"-r {self.retries}: retries must be between 0 and 100")
        if self.max_held < 1:
            raise SynoptError(f"--max-held {self.max_held}: at least one copy must be held")
        if not 0 <= self.group <= 65535:
            raise SynoptError(f"--group {self.group}: NFLOG groups are 0-65535")
        if not 0 <= self.rt_priority <= 99:
            raise SynoptError(f"--rt-priority {self.rt_priority}: SCHED_FIFO priorities are 1-99 (0: normal priority)")
        if self.prefix_budget < 0:
            raise SynoptError(f"--prefix-budget {self.prefix_budget}: 0 (no budget) or more")
        if not (0 <= self.prefix_len[0] <= 32 and 0 <= self.prefix_len[1] <= 128):
            raise SynoptError(f"--prefix-len {self.prefix_len[0]},{self.prefix_len[1]}: IPv4 prefixes are 0-32 bits, IPv6 0-128")
        if self.rcvbuf_kb < 1:
            raise SynoptError(f"--rcvbuf-kb {self.rcvbuf_kb}: at least 1")
        if not self.ports:
            raise SynoptError("-p: at least one port is needed")


def command(o: Options, exe: str | None = None) -> list[str]:
    """The daemon's command line for `o` (checked first)."""
    o.check()
    flag = {"client": "-c", "server": "-s", "router": "--router"}[o.mode]
    args = [*([exe] if exe else launcher()), "-d", str(o.delay_ms), "-r", str(o.retries), flag,
            "-p", ",".join(map(str, o.ports)), "--max-held", str(o.max_held), "--group", str(o.group)]
    if o.prefix_budget != DEFAULT_PREFIX_BUDGET:
        args += ["--prefix-budget", str(o.prefix_budget)]
    if o.prefix_len != DEFAULT_PREFIX_LEN:
        args += ["--prefix-len", f"{o.prefix_len[0]},{o.prefix_len[1]}"]
    if o.rcvbuf_kb != DEFAULT_RCVBUF_KB:
        args += ["--rcvbuf-kb", str(o.rcvbuf_kb)]
    if o.rt_priority != 10:
        args += ["--rt-priority", str(o.rt_priority)]
    if o.json_stats is not None:
        args += ["--json-stats", str(o.json_stats)]
    if not o.ipv6:
        args.append("--no-ipv6")
    if o.unowned_table:
        args.append("--unowned-table")
    return args + o.extra


def exec_daemon(o: Options) -> None:
    """Replaces this process with the daemon (so signals reach it directly)."""
    args = command(o)
    require_root("synopt", "nftables table, NFLOG, raw sockets")
    os.execv(args[0], args)


#: The status socket of a running daemon: its run lock (crates/synopt/src/sys.rs, RunLock).
_DAEMON_SOCKET = re.compile(r"@sf-([0-9a-f]{6})-synopt$")


def running() -> list[str]:
    """Run ids of the daemons running in this network namespace (their abstract sockets in
    /proc/net/unix, which lists the reader's namespace)."""
    ids = []
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        m = _DAEMON_SOCKET.search(line.strip())
        if m and m.group(1) not in ids:
            ids.append(m.group(1))
    return ids


def query(run_id: str, timeout_s: float = 1.0) -> dict[str, Any] | None:
    """The live counters of daemon `run_id` (None: it did not answer within `timeout_s`,
    e.g. stopped with SIGSTOP: traffic flows regardless, unprotected)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.bind("")  # autobind: an address to be answered at
        s.settimeout(timeout_s)
        try:
            s.sendto(b"status", f"\0sf-{run_id}-synopt")
            data = s.recv(65536)
        except (TimeoutError, ConnectionRefusedError, FileNotFoundError):
            return None
    counters: dict[str, Any] = json.loads(data)
    return counters


def status(timeout_s: float = 1.0) -> list[dict[str, Any]]:
    """One entry per daemon running in this namespace: its counters, or `answering: False`."""
    out: list[dict[str, Any]] = []
    for run_id in running():
        c = query(run_id, timeout_s)
        out.append({"run_id": run_id, "answering": False} if c is None else {**c, "answering": True})
    return out
