"""Running commands, in the root namespace or inside one of ours, with errors that say
which command failed and what it printed."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from functools import wraps
from typing import ParamSpec, TypeVar

from shortflow.exceptions import PrivilegeError, ShortflowError


class HostError(ShortflowError):
    """A step on the host failed (a command, a child process, a kernel facility)."""


def require_root(what: str = "the testbed", needs: str = "network namespaces, iptables, tc, BPF") -> None:
    """PrivilegeError unless this process is root: `what` needs it for `needs`."""
    if os.geteuid() != 0:
        raise PrivilegeError(f"{what} needs root ({needs}): run it with sudo or as root")


def run(args: Sequence[str], *, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Runs `args`; raises HostError naming the command and what it printed when it fails."""
    try:
        r = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise HostError(f"{args[0]!r} not found: install it (`make deps` installs the Debian packages shortflow uses)") from None
    except subprocess.TimeoutExpired:
        raise HostError(f"`{' '.join(args)}` did not finish in {timeout:g} s") from None
    if check and r.returncode != 0:
        raise HostError(f"`{' '.join(args)}` failed ({r.returncode}): {(r.stderr or r.stdout).strip()}")
    return r


def in_ns(ns: str, *args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Runs `args` inside network namespace `ns`."""
    return run(["ip", "netns", "exec", ns, *args], check=check, timeout=timeout)


P = ParamSpec("P")
R = TypeVar("R")


def raising(error: type[Exception], f: Callable[P, R]) -> Callable[P, R]:
    """`f` with its HostError raised as `error` (same words): a caller whose own callers
    expect its error type (`tune`'s rollback and CLI expect TuneError)."""

    @wraps(f)
    def inner(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return f(*args, **kwargs)
        except HostError as e:
            raise error(str(e)) from None

    return inner
