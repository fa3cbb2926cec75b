"""A command's own peak memory, read by a small process that starts it: a child forked
from pytest (or any large process) counts its parent's pages as its own until it execs
(wait4's ru_maxrss), so the command is started by a fresh interpreter instead."""

from __future__ import annotations

import json
import os
import subprocess
import sys

#: Runs its arguments and prints their exit code, wall time and peak RSS (KiB) as JSON on
#: its last line, their stderr before it.
_MEASURE = """
import json, os, subprocess, sys, time
t0 = time.monotonic()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = p.stderr.read().decode()
_, status, usage = os.wait4(p.pid, 0)
sys.stdout.write(err + "\\n" + json.dumps([os.waitstatus_to_exitcode(status), time.monotonic() - t0, usage.ru_maxrss]))
"""


def peak_rss_mb(cmd: list[str], timeout: float | None = None) -> tuple[int, str, float, float]:
    """Runs `cmd`: its exit code, stderr, wall time (s) and own peak RSS (MB)."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], capture_output=True, text=True, check=True,
                         env={**os.environ, "COLUMNS": "400"}, timeout=timeout).stdout
    err, _, last = out.rpartition("\n")
    code, secs, peak_kib = json.loads(last)
    return code, err, secs, peak_kib / 1024
