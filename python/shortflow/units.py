"""Values with their units written out: ``200ms``, ``3s``, ``1.5min``. A bare number is an
error, never a silent default unit."""

from __future__ import annotations

import re

_DURATION = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
_NUMBER_UNIT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-zµ]+)\s*$")


def parse_duration(text: str, *, what: str = "duration") -> float:
    """Seconds in ``text``; raises ValueError naming `what` when the unit is missing or unknown.

    >>> parse_duration("200ms")
    0.2
    >>> parse_duration("5")
    Traceback (most recent call last):
    ...
    ValueError: duration '5' has no unit: write it as e.g. 200ms, 3s or 5min
    """
    m = _NUMBER_UNIT.match(text)
    if not m:
        if re.match(r"^\s*[0-9.]+\s*$", text):
            raise ValueError(f"{what} {text!r} has no unit: write it as e.g. 200ms, 3s or 5min")
        raise ValueError(f"{what} {text!r} is not a number with a unit (e.g. 200ms, 3s, 5min)")
    value, unit = float(m.group(1)), m.group(2)
    if unit not in _DURATION:
        raise ValueError(f"{what} {text!r}: unknown unit {unit!r} (use one of {', '.join(_DURATION)})")
    return value * _DURATION[unit]


_SIZE = {"B": 1, "kB": 1000, "KiB": 1024, "MB": 1000**2, "MiB": 1024**2, "GB": 1000**3, "GiB": 1024**3}


def parse_size(text: str, *, what: str = "size") -> int:
    """Bytes in ``text``; raises ValueError naming `what` when the unit is missing or unknown.

    >>> parse_size("64kB")
    64000
    >>> parse_size("64")
    Traceback (most recent call last):
    ...
    ValueError: size '64' has no unit: write it as e.g. 1460B, 64kB or 1MiB
    """
    m = _NUMBER_UNIT.match(text)
    if not m:
        if re.match(r"^\s*[0-9.]+\s*$", text):
            raise ValueError(f"{what} {text!r} has no unit: write it as e.g. 1460B, 64kB or 1MiB")
        raise ValueError(f"{what} {text!r} is not a number with a unit (e.g. 1460B, 64kB, 1MiB)")
    value, unit = float(m.group(1)), m.group(2)
    if unit not in _SIZE:
        raise ValueError(f"{what} {text!r}: unknown unit {unit!r} (use one of {', '.join(_SIZE)})")
    return round(value * _SIZE[unit])
