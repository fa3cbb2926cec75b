"""Three namespaces on one line, client ─ router ─ server, and the guarantee that they go.

`Topology` is a context manager: on leaving it (normal end, exception, Ctrl-C, SIGTERM,
SIGHUP) it stops every child it started and deletes the namespaces, which takes their veth
ends, iptables rules, qdiscs and sockets with them. An `atexit` hook covers the paths that
skip `__exit__`.
"""

from __future__ import annotations

import atexit
import shutil
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any

from shortflow.host import knobs
from shortflow.host.daemon import PIPE, Daemon, Process
from shortflow.host.netns import add_veth, create_namespace, kill_namespace, set_up
from shortflow.host.records import run_owner, write_owner
from shortflow.testbed import names as N
from shortflow.testbed.system import TestbedError, require_root


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: unwound like Ctrl-C so every `finally` runs."""


def _raise_terminated(signum: int, _frame: FrameType | None) -> None:
    raise Terminated(f"signal {signal.Signals(signum).name}")


class Topology:
    """Namespaces `sf-<id>-client|router|server`, veths, addresses, routes, forwarding."""

    ROLES = ("client", "router", "server")

    def __init__(self, names: N.RunNames | None = None) -> None:
        require_root()
        self.names = names or N.RunNames.fresh()
        self.children: list[Daemon] = []
        self.workdir = Path(tempfile.mkdtemp(prefix=self.names.prefix))
        self.workdir.chmod(0o755)  # nginx workers (user nobody) read the bodies here
        # Who owns this run, in the fixed system place (not $TMPDIR, which another shell's
        # `testbed clean` may not share): `testbed clean` leaves the objects of a live run alone.
        write_owner(run_owner(self.names.run_id))
        self.cgroups: dict[str, Path] = {}
        self._cleanups: list[Callable[[], None]] = []
        self._closed = False
        self._old_handlers: dict[int, object] = {}

    # -- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> Topology:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            self._old_handlers[sig] = signal.signal(sig, _raise_terminated)
        atexit.register(self.close)
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Stops children, deletes namespaces and the work directory. Idempotent."""
        if self._closed:
            return
        self._closed = True
        # A second Ctrl-C during cleanup must not leave half the run behind.
        old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            for d in reversed(self.children):
                d.close()
            for role in self.ROLES:
                kill_namespace(self.names.ns(role))
            for undo in reversed(self._cleanups):
                undo()
            shutil.rmtree(self.workdir, ignore_errors=True)
            run_owner(self.names.run_id).unlink(missing_ok=True)
        finally:
            signal.signal(signal.SIGINT, old_int)
            for sig, h in self._old_handlers.items():
                signal.signal(sig, h)  # type: ignore[arg-type]
            atexit.unregister(self.close)

    # -- building ----------------------------------------------------------------------
    def _build(self) -> None:
        n = self.names
        for role in self.ROLES:
            create_namespace(n.ns(role))
        # Created directly inside the namespaces: no veth ever sits in the root namespace.
        add_veth((n.client_dev, n.ns("client")), (n.router_client_dev, n.ns("router")))
        add_veth((n.server_dev, n.ns("server")), (n.router_server_dev, n.ns("router")))
        for role, dev, ip in (
            ("client", n.client_dev, N.CLIENT_IP),
            ("router", n.router_client_dev, N.ROUTER_CLIENT_IP),
            ("router", n.router_server_dev, N.ROUTER_SERVER_IP),
            ("server", n.server_dev, N.SERVER_IP),
        ):
            # One segment per packet on the wire: without this, TSO/GSO super-packets would
            # appear as one 64 kB "segment" in the router's captures.
            set_up(n.ns(role), dev, f"{ip}/24", gso_max_segs=1)
        knobs.set_sysctl("net.ipv4.ip_forward", 1, n.ns("router"))

    def set_route(self, role: str, options: list[str]) -> None:
        """The default route of `client` or `server` through the router, with route metrics
        (`initcwnd`, `rto_min`, `quickack`) that the kernel applies to every connection."""
        dev, via = ((self.names.client_dev, N.ROUTER_CLIENT_IP) if role == "client"
                    else (self.names.server_dev, N.ROUTER_SERVER_IP))
        knobs.set_route(["default", "via", via, "dev", dev, *options], ns=self.names.ns(role))

    def sysctl(self, role: str, key: str, value: str | int) -> None:
        knobs.set_sysctl(key, value, self.names.ns(role))

    def add_cleanup(self, undo: Callable[[], None]) -> None:
        """`undo` runs on close, after the children and namespaces are gone (last added first)."""
        self._cleanups.append(undo)

    # -- children ----------------------------------------------------------------------
    def daemon(self, label: str, role: str, args: list[str], *, stdout: int | IO[Any] | None = PIPE,
               stderr: int | IO[Any] | None = PIPE) -> Daemon:
        """Starts `args` inside namespace `role` (and the role's cgroup, when it has one);
        it is stopped when the topology closes."""
        d = Daemon(label, args, ns=self.names.ns(role), cgroup=self.cgroups.get(role), stdout=stdout, stderr=stderr)
        self.children.append(d)
        d.start()
        return d

    def spawn(self, label: str, role: str, args: list[str], **kw: Any) -> Process[str]:
        """`daemon(...)`'s process itself, for callers that wait on it directly."""
        p = self.daemon(label, role, args, **kw).proc
        assert p is not None
        return p

    def check_children(self, skip: Process[str] | Daemon | None = None) -> None:
        """Raises if a child we still need has died (a crashed emulator or server)."""
        for d in self.children:
            if d is not skip and d.proc is not skip and d.proc is not None and d.proc.poll() is not None:
                raise TestbedError(f"{d.label} exited early with code {d.proc.returncode}")
