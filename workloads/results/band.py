"""The agree / disagree / undecided verdict of an interval against a band, shared by the
per-op suite (bench/perop_stats.py) and the report's fidelity section: one rule, so a verdict
means the same wherever statebench prints one; and the intervals it is given, which must be
what they say (95%).

The intervals are t intervals on log-ratios. Why not a bootstrap: the values are a handful of
per-process or per-repetition ratios (3 processes, 3-8 repetitions), and a percentile
bootstrap of a median of three returns the smallest and largest of the three, which covers the
true ratio about 75% of the time; of the ratio of two such medians, about 90%. The t interval
widens with few values instead, as it must (tests/report/test_interval_coverage.py checks that
each covers at least 95% in simulation).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from workloads.results.tdist import t_quantile

#: Confidence of every interval here.
CONFIDENCE = 0.95


def band_agreement(lo: float, hi: float, band: float) -> str:
    """agree when the whole interval lies within [1/band, band], disagree when it lies wholly
    outside, undecided when it straddles an edge."""
    if lo >= 1 / band and hi <= band:
        return "agree"
    if hi < 1 / band or lo > band:
        return "disagree"
    return "undecided"


def _logs(values: Sequence[float]) -> list[float]:
    floats = [float(v) for v in values]
    if not floats or min(floats) <= 0:
        raise ValueError(f"a log-ratio interval needs positive ratios, got {floats}")
    return [math.log(v) for v in floats]


def _moments(logs: list[float]) -> tuple[float, float]:
    """Mean and sample variance (0 for one value)."""
    mean = math.fsum(logs) / len(logs)
    if len(logs) < 2:
        return mean, 0.0
    return mean, math.fsum((x - mean) ** 2 for x in logs) / (len(logs) - 1)


def geometric_mean(values: Sequence[float]) -> float:
    """The centre of :func:`log_interval`: exp of the mean log."""
    return math.exp(_moments(_logs(values))[0])


def log_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The t interval of the geometric mean of positive ratios (one per process or repetition):
    exp(mean log ± t(n-1) * sd / sqrt(n)). One value, or values all equal, give a point: there
    is no spread to scale by (an exact number repeats)."""
    logs = _logs(values)
    mean, var = _moments(logs)
    if len(logs) < 2 or var == 0:
        return math.exp(mean), math.exp(mean)
    half = t_quantile(0.5 + confidence / 2, len(logs) - 1) * math.sqrt(var / len(logs))
    return math.exp(mean - half), math.exp(mean + half)


def log_ratio_interval(num: Sequence[float], den: Sequence[float],
                       confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The interval of geometric_mean(num) / geometric_mean(den), the two sides independent
    (different processes, different lanes): Welch's t on the difference of mean logs, its
    degrees of freedom rounded down (Welch-Satterthwaite; rounding down widens the interval,
    never narrows it). A side of one value contributes no spread."""
    (mn, vn), (md, vd) = _moments(_logs(num)), _moments(_logs(den))
    sn, sd = vn / len(num), vd / len(den)
    centre = math.exp(mn - md)
    if sn + sd == 0:
        return centre, centre
    parts = [(s, n - 1) for s, n in ((sn, len(num)), (sd, len(den))) if s > 0 and n > 1]
    df = max(1, math.floor((sn + sd) ** 2 / sum(s**2 / k for s, k in parts)))
    half = t_quantile(0.5 + confidence / 2, df) * math.sqrt(sn + sd)
    return centre * math.exp(-half), centre * math.exp(half)
