"""What a regression check concludes from its paired measurements: one estimate per benchmark.

The unit of replication is the pair of processes, not the trial. Inside one pair of worker
processes (one per revision) the interleaved trials average their noise away quickly, but two
processes of identical code still differ by a few percent on the fastest operations (memory
layout, which pages back the fixture, which process started first). So each pair gives one
number, the median of its trials' log-ratios (B over A), and the interval, the test and the
smallest detectable change are computed over the pairs (Student's t with pairs - 1 degrees of
freedom): a process effect the check cannot remove is counted, not hidden.

A benchmark is called *slower* only when three things hold: its q-value over the whole suite
(Benjamini-Hochberg) is at most alpha, its ratio is at least ``1 + min_effect``, and so the
interval lies above 1. "No change" always says the smallest slowdown the check could have
seen (its minimal detectable effect at 80% power, from the measured spread between pairs).
Exact figures (counts under a logical clock) are compared exactly: any change is a change.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from workloads.report.verdict import adjusted
from workloads.results.tdist import t_cdf, t_quantile

SLOWER = "slower"
FASTER = "faster"
SAME = "no change"
UNDECIDED = "too noisy"
#: The power at which the minimal detectable effect is quoted.
POWER = 0.8


@dataclass
class Estimate:
    """One timed benchmark's verdict: B's cost over A's."""

    name: str
    family: str  # state, raw or scenario: the part of the suite it belongs to
    pairs: list[float]  # per pair of processes: exp(median of its trials' log-ratios)
    trials: int  # trials per pair
    ratio: float = math.nan  # geometric mean over pairs
    lo: float = math.nan  # 95% interval of the ratio (t over pairs)
    hi: float = math.nan
    p: float = 1.0  # two-sided one-sample t test of the pairs' log-ratios against 0
    q: float = 1.0  # p adjusted over the suite (Benjamini-Hochberg)
    mde: float = math.nan  # the smallest slowdown found with 80% power (0.05 = 5%)
    a_ns: float = math.nan  # A's median cost per call, nanoseconds
    b_ns: float = math.nan
    verdict: str = SAME

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ExactChange:
    """An exact figure (logical clock) of one scenario that is not the same on both sides."""

    name: str
    metric: str
    a: list[float]  # distinct values seen on A's side (one when the figure is exact)
    b: list[float]
    verdict: str = field(default="changed")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def family_of(name: str) -> str:
    return name.split("/", 1)[0]


def pair_log_ratio(a_ns: Sequence[float], b_ns: Sequence[float]) -> float:
    """One pair of processes' estimate: the median of its trials' log(B / A)."""
    return statistics.median(math.log(b / a) for a, b in zip(a_ns, b_ns, strict=True))


def estimate(name: str, per_pair: Sequence[tuple[Sequence[float], Sequence[float]]],
             level: float = 0.95) -> Estimate:
    """The ratio, interval and p-value of one benchmark over its pairs of processes."""
    logs = [pair_log_ratio(a, b) for a, b in per_pair]
    trials = min(len(a) for a, _ in per_pair)
    est = Estimate(name, family_of(name), [math.exp(x) for x in logs], trials,
                   a_ns=statistics.median(x for a, _ in per_pair for x in a),
                   b_ns=statistics.median(x for _, b in per_pair for x in b))
    k = len(logs)
    mean = statistics.fmean(logs)
    est.ratio = math.exp(mean)
    if k < 2:
        return est
    se = statistics.stdev(logs) / math.sqrt(k)
    if se == 0.0:
        se = 1e-12  # identical pairs: any shift is significant, none is no change
    tq = t_quantile(0.5 + level / 2, k - 1)
    est.lo, est.hi = math.exp(mean - tq * se), math.exp(mean + tq * se)
    est.p = min(1.0, 2 * (1 - t_cdf(abs(mean) / se, k - 1)))
    est.mde = se  # the spread, turned into an effect by decide() once the suite's size is known
    return est


def decide(estimates: list[Estimate], alpha: float, min_effect: float) -> list[Estimate]:
    """q-values over the suite, each benchmark's verdict and minimal detectable effect.

    The MDE is quoted at the per-test level Benjamini-Hochberg applies to a single real change
    among ``m`` benchmarks (alpha / m): a change smaller than it is likely to go unseen.
    """
    m = len(estimates)
    for est, q in zip(estimates, adjusted([e.p for e in estimates]), strict=True):
        est.q = q
        k = len(est.pairs)
        if k < 2:
            est.verdict, est.mde = UNDECIDED, math.inf
            continue
        se = est.mde
        z = t_quantile(1 - alpha / (2 * m), k - 1) + t_quantile(POWER, k - 1)
        est.mde = max(min_effect, math.exp(z * se) - 1)
        if q <= alpha and est.ratio >= 1 + min_effect:
            est.verdict = SLOWER
        elif q <= alpha and est.ratio <= 1 / (1 + min_effect):
            est.verdict = FASTER
        else:
            est.verdict = SAME
    return estimates


def exact_changes(a: Mapping[str, Sequence[Mapping[str, float]]],
                  b: Mapping[str, Sequence[Mapping[str, float]]]) -> list[ExactChange]:
    """Every exact figure of every scenario whose values differ between A and B, or within one
    side (a figure that moves between runs of one revision is not exact: named too)."""
    out = []
    for name in sorted(set(a) | set(b)):
        runs_a, runs_b = a.get(name, ()), b.get(name, ())
        for metric in sorted({m for run in (*runs_a, *runs_b) for m in run}):
            va, vb = _values(runs_a, metric), _values(runs_b, metric)
            if va != vb or len(va) > 1:
                out.append(ExactChange(name, metric, va, vb,
                                       "changed" if va != vb else "not exact"))
    return out


def _values(runs: Sequence[Mapping[str, float]], metric: str) -> list[float]:
    """The distinct values of ``metric`` over runs; NaN stands for a run without it."""
    return sorted({float(run[metric]) if metric in run else math.nan for run in runs},
                  key=lambda v: (math.isnan(v), 0.0 if math.isnan(v) else v))
