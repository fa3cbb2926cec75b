"""Where shortflow's daemons are, and how to start them: the link emulator
(`shortflow-netem`) and the SYN optimizer (`shortflow-synopt`).

A daemon is found as `$SHORTFLOW_<NAME>`, then `shortflow-<name>` on PATH, then the
repository's own build (`target/release`); a package installed with pip has none of these
and runs the same Rust code from its extension module instead: ``python -m
shortflow.host.daemons NAME ARGS…`` (the daemon then owns that process: its signal
handlers, its real-time priority)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from shortflow import _core
from shortflow.host.commands import HostError

#: Daemons the extension module carries, by name: the function that runs one's command line.
_IN_EXTENSION = {"netem": "run_netem", "synopt": "run_synopt"}


def find_binary(name: str) -> str | None:
    """`$SHORTFLOW_<NAME>`, `shortflow-<name>` on PATH, or the repository's build; None when
    there is no binary (a pip-installed package)."""
    exe = f"shortflow-{name}"
    env = os.environ.get(f"SHORTFLOW_{name.upper()}")
    if env:
        if not os.access(env, os.X_OK):
            raise HostError(f"SHORTFLOW_{name.upper()}={env}: not an executable file")
        return env
    found = shutil.which(exe)
    if found:
        return found
    repo = Path(__file__).resolve().parents[3]
    if (repo / "Cargo.toml").is_file():
        for profile in ("release", "debug"):
            candidate = repo / "target" / profile / exe
            if candidate.is_file():
                return str(candidate)
    return None


def in_extension(name: str) -> bool:
    return hasattr(_core, _IN_EXTENSION.get(name, ""))


def command(name: str) -> list[str]:
    """The command line that starts daemon `name` (its options follow)."""
    exe = find_binary(name)
    if exe is not None:
        return [exe]
    if in_extension(name):
        return [sys.executable, "-m", "shortflow.host.daemons", name]
    raise HostError(f"shortflow-{name} not found: build it with `make build` (or `cargo build --release -p "
                    f"shortflow-{name}`), or set SHORTFLOW_{name.upper()} to its path")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in _IN_EXTENSION or not in_extension(argv[0]):
        known = ", ".join(n for n in _IN_EXTENSION if in_extension(n))
        sys.stderr.write(f"usage: python -m shortflow.host.daemons NAME [ARGS…] (NAME: {known})\n")
        return 2
    name, args = argv[0], argv[1:]
    run = getattr(_core, _IN_EXTENSION[name])
    return int(run([f"shortflow-{name}", *args]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
