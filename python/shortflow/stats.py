"""Means over seeds with a 95 % confidence interval: Student's t for every sample size.

The one definition every interval shortflow prints uses (`shortflow sweep`'s "95 % CI",
`shortflow reproduce`'s means over seeds).

>>> round(t975(1), 3), round(t975(30), 3), round(t975(1000), 3)
(12.706, 2.042, 1.962)
>>> m, ci = mean_ci([1.0, 2.0])
>>> m, round(ci, 3)
(1.5, 6.353)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: t_{0.975, df}, the two-sided 95 % quantile of Student's t, for df = 1..30.
_T975 = (12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
         2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
         2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423)

#: The normal distribution's 97.5 % quantile.
_Z975 = 1.959964


def t975(df: int) -> float:
    """Student's t quantile t_{0.975, df}: the table to 30 degrees of freedom, beyond it
    the Cornish-Fisher expansion in 1/df (within 1e-5 of the exact value from df = 30)."""
    if df < 1:
        raise ValueError(f"degrees of freedom {df}: at least 1")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / df + g2 / df**2 + g3 / df**3


def mean_sd(xs: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (n − 1; 0 for a single value)."""
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, 0.0
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))


def mean_ci(xs: Sequence[float]) -> tuple[float, float]:
    """Mean and 95 % confidence half-width of `xs`, t_{0.975, n−1} · sd / √n (0 for a
    single value)."""
    n = len(xs)
    m, sd = mean_sd(xs)
    if n < 2:
        return m, 0.0
    return m, t975(n - 1) * sd / math.sqrt(n)
