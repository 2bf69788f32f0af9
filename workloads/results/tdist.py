"""Student's t distribution for integer degrees of freedom: its CDF and quantiles, without
scipy (not a dependency). The intervals that the report and the per-op suite label 95% are t
intervals on log-ratios (``workloads.report.significance.mean_ratio_ci``,
``workloads.results.band``), and they need its quantiles for 1 to a few hundred degrees of
freedom.
"""

from __future__ import annotations

import math
from functools import lru_cache


def t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with an integer ``df`` >= 1, in closed form (the finite series
    in theta = atan(t / sqrt(df)); no scipy here). Exact to float precision."""
    if df < 1:
        raise ValueError(f"t_cdf needs df >= 1, got {df}")
    theta = math.atan2(abs(t), math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2:  # odd: (2/pi) (theta + sin cos (1 + 2/3 cos^2 + 2*4/(3*5) cos^4 ...))
        term, total = 1.0, 1.0 if df > 1 else 0.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        inside = 2 / math.pi * (theta + s * math.cos(theta) * total)
    else:  # even: sin (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 ...)
        term, total = 1.0, 1.0
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        inside = s * total
    half = min(1.0, inside) / 2
    return 0.5 + half if t >= 0 else 0.5 - half


@lru_cache(maxsize=256)
def t_quantile(p: float, df: int) -> float:
    """The p-quantile of Student's t with integer ``df``, by bisection on :func:`t_cdf`
    (cached: the decision asks for the same few quantiles over and over)."""
    if not 0 < p < 1:
        raise ValueError(f"t_quantile needs 0 < p < 1, got {p}")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2
