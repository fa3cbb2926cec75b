"""Run ids: every object shortflow creates on a host (namespaces, links, cgroups, BPF pins,
rules, work directories) carries `sf-<run id>-`, so leftovers can be found by name."""

from __future__ import annotations

import os
import re
import secrets

PREFIX = "sf-"
#: Environment variable: hex digits every new run id starts with (see `fresh_run_id`).
RUN_ID_PREFIX_ENV = "SHORTFLOW_RUN_ID_PREFIX"
#: `sf-` + 6 hex digits + `-`: what `testbed clean` recognises as ours.
RUN_OBJECT = re.compile(r"^sf-[0-9a-f]{6}-")
#: A testbed run's per-role objects (namespaces, and the cgroups its processes run in).
TESTBED_ROLE_OBJECT = re.compile(r"^sf-[0-9a-f]{6}-(client|router|server)$")


def fresh_run_id() -> str:
    """A new run id: 6 hex digits, starting with `$SHORTFLOW_RUN_ID_PREFIX` when set (the
    test suite sets one so that its end-of-session check looks only at its own runs, not at
    a testbed someone else is running on the same host)."""
    tag = os.environ.get(RUN_ID_PREFIX_ENV, "")
    if not re.fullmatch(r"[0-9a-f]{0,5}", tag):
        tag = ""
    return tag + secrets.token_hex(3)[: 6 - len(tag)]
