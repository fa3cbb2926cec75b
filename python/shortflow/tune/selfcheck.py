"""`tune apply`'s check that the kernel takes every knob: the program just loaded is also
attached to a cgroup of its own, through a link only this process holds (it goes with the
process, whatever ends it), and one loopback connection (on the scope's port) is made from
that cgroup in a network namespace of its own; if the kernel refused a knob for it (the
program's per-knob refusal counters moved), apply fails (or, with --force, warns) instead
of reporting success for settings that do nothing. Both objects carry the run id
(`sf-<id>-tcheck`); `apply` journals them before they are made, so they are removed on
every exit path: here when the check ends, by the rollback of an apply that failed or was
stopped, and from the journal after a SIGKILL."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from shortflow.exceptions import TuneError
from shortflow.host import HostError, cgroup2_root, cgroups
from shortflow.host.daemon import Daemon
from shortflow.host.netns import create_namespace, delete_namespace
from shortflow.tune import program
from shortflow.tune.journal import selfcheck_name

#: One connection over loopback: listen, connect, 100 kB from the answering side, close.
_PROBE = """
import socket, sys
port = int(sys.argv[1])
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port)); ls.listen(1)
c = socket.create_connection(("127.0.0.1", port), timeout=10)
a, _ = ls.accept()
a.sendall(b"x" * 100000); a.close()
while c.recv(65536):
    pass
c.close(); ls.close()
"""


def objects(run_id: str) -> tuple[str, Path]:
    """The self-check's namespace and cgroup."""
    return selfcheck_name(run_id), cgroup2_root() / selfcheck_name(run_id)


def check(pin_dir: Path, run_id: str, port: int | None, started: Callable[[], None] = lambda: None) -> list[str]:
    """The refusals (as `tune status` words them) the kernel made for one probe connection;
    empty when it took every knob. `started` is called once the probe runs (the journal's
    fault injection)."""
    ns, cg = objects(run_id)
    before = program.counters(pin_dir)
    link = None
    try:
        create_namespace(ns)
        cgroups.create(cg)
        link = program.attach_held(cg, pin_dir)
        probe = Daemon("the self-check connection", [sys.executable, "-c", _PROBE, str(port or 8)], ns=ns, cgroup=cg)
        try:
            probe.start()
            started()
            probe.wait(30)
        except HostError as e:
            probe.signal_stop()
            raise TuneError(f"the self-check connection failed: {str(e)[-300:]}") from None
        after = program.counters(pin_dir)
    except HostError as e:
        raise TuneError(f"self-check: {e}") from None
    finally:
        if link is not None:
            link.close()
        cgroups.remove(cg)
        delete_namespace(ns)
    moved = {k: after[k] - before.get(k, 0) for k in program.REFUSED}
    return program.refusals(moved, program.last_errors(pin_dir))
