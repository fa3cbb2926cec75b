"""Every shortflow error derives from `ShortflowError` (defined in the native module, so
errors raised in Rust and in Python share one base)."""

from __future__ import annotations

from shortflow._core import ScenarioError, ShortflowError, TraceReadError


class PrivilegeError(ShortflowError):
    """The operation needs root (network namespaces, iptables, BPF)."""


__all__ = ["PrivilegeError", "ScenarioError", "ShortflowError", "TraceReadError"]
