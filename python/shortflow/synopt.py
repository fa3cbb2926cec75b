"""`shortflow synopt`: the SYN optimizer of document 000 on a real host. This module checks
the options, finds the Rust daemon `shortflow-synopt` and builds its command line; the
daemon does the work (NFQUEUE, copies, resends, its own iptables rules).

Fail-open: the daemon's rules carry ``--queue-bypass`` and its queue accepts when full, so
a killed or overloaded daemon never blocks a connection; its next start (or
``shortflow testbed clean``) removes rules a killed daemon left.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from shortflow.exceptions import PrivilegeError, SynoptError
from shortflow.units import parse_duration

BINARY = "shortflow-synopt"
MODES = ("client", "server", "router")
#: The default NFQUEUE number: away from the testbed emulator's 0 and 1.
DEFAULT_QUEUE = 7100
DEFAULT_MAX_HELD = 65_536


class DaemonMissing(SynoptError):
    """The `shortflow-synopt` binary is not built or not where it was said to be."""


def binary() -> str:
    """`$SHORTFLOW_SYNOPT`, then `shortflow-synopt` on PATH, then the repository's build."""
    env = os.environ.get("SHORTFLOW_SYNOPT")
    if env:
        if not os.access(env, os.X_OK):
            raise DaemonMissing(f"SHORTFLOW_SYNOPT={env}: not an executable file")
        return env
    found = shutil.which(BINARY)
    if found:
        return found
    repo = Path(__file__).resolve().parents[2]
    for profile in ("release", "debug"):
        candidate = repo / "target" / profile / BINARY
        if candidate.is_file():
            return str(candidate)
    raise DaemonMissing(f"{BINARY} not found: build it with `make build` (or `cargo build --release -p shortflow-synopt`), "
                      "or set SHORTFLOW_SYNOPT to its path")


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
    queue_num: int = DEFAULT_QUEUE
    ipv6: bool = True
    #: SCHED_FIFO priority of the daemon (0: normal priority; precision degrades under load).
    rt_priority: int = 10
    #: Packets waiting for a verdict at most; beyond, the kernel passes them without a copy.
    queue_max_len: int = 4096
    extra: list[str] = field(default_factory=list)

    def check(self) -> None:
        if self.mode not in MODES:
            raise SynoptError(f"mode {self.mode!r}: choose one of -c (client), -s (server), --router")
        if not 0 <= self.retries <= 100:
            raise SynoptError(f"-r {self.retries}: retries must be between 0 and 100")
        if self.max_held < 1:
            raise SynoptError(f"--max-held {self.max_held}: at least one copy must be held")
        if not 0 <= self.queue_num <= 65535:
            raise SynoptError(f"--queue-num {self.queue_num}: NFQUEUE numbers are 0-65535")
        if not 0 <= self.rt_priority <= 99:
            raise SynoptError(f"--rt-priority {self.rt_priority}: SCHED_FIFO priorities are 1-99 (0: normal priority)")
        if self.queue_max_len < 1:
            raise SynoptError(f"--queue-max-len {self.queue_max_len}: at least 1")
        if not self.ports:
            raise SynoptError("-p: at least one port is needed")


def command(o: Options, exe: str | None = None) -> list[str]:
    """The daemon's command line for `o` (checked first)."""
    o.check()
    flag = {"client": "-c", "server": "-s", "router": "--router"}[o.mode]
    args = [exe or binary(), "-d", str(o.delay_ms), "-r", str(o.retries), flag,
            "-p", ",".join(map(str, o.ports)), "--max-held", str(o.max_held), "--queue-num", str(o.queue_num)]
    if o.queue_max_len != 4096:
        args += ["--queue-max-len", str(o.queue_max_len)]
    if o.rt_priority != 10:
        args += ["--rt-priority", str(o.rt_priority)]
    if o.json_stats is not None:
        args += ["--json-stats", str(o.json_stats)]
    if not o.ipv6:
        args.append("--no-ipv6")
    return args + o.extra


def exec_daemon(o: Options) -> None:
    """Replaces this process with the daemon (so signals reach it directly)."""
    args = command(o)
    if os.geteuid() != 0:
        raise PrivilegeError("synopt needs root (iptables rules, NFQUEUE, raw sockets): run it with sudo or as root")
    os.execv(args[0], args)
