"""Means over seeds with a 95 % confidence interval (Student's t for small samples)."""

from __future__ import annotations

import math
from collections.abc import Sequence

#: t_{0.975, n-1} for n = 2..10 (then the normal 1.96 is close enough for a note).
_T975 = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776, 6: 2.571, 7: 2.447, 8: 2.365, 9: 2.306, 10: 2.262}


def mean_ci(xs: Sequence[float]) -> tuple[float, float]:
    """Mean and 95 % confidence half-width of `xs` (0 for a single value)."""
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, 0.0
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    return m, _T975.get(n, 1.96) * sd / math.sqrt(n)
