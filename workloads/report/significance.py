"""Two-sample statistics for timing comparisons: an exact Mann-Whitney U test and a seeded
bootstrap confidence interval of the ratio of medians.

Benchmark timings are few (3-10 repetitions), skewed and full of outliers, so the diff uses a
rank test (no normality assumption) as asv does. With so few samples the normal approximation of
U is poor, so the p-value comes from the exact permutation distribution of the rank sum, counted
by dynamic programming over the pooled (mid-)ranks: exact with ties too, no scipy needed. Only
beyond :data:`EXACT_LIMIT` pooled samples does it switch to the tie-corrected normal
approximation, which is accurate there.

The bootstrap interval says how large the change is; the test says whether there is one. Both
are deterministic: the bootstrap draws from a fixed seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Up to this many pooled samples the p-value is exact (the DP table stays small).
EXACT_LIMIT = 60
#: Bootstrap resamples for the ratio-of-medians interval.
RESAMPLES = 4000
#: Fixed seed: the same data always gives the same interval.
BOOTSTRAP_SEED = 20240611


@dataclass(frozen=True)
class RankTest:
    """Result of a two-sided Mann-Whitney U test of ``a`` against ``b``."""

    u: float  # U statistic of sample a (pairs a > b, ties counting 1/2)
    p: float  # two-sided p-value
    exact: bool  # True: from the exact permutation distribution


def _midranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..N of ``values``, tied values sharing the mean of their ranks."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(values.size, dtype=np.float64)
    sorted_vals = values[order]
    i = 0
    while i < values.size:
        j = i
        while j + 1 < values.size and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _rank_sum_counts(doubled_ranks: np.ndarray, m: int) -> np.ndarray:
    """How many m-subsets of the pooled samples have each doubled rank sum (index = sum).

    Doubling makes mid-ranks (k + 0.5) integers, so ties are handled exactly. counts[k][s] is
    built item by item like a 0/1 knapsack; floats hold the binomial-sized counts with ample
    precision for p-values at EXACT_LIMIT.
    """
    total = int(doubled_ranks.sum())
    counts = np.zeros((m + 1, total + 1), dtype=np.float64)
    counts[0, 0] = 1.0
    for i, r in enumerate(int(x) for x in doubled_ranks):
        for k in range(min(i + 1, m), 0, -1):
            counts[k, r:] += counts[k - 1, : total + 1 - r]
    return counts[m]


def mann_whitney(a: np.ndarray | list[float], b: np.ndarray | list[float]) -> RankTest:
    """Two-sided Mann-Whitney U test of "a and b come from the same distribution".

    Raises ValueError for an empty sample: there is nothing to test.
    """
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    m, n = x.size, y.size
    if m == 0 or n == 0:
        raise ValueError(f"mann_whitney needs two non-empty samples, got {m} and {n}")
    pooled = np.concatenate([x, y])
    ranks = _midranks(pooled)
    rank_sum = float(ranks[:m].sum())
    u = rank_sum - m * (m + 1) / 2
    if m + n <= EXACT_LIMIT:
        doubled = np.rint(2 * ranks).astype(np.int64)
        counts = _rank_sum_counts(doubled, m)
        observed = round(2 * rank_sum)
        total = counts.sum()
        lower = counts[: observed + 1].sum() / total
        upper = counts[observed:].sum() / total
        return RankTest(u, float(min(1.0, 2 * min(lower, upper))), exact=True)
    _, tie_sizes = np.unique(pooled, return_counts=True)
    big_n = m + n
    tie_term = float((tie_sizes**3 - tie_sizes).sum()) / (big_n * (big_n - 1))
    variance = m * n / 12 * ((big_n + 1) - tie_term)
    if variance <= 0:
        return RankTest(u, 1.0, exact=False)
    z = (abs(u - m * n / 2) - 0.5) / math.sqrt(variance)
    return RankTest(u, float(min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))), exact=False)


def _differences(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-pair changes: log ratios when every value is positive (timings scale), else b - a."""
    if np.all(a > 0) and np.all(b > 0):
        return np.log(b / a)
    return b - a


