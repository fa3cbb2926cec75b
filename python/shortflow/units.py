"""Values with their units written out: ``200ms``, ``1e2ms``, ``35kB``, ``10Mbit``. A bare
number is an error, never a silent default unit.

The grammar is the core's (``shortflow_scenario::units`` in Rust), the one place where a
unit is read: these functions only convert its answer to seconds, bytes and bits/s."""

from __future__ import annotations

from shortflow import _core


def parse_duration(text: str, *, what: str = "duration") -> float:
    """Seconds in ``text``; raises `UnitError` (a ValueError) naming `what` when the unit is missing or unknown.

    >>> parse_duration("200ms")
    0.2
    >>> parse_duration("5")
    Traceback (most recent call last):
    ...
    shortflow.UnitError: duration "5" has no unit: write it as e.g. 200ms, 1.5s or 250us
    """
    return _core.duration_ns(text, what) / 1e9


def parse_size(text: str, *, what: str = "size") -> int:
    """Bytes in ``text``; raises `UnitError` (a ValueError) naming `what` when the unit is missing or unknown.

    >>> parse_size("64kB")
    64000
    >>> parse_size("64")
    Traceback (most recent call last):
    ...
    shortflow.UnitError: size "64" has no unit: write it as e.g. 13549B, 35kB or 1MiB
    """
    return _core.size_bytes(text, what)


def parse_rate(text: str, *, what: str = "rate") -> int:
    """Bits per second in ``text`` (``10Mbit``, ``10Mbps``, tc's ``10mbit``).

    >>> parse_rate("10mbit")
    10000000
    """
    return _core.rate_bps(text, what)


def format_seconds(s: float) -> str:
    """``s`` seconds in the unit that fits, three significant figures at most.

    >>> format_seconds(0.000012), format_seconds(0.0431), format_seconds(2.5), format_seconds(1234.5)
    ('12 µs', '43.1 ms', '2.5 s', '1,234 s')
    >>> format_seconds(0.9999), format_seconds(0.0009996)
    ('1 s', '1 ms')
    """
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        # A value that rounds to 1,000 of a unit is 1 of the next: 1 s, not 1,000 ms.
        if abs(s) >= scale * 0.9995 or unit == "µs":
            v = s / scale
            return f"{v:,.0f} {unit}" if abs(v) >= 100 else f"{v:.3g} {unit}"
    raise AssertionError("unreachable")
