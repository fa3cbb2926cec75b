"""Names of everything a testbed run creates. Every object carries `sf-<run id>-`, so an
interrupted run's leftovers can be found by prefix (`shortflow testbed clean`)."""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass

PREFIX = "sf-"
#: Environment variable: hex digits every new run id starts with (see `RunNames.fresh`).
RUN_ID_PREFIX_ENV = "SHORTFLOW_RUN_ID_PREFIX"
#: `sf-` + 6 hex digits + `-`: what `clean` recognises as ours.
RUN_OBJECT = re.compile(r"^sf-[0-9a-f]{6}-")

#: Addresses used only inside the run's namespaces (10.231.x.y, never routed outside).
CLIENT_IP = "10.231.1.1"
ROUTER_CLIENT_IP = "10.231.1.254"
ROUTER_SERVER_IP = "10.231.2.254"
SERVER_IP = "10.231.2.1"
HTTP_PORT = 80


@dataclass(frozen=True)
class RunNames:
    run_id: str

    @classmethod
    def fresh(cls) -> RunNames:
        """A new run id: 6 hex digits, starting with `$SHORTFLOW_RUN_ID_PREFIX` when set (the
        test suite sets one so that its end-of-session check looks only at its own runs,
        not at a testbed someone else is running on the same host)."""
        tag = os.environ.get(RUN_ID_PREFIX_ENV, "")
        if not re.fullmatch(r"[0-9a-f]{0,5}", tag):
            tag = ""
        return cls(tag + secrets.token_hex(3)[: 6 - len(tag)])

    @property
    def prefix(self) -> str:
        return f"{PREFIX}{self.run_id}-"

    def ns(self, role: str) -> str:
        """Namespace of `client`, `router` or `server`."""
        return f"{self.prefix}{role}"

    # veth ends (names ≤ 15 characters): client side `c` ↔ router `rc`, server `s` ↔ `rs`.
    @property
    def client_dev(self) -> str:
        return f"{self.prefix}c"

    @property
    def router_client_dev(self) -> str:
        return f"{self.prefix}rc"

    @property
    def server_dev(self) -> str:
        return f"{self.prefix}s"

    @property
    def router_server_dev(self) -> str:
        return f"{self.prefix}rs"

    @property
    def rule_comment(self) -> str:
        return f"{self.prefix}netem"
