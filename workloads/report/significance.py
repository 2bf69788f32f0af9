"""Two-sample statistics for timing comparisons: an exact Mann-Whitney U test (unpaired), an
exact sign-flip test and the t interval of the mean log-ratio (paired rounds), a randomization
test of a whole cell of strategies, and a seeded bootstrap range of the ratio of medians (the
fallback where a value is not positive, labelled as a range, not 95%).

Benchmark timings are few (3-10 repetitions), skewed and full of outliers, so the diff uses a
rank test (no normality assumption) as asv does. With so few samples the normal approximation of
U is poor, so the p-value comes from the exact permutation distribution of the rank sum, counted
by dynamic programming over the pooled (mid-)ranks: exact with ties too, no scipy needed. Only
beyond :data:`EXACT_LIMIT` pooled samples does it switch to the tie-corrected normal
approximation, which is accurate there.

An interval says how large the change is; the test says whether there is one. All are
deterministic: every random draw comes from a fixed seed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from workloads.results.tdist import t_quantile

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


#: Up to this many pairs the sign-flip test enumerates every sign pattern (2**16 of them).
SIGN_FLIP_EXACT = 16
#: Random sign patterns (or relabellings) drawn beyond the exact limit, seeded.
RANDOMIZATIONS = 20_000
#: Relabellings drawn by :func:`label_randomization` (its p-value is (hits + 1) / (draws + 1)).
RELABELLINGS = 999


def sign_flip(d: np.ndarray | list[float], seed: int = BOOTSTRAP_SEED) -> RankTest:
    """Two-sided sign-flip randomization test of "the per-round changes ``d`` are centred on 0"
    with the mean as statistic.

    Why this test for paired rounds: if two strategies do not differ, which of them a round's
    log-ratio favours is a coin toss whatever the round's level, so every sign pattern of ``d``
    is as likely as the observed one; counting them gives an exact p-value with no assumption
    about the noise's shape. Its statistic is the mean, the centre of :func:`mean_ratio_ci`'s
    interval, so test and interval read the same evidence. Up to :data:`SIGN_FLIP_EXACT`
    changes every pattern is counted; beyond, a seeded sample of :data:`RANDOMIZATIONS`.
    ``u`` holds the mean.
    """
    x = np.asarray(d, dtype=np.float64)
    n = x.size
    if n == 0:
        raise ValueError("sign_flip needs at least one change")
    observed = abs(float(x.mean()))
    if n <= SIGN_FLIP_EXACT:
        patterns = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
        exact = True
    else:
        rng = np.random.default_rng(seed)
        patterns = rng.choice(np.array([-1, 1]), size=(RANDOMIZATIONS, n))
        exact = False
    means = np.abs(patterns @ x) / n
    hits = int(np.sum(means >= observed * (1 - 1e-12)))
    p = hits / patterns.shape[0] if exact else (hits + 1) / (patterns.shape[0] + 1)
    return RankTest(float(x.mean()), float(min(1.0, p)), exact)


def smallest_sign_flip_p(n: int) -> float:
    """The smallest two-sided p-value of the sign-flip test with n changes: 2 / 2**n."""
    return min(1.0, 2 / 2**n)


def mean_ratio_ci(d: np.ndarray | list[float], level: float = 0.95
                  ) -> tuple[float, float] | None:
    """The t interval of the mean log-ratio, as a ratio: exp(mean ± t * sd / sqrt(n)).

    Why t and not a bootstrap: with 3-10 rounds a percentile bootstrap of a median spans at
    most the range of the values, which covers the true value far less often than its label
    says (a median of 3: about 75% for "95%"). The t interval is exact for normal log-ratios
    (a machine's multiplicative noise) and the simulation in tests/report/ checks its coverage.
    None with fewer than 2 changes (no spread to scale by).
    """
    x = np.asarray(d, dtype=np.float64)
    if x.size < 2 or not 0 < level < 1:
        return None
    half = t_quantile(0.5 + level / 2, x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    mean = float(x.mean())
    return math.exp(mean - half), math.exp(mean + half)


def label_randomization(x: np.ndarray, draws: int = RELABELLINGS,
                        seed: int = BOOTSTRAP_SEED) -> float:
    """p-value of "every strategy of a cell is alike": ``x`` holds log values, one row per
    strategy and one column per round. The statistic is the spread of the strategies' mean
    values once each round's level is taken out (the sum of their squares: a one-way
    analysis of variance's between-strategy sum within rounds); its null distribution comes
    from shuffling the strategies' labels inside every round (under the null each round's
    values are exchangeable), seeded.

    Why: the decision names its leader from the same rounds it then tests, and the largest of
    several equal strategies' means wins its paired tests more often than chance. Asking first
    whether the cell differs at all keeps the rate of a leader named among identical
    strategies at alpha. Why the spread and not the leader's lead alone: when two strategies
    tie at the top and a third trails, the leader's lead over its rounds' means is a third of
    the gap, and the shuffles reach it whenever one label misses the trailing value in every
    round (about a quarter of them at 6 rounds and 3 strategies), so a strategy many times
    slower was never put behind (``workloads.report.simulate``'s laggard model).
    """
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] < 1:
        raise ValueError(f"label_randomization needs strategies x rounds, got {arr.shape}")
    return partition_randomization(arr, [list(range(arr.shape[0]))], draws, seed)


def partition_randomization(x: np.ndarray, blocks: Sequence[Sequence[int]],
                            draws: int = RELABELLINGS, seed: int = BOOTSTRAP_SEED) -> float:
    """p-value of "inside each block, the strategies are alike" (blocks may differ from each
    other): :func:`label_randomization`'s statistic summed over the blocks, each block's labels
    shuffled inside every round on its own (exchangeable under that hypothesis), seeded. A
    block of one strategy says nothing and is skipped."""
    arr = np.asarray(x, dtype=np.float64)
    rng = np.random.default_rng(seed)
    observed = 0.0
    null = np.zeros(draws)
    for block in blocks:
        if len(block) < 2:
            continue
        sub = arr[list(block)]
        centred = sub - sub.mean(axis=0, keepdims=True)
        observed += float(np.square(centred.mean(axis=1)).sum())
        shuffled = rng.permuted(np.broadcast_to(centred, (draws, *centred.shape)), axis=1)
        null += np.square(shuffled.mean(axis=2)).sum(axis=1)
    hits = int(np.sum(null >= observed - 1e-12 * max(1.0, abs(observed))))
    return (hits + 1) / (draws + 1)


def set_partitions(items: Sequence[int]) -> Iterator[list[list[int]]]:
    """Every partition of ``items`` into non-empty blocks (Bell(n) of them)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for partition in set_partitions(rest):
        yield [[first], *partition]
        for i in range(len(partition)):
            yield [*partition[:i], [first, *partition[i]], *partition[i + 1:]]


#: Strategies of a cell up to which :func:`closed_pair_p` tests every partition (Bell(6) = 203).
CLOSED_MAX_STRATEGIES = 6


def closed_pair_p(x: np.ndarray, i: int, j: int, draws: int = RELABELLINGS,
                  seed: int = BOOTSTRAP_SEED) -> float:
    """The closed-testing p-value of "strategies i and j are alike" in a cell of log values
    (strategies x rounds): the largest p of :func:`partition_randomization` over every
    partition of the cell's strategies that puts i and j in one block.

    Why closed testing: every intersection of the cell's "these two are alike" hypotheses is
    "inside each block of some partition, all are alike", so rejecting i~j only where every
    such partition is rejected at alpha keeps the chance of naming any false difference in
    the cell at alpha (Marcus, Peritz and Gabriel's closure), with no Bonferroni or
    Benjamini-Hochberg factor: at 6 rounds the exact paired test's smallest p is 2/64, which
    any such factor over 2 or more comparisons lifts past 0.05, so a strategy many times
    slower than two tied leaders could never be put behind them."""
    return closed_pair_ps(x, [(i, j)], draws, seed)[0]


def closed_pair_ps(x: np.ndarray, pairs: Sequence[tuple[int, int]],
                   draws: int = RELABELLINGS, seed: int = BOOTSTRAP_SEED) -> list[float]:
    """:func:`closed_pair_p` of each pair of one cell, each partition tested once for all the
    pairs it joins (a cell's pairs share most of their partitions: the whole cell's, among
    others)."""
    k = np.asarray(x).shape[0]
    if k > CLOSED_MAX_STRATEGIES:
        raise ValueError(f"closed testing over {k} strategies: at most {CLOSED_MAX_STRATEGIES}")
    worst = [0.0] * len(pairs)
    for partition in set_partitions(list(range(k))):
        joined = [n for n, (i, j) in enumerate(pairs)
                  if any(i in block and j in block for block in partition)]
        if joined:
            p = partition_randomization(x, partition, draws, seed)
            for n in joined:
                worst[n] = max(worst[n], p)
    return worst
