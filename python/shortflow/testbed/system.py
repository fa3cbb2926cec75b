"""The testbed's name for the host layer's command runner (`shortflow.host`): one
definition, re-exported so that the testbed's modules read `TestbedError` where a testbed
step failed."""

from __future__ import annotations

from shortflow.host.commands import HostError as TestbedError
from shortflow.host.commands import in_ns, require_root, run
from shortflow.host.kernel import ns_counters

__all__ = ["TestbedError", "in_ns", "ns_counters", "require_root", "run"]
