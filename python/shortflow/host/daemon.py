"""Every process shortflow starts and keeps running beside itself — the link emulator, the
SYN optimizer, nginx, tcpdump, the testbed's client, a probe connection — as one `Daemon`:
started (in a network namespace and a cgroup when asked), waited for until it says it is
ready, stopped with a signal and a grace period, and read for what it left (its stderr, the
statistics file it wrote). One protocol, so a daemon that dies at start, hangs at stop or
writes no statistics fails the same way, with the same words, wherever it runs.

    d = Daemon("shortflow-netem", [*cmd], ns="sf-1a2b3c-router")
    d.start()
    d.ready_line("ready")          # its first line on stdout
    ...
    d.stop(signal.SIGTERM)         # raises HostError when it exited non-zero
    stats = d.stats(path)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from shortflow.host.commands import HostError

#: What a daemon's standard streams go to: captured (a pipe) or dropped.
PIPE, DEVNULL = subprocess.PIPE, subprocess.DEVNULL
#: A running child, as its callers outside the host layer name its type (`Process[str]`).
Process = subprocess.Popen


class Daemon:
    """One child process. `proc` is the `subprocess.Popen` itself, for the callers that
    wait on it, signal it or read its pipes directly."""

    def __init__(self, label: str, args: Sequence[str], *, ns: str | None = None, cgroup: Path | None = None,
                 stdout: int | IO[Any] | None = PIPE, stderr: int | IO[Any] | None = PIPE) -> None:
        self.label = label
        self.args = list(args)
        self.ns, self.cgroup = ns, cgroup
        self._streams = {"stdout": stdout, "stderr": stderr}
        self.proc: subprocess.Popen[str] | None = None
        #: What the daemon printed on stderr, read when it stopped.
        self.err = ""

    # -- starting ------------------------------------------------------------------------
    def start(self) -> Daemon:
        """Starts the process in its own session (a Ctrl-C at the terminal reaches
        shortflow, which stops it in order), with no standard input."""
        cgroup = self.cgroup

        def enter_cgroup() -> None:
            if cgroup is not None:
                (cgroup / "cgroup.procs").write_text(str(os.getpid()))

        argv = ["ip", "netns", "exec", self.ns, *self.args] if self.ns else self.args
        try:
            self.proc = subprocess.Popen(argv, text=True, stdin=subprocess.DEVNULL, start_new_session=True,
                                         preexec_fn=enter_cgroup if cgroup is not None else None,
                                         stdout=self._streams["stdout"], stderr=self._streams["stderr"])
        except FileNotFoundError:
            raise HostError(f"{self.label}: {argv[0]!r} not found: install it (`make deps` installs the Debian "
                            "packages shortflow uses)") from None
        return self

    def _running(self) -> subprocess.Popen[str]:
        if self.proc is None:
            raise HostError(f"{self.label} was not started")
        return self.proc

    def _died(self, what: str) -> HostError:
        p = self._running()
        if p.poll() is None:
            p.kill()
        p.wait()
        err = p.stderr.read() if p.stderr and not p.stderr.closed else ""
        return HostError(f"{self.label} {what}: {err.strip() or f'exit code {p.returncode}'}".strip())

    def ready_line(self, prefix: str) -> str:
        """Waits for the daemon's first line on stdout, which must start with `prefix`
        (its way of saying it is ready); returns the line."""
        p = self._running()
        assert p.stdout is not None, f"{self.label}: stdout is not captured"
        line = p.stdout.readline().strip()
        if not line.startswith(prefix):
            # Its exit code and stderr say why (it exits when its start fails).
            err = ""
            try:
                p.wait(timeout=10)
                err = p.stderr.read() if p.stderr else ""
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            raise HostError(f"{self.label} did not start: {(line + ' ' + err).strip()}")
        return line

    def ready_stderr(self, needle: str, timeout: float = 10.0) -> None:
        """Waits for a line holding `needle` on the daemon's stderr (tcpdump's "listening on")."""
        p = self._running()
        assert p.stderr is not None, f"{self.label}: stderr is not captured"
        deadline = time.monotonic() + timeout
        line = ""
        while time.monotonic() < deadline:
            line = p.stderr.readline()
            if needle in line:
                return
            if not line:
                break
        raise HostError(f"{self.label} did not start: {line.strip()}")

    def ready_when(self, ready: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
        """Polls `ready()` until it holds; the daemon must stay alive meanwhile."""
        p = self._running()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if p.poll() is not None:
                raise self._died(f"exited at start ({p.returncode})")
            if ready():
                return
            time.sleep(0.05)
        raise HostError(f"{self.label} did not {what} within {timeout:g} s")

    # -- while it runs -------------------------------------------------------------------
    @property
    def pid(self) -> int:
        return self._running().pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait(self, timeout: float, *, check: Callable[[], None] | None = None) -> tuple[str, str]:
        """Waits for the daemon to end by itself (a client that runs to completion), calling
        `check` meanwhile (e.g. raise when a daemon it needs died); returns (stdout, stderr)
        and raises HostError when it exited non-zero or outlived `timeout`."""
        p = self._running()
        deadline = time.monotonic() + timeout
        while p.poll() is None:
            if time.monotonic() > deadline:
                raise HostError(f"{self.label} did not finish within {timeout:g} s")
            if check is not None:
                check()
            time.sleep(0.05)
        out, err = p.communicate()
        self.err = err or ""
        if p.returncode != 0:
            raise HostError(f"{self.label} failed ({p.returncode}): {self.err.strip()}")
        return out or "", self.err

    # -- stopping ------------------------------------------------------------------------
    def signal_stop(self, sig: signal.Signals = signal.SIGTERM, grace: float = 3.0) -> int | None:
        """Sends `sig`, waits `grace` seconds, then kills; always reaps. Returns the exit
        code (None when it was never started). Its stderr is read into `err`."""
        p = self.proc
        if p is None:
            return None
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
        if p.stderr is not None and not p.stderr.closed:
            self.err = p.stderr.read()
        return p.returncode

    def stop(self, sig: signal.Signals = signal.SIGTERM, grace: float = 3.0) -> str:
        """`signal_stop`, and HostError when the daemon exited non-zero; returns its stderr."""
        code = self.signal_stop(sig, grace)
        if code is None:
            raise HostError(f"{self.label} was not started")
        if code != 0:
            raise HostError(f"{self.label} failed ({code}): {self.err.strip()}")
        return self.err

    def kill(self) -> None:
        """SIGKILL, and reaped: the daemon cleans nothing up."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def close(self) -> None:
        """Stops it (SIGTERM, then SIGKILL after the grace) and closes its pipes."""
        self.signal_stop(signal.SIGTERM)
        if self.proc is not None:
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()

    def stats(self, path: Path) -> dict[str, Any]:
        """The JSON statistics the daemon wrote to `path` when it stopped."""
        try:
            stats: dict[str, Any] = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise HostError(f"{self.label} wrote no statistics: {e}") from None
        return stats