def signed_rank(a: np.ndarray | list[float], b: np.ndarray | list[float]) -> RankTest:
    """Two-sided Wilcoxon signed-rank test of paired samples (a[i] and b[i] belong together).

    Interleaved rounds pair naturally: A and B of one round ran back to back, so drift of the
    machine over the session cancels in their ratio. Zero changes carry no sign and are
    dropped; ties share mid-ranks, counted exactly like :func:`mann_whitney` does.
    ``u`` holds W+, the rank sum of the pairs where b grew.
    """
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.size != y.size or x.size == 0:
        raise ValueError(f"signed_rank needs two samples of one non-zero size, got {x.size} "
                         f"and {y.size}")
    d = _differences(x, y)
    d = d[d != 0]
    n = d.size
    if n == 0:
        return RankTest(0.0, 1.0, exact=True)
    ranks = _midranks(np.abs(d))
    w_plus = float(ranks[d > 0].sum())
    if n <= EXACT_LIMIT:
        doubled = [int(r) for r in np.rint(2 * ranks)]
        total = sum(doubled)
        counts = np.zeros(total + 1, dtype=np.float64)
        counts[0] = 1.0
        for r in doubled:
            shifted = np.zeros_like(counts)
            shifted[r:] = counts[: total + 1 - r]
            counts = counts + shifted
        observed = round(2 * w_plus)
        lower = counts[: observed + 1].sum() / counts.sum()
        upper = counts[observed:].sum() / counts.sum()
        return RankTest(w_plus, float(min(1.0, 2 * min(lower, upper))), exact=True)
    _, tie_sizes = np.unique(np.abs(d), return_counts=True)
    variance = n * (n + 1) * (2 * n + 1) / 24 - float((tie_sizes**3 - tie_sizes).sum()) / 48
    z = (abs(w_plus - n * (n + 1) / 4) - 0.5) / math.sqrt(variance)
    return RankTest(w_plus, float(min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))), exact=False)


def smallest_paired_p(n: int) -> float:
    """The smallest two-sided p-value of the signed-rank test with n pairs: 2 / 2**n."""
    return min(1.0, 2 / 2**n)


def paired_ratio_ci(
    a: np.ndarray | list[float],
    b: np.ndarray | list[float],
    level: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the median per-pair ratio b[i] / a[i] (pairs resampled).

    None when a value of a is not positive (no ratio) or the samples do not pair up.
    """
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.size == 0 or x.size != y.size or np.any(x <= 0) or not 0 < level < 1:
        return None
    ratios = y / x
    rng = np.random.default_rng(seed)
    medians = np.median(ratios[rng.integers(0, ratios.size, (resamples, ratios.size))], axis=1)
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(medians, [tail, 100 - tail])
    return float(lo), float(hi)


def smallest_p(m: int, n: int) -> float:
    """The smallest two-sided p-value the exact test can give for sample sizes m and n.

    With 3 + 3 samples it is 0.1: no data at all can reach p < 0.05, which the diff says
    instead of pretending a test was possible.
    """
    return min(1.0, 2 / math.comb(m + n, m))


def ratio_of_medians_ci(
    a: np.ndarray | list[float],
    b: np.ndarray | list[float],
    level: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of median(b) / median(a); None when a's median can be 0.

    Each side is resampled on its own (the runs are independent samples). The interval is
    descriptive (how big is the change); the verdict comes from :func:`mann_whitney`.
    """
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.size == 0 or y.size == 0 or not 0 < level < 1:
        return None
    rng = np.random.default_rng(seed)
    med_a = np.median(x[rng.integers(0, x.size, (resamples, x.size))], axis=1)
    med_b = np.median(y[rng.integers(0, y.size, (resamples, y.size))], axis=1)
    if np.any(med_a <= 0):
        return None
    ratios = med_b / med_a
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(ratios, [tail, 100 - tail])
    return float(lo), float(hi)
