"""Every shortflow error derives from `ShortflowError` (defined in the native module, so
errors raised in Rust and in Python share one base)."""

from __future__ import annotations

from shortflow._core import (
    CaptureError,
    FilterError,
    ScenarioError,
    ShortflowError,
    SimulationLimitError,
    TraceReadError,
    UnitError,
)


class ClusterError(ShortflowError):
    """The Dask scheduler's address is malformed or nothing answers there."""


class PrivilegeError(ShortflowError):
    """The operation needs root (network namespaces, iptables, BPF)."""


class SynoptError(ShortflowError):
    """The SYN optimizer cannot start: a bad option value or its daemon binary is missing."""


class TuneError(ShortflowError):
    """`shortflow tune` refuses a value, cannot apply it, or cannot revert it."""


__all__ = ["CaptureError", "ClusterError", "FilterError", "PrivilegeError", "ScenarioError", "ShortflowError", "SimulationLimitError", "SynoptError",
           "TraceReadError", "TuneError", "UnitError"]
