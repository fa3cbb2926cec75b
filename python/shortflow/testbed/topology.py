"""Three namespaces on one line, client ─ router ─ server, and the guarantee that they go.

`Topology` is a context manager: on leaving it (normal end, exception, Ctrl-C, SIGTERM,
SIGHUP) it stops every child it started and deletes the namespaces, which takes their veth
ends, iptables rules, qdiscs and sockets with them. An `atexit` hook covers the paths that
skip `__exit__`.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType, TracebackType

from shortflow.host.netns import kill_namespace, write_owner
from shortflow.testbed import names as N
from shortflow.testbed.system import TestbedError, in_ns, require_root, run


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
        self.children: list[tuple[str, subprocess.Popen[str]]] = []
        self.workdir = Path(tempfile.mkdtemp(prefix=self.names.prefix))
        self.workdir.chmod(0o755)  # nginx workers (user nobody) read the bodies here
        # Who owns this run: `testbed clean` leaves the objects of a live run alone.
        write_owner(self.workdir)
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
            for _, p in reversed(self.children):
                stop(p, signal.SIGTERM)
                for stream in (p.stdout, p.stderr):
                    if stream is not None:
                        stream.close()
            for role in self.ROLES:
                kill_namespace(self.names.ns(role))
            for undo in reversed(self._cleanups):
                undo()
            shutil.rmtree(self.workdir, ignore_errors=True)
        finally:
            signal.signal(signal.SIGINT, old_int)
            for sig, h in self._old_handlers.items():
                signal.signal(sig, h)  # type: ignore[arg-type]
            atexit.unregister(self.close)

    # -- building ----------------------------------------------------------------------
    def _build(self) -> None:
        n = self.names
        for role in self.ROLES:
            run(["ip", "netns", "add", n.ns(role)])
            in_ns(n.ns(role), "ip", "link", "set", "lo", "up")
        # Created directly inside the namespaces: no veth ever sits in the root namespace.
        run(["ip", "link", "add", n.client_dev, "netns", n.ns("client"), "type", "veth",
             "peer", "name", n.router_client_dev, "netns", n.ns("router")])
        run(["ip", "link", "add", n.server_dev, "netns", n.ns("server"), "type", "veth",
             "peer", "name", n.router_server_dev, "netns", n.ns("router")])
        for role, dev, ip in (
            ("client", n.client_dev, N.CLIENT_IP),
            ("router", n.router_client_dev, N.ROUTER_CLIENT_IP),
            ("router", n.router_server_dev, N.ROUTER_SERVER_IP),
            ("server", n.server_dev, N.SERVER_IP),
        ):
            ns = n.ns(role)
            in_ns(ns, "ip", "addr", "add", f"{ip}/24", "dev", dev)
            # One segment per packet on the wire: without this, TSO/GSO super-packets would
            # appear as one 64 kB "segment" in the router's captures.
            in_ns(ns, "ip", "link", "set", dev, "gso_max_segs", "1", check=False)
            in_ns(ns, "ip", "link", "set", dev, "up")
        in_ns(n.ns("router"), "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")

    def set_route(self, role: str, options: list[str]) -> None:
        """The default route of `client` or `server` through the router, with route metrics
        (`initcwnd`, `rto_min`, `quickack`) that the kernel applies to every connection."""
        dev, via = ((self.names.client_dev, N.ROUTER_CLIENT_IP) if role == "client"
                    else (self.names.server_dev, N.ROUTER_SERVER_IP))
        in_ns(self.names.ns(role), "ip", "route", "replace", "default", "via", via, "dev", dev, *options)

    def sysctl(self, role: str, key: str, value: str | int) -> None:
        in_ns(self.names.ns(role), "sysctl", "-q", "-w", f"{key}={value}")

    def add_cleanup(self, undo: Callable[[], None]) -> None:
        """`undo` runs on close, after the children and namespaces are gone (last added first)."""
        self._cleanups.append(undo)

    # -- children ----------------------------------------------------------------------
    def spawn(self, label: str, role: str, args: list[str], **kw: object) -> subprocess.Popen[str]:
        """Starts `args` inside namespace `role` (and the role's cgroup, when it has one);
        it is stopped when the topology closes."""
        cgroup = self.cgroups.get(role)

        def enter_cgroup() -> None:
            if cgroup is not None:
                (cgroup / "cgroup.procs").write_text(str(os.getpid()))

        p: subprocess.Popen[str] = subprocess.Popen(["ip", "netns", "exec", self.names.ns(role), *args], text=True,  # type: ignore[call-overload]
                             stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=enter_cgroup, **kw)
        self.children.append((label, p))
        return p

    def check_children(self, skip: subprocess.Popen[str] | None = None) -> None:
        """Raises if a child we still need has died (a crashed emulator or server)."""
        for label, p in self.children:
            if p is not skip and p.poll() is not None:
                raise TestbedError(f"{label} exited early with code {p.returncode}")


def stop(p: subprocess.Popen[str], sig: signal.Signals, grace: float = 3.0) -> None:
    """Sends `sig`, waits `grace` seconds, then kills; always reaps."""
    if p.poll() is None:
        try:
            p.send_signal(sig)
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            p.kill()
    try:
        p.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass

