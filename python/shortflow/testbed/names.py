"""Names of everything a testbed run creates. Every object carries `sf-<run id>-`, so an
interrupted run's leftovers can be found by prefix (`shortflow testbed clean`)."""

from __future__ import annotations

from dataclasses import dataclass

from shortflow.host.runid import PREFIX, RUN_ID_PREFIX_ENV, RUN_OBJECT, fresh_run_id

__all__ = ["PREFIX", "RUN_ID_PREFIX_ENV", "RUN_OBJECT", "RunNames"]

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
        """A new run id (`shortflow.host.runid.fresh_run_id`)."""
        return cls(fresh_run_id())

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
