"""Statistics of the per-op suite: medians with their spread, pyperf's "unstable" rule, and the
agree / disagree / undecided verdict of a ratio against a band.

Values come in groups: one group per fork (fresh JVM) or worker process (fresh interpreter), as
JMH and pyperf take them. Iterations inside one process share its JIT decisions, memory layout
and whatever else the process drew, so they are not independent: a process is the unit.

* A rate's interval (:func:`summarise`) resamples groups first and values inside each drawn
  group second (a hierarchical bootstrap), seeded. With three processes it spans little more
  than what the processes showed, so it is the spread seen (``ci_low``/``ci_high``), not a
  guaranteed 95%: docs/performance.md labels it so.
* A ratio's interval (:func:`process_ratio`, :func:`ratio_of_processes`, which the verdicts use)
  is a t interval on the per-process log-ratios (``workloads.results.band``), which covers the
  true ratio 95% of the time with three processes too (it widens instead of pretending); the
  ratio shown is their geometric mean, the interval's centre.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from workloads.results.band import band_agreement, geometric_mean, log_interval, log_ratio_interval

#: Confidence of every interval here.
CONFIDENCE = 0.95
#: Bootstrap replicates: the 2.5th/97.5th percentiles of 2,000 replicates move by well under 1%.
REPLICATES = 2_000
SEED = 15
#: pyperf's rules (pyperf/_cli.py, format_checks): a stdev of at least 10% of the mean, a min or
#: max at least 50% away from the mean, or a raw value shorter than 1 ms make a series unstable.
UNSTABLE_STDEV = 0.10
UNSTABLE_MINMAX = 0.50
UNSTABLE_SHORTEST_S = 0.001

Groups = Sequence[Sequence[float]]


@dataclass(frozen=True)
class Summary:
    """One series of rates (ops/s): its median and interval, and pyperf's stability checks
    (made on the times per op, as pyperf makes them on timings)."""

    median: float
    ci_low: float
    ci_high: float
    mean: float
    stdev: float
    min: float
    max: float
    n: int
    groups: int
    unstable: tuple[str, ...]

    def to_json(self) -> dict:
        return {"median": self.median, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "mean": self.mean, "stdev": self.stdev, "min": self.min, "max": self.max,
                "n": self.n, "groups": self.groups, "unstable": bool(self.unstable),
                "unstable_reasons": list(self.unstable)}


def _array(groups: Groups) -> np.ndarray:
    """Groups as a (groups, values) array; ragged groups are cut to the shortest (the protocol
    gives every process the same number of values, so this only bites on a bad input)."""
    if not groups or not all(groups):
        raise ValueError("a series needs at least one group with at least one value")
    width = min(len(g) for g in groups)
    return np.array([list(g)[:width] for g in groups], dtype=float)


def bootstrap_medians(groups: Groups, replicates: int = REPLICATES,
                      rng: np.random.Generator | None = None) -> np.ndarray:
    """Medians of `replicates` hierarchical resamples: groups with replacement, then values with
    replacement inside each drawn group."""
    arr = _array(groups)
    rng = rng if rng is not None else np.random.default_rng(SEED)
    g, v = arr.shape
    gi = rng.integers(0, g, size=(replicates, g))
    vi = rng.integers(0, v, size=(replicates, g, v))
    drawn = arr[gi[:, :, None], vi]
    return np.median(drawn.reshape(replicates, g * v), axis=1)


def _interval(samples: np.ndarray) -> tuple[float, float]:
    tail = (1 - CONFIDENCE) / 2 * 100
    lo, hi = np.percentile(samples, [tail, 100 - tail])
    return float(lo), float(hi)


def unstable_reasons(times: Sequence[float], shortest_s: float | None = None) -> tuple[str, ...]:
    """pyperf's warnings for a series of times (seconds per op here; `shortest_s` is the
    shortest raw value in seconds, when known)."""
    reasons = []
    mean = statistics.fmean(times)
    if len(times) > 1 and statistics.stdev(times) >= UNSTABLE_STDEV * mean:
        reasons.append(f"stdev >= {UNSTABLE_STDEV:.0%} of the mean")
    if min(times) <= (1 - UNSTABLE_MINMAX) * mean or max(times) >= (1 + UNSTABLE_MINMAX) * mean:
        reasons.append(f"min or max >= {UNSTABLE_MINMAX:.0%} off the mean")
    if shortest_s is not None and shortest_s < UNSTABLE_SHORTEST_S:
        reasons.append("a raw value under 1 ms")
    return tuple(reasons)


def summarise(groups: Groups, shortest_s: float | None = None) -> Summary:
    arr = _array(groups)
    flat = arr.ravel().tolist()
    lo, hi = _interval(bootstrap_medians(groups))
    return Summary(
        median=float(statistics.median(flat)), ci_low=lo, ci_high=hi,
        mean=statistics.fmean(flat), stdev=statistics.stdev(flat) if len(flat) > 1 else 0.0,
        min=min(flat), max=max(flat), n=len(flat), groups=arr.shape[0],
        unstable=unstable_reasons([1 / x for x in flat], shortest_s))


@dataclass(frozen=True)
class Ratio:
    """A ratio (geometric mean of per-process ratios, or the quotient of two) with its 95% t
    interval and verdict against a band."""

    value: float
    ci_low: float
    ci_high: float
    verdict: str

    def to_json(self) -> dict:
        return {"value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "verdict": self.verdict}


def process_ratios(on: Groups, off: Groups) -> list[float]:
    """One ratio on / off per process: the mean of its `on` rates over the mean of its `off`
    rates. The i-th groups of `on` and `off` come from one process (statebench: one worker
    holds every TTL mode) or from processes that took turns (Flink: one fork per mode, as JMH
    forks per benchmark, one measured iteration each per round). Both rotate the modes' order
    each round, so over the rounds each mode has been measured in every position of a round,
    and a mean over them cancels what the position did (in the forks that held all three
    modes, Flink's heap map put's per-round ratio alternated between 0.07 and 0.17 with its
    position)."""
    if len(on) != len(off):
        raise ValueError(f"paired series need the same processes: {len(on)} against {len(off)}")
    if not all(on) or not all(off):
        raise ValueError("every process needs at least one value of each mode")
    return [statistics.fmean(a) / statistics.fmean(b) for a, b in zip(on, off)]


def process_ratio(on: Groups, off: Groups) -> Ratio:
    """The geometric mean of the per-process ratios on / off with its 95% t interval over
    processes (``band.log_interval``; no band: verdict "n/a")."""
    ratios = process_ratios(on, off)
    lo, hi = log_interval(ratios, CONFIDENCE)
    return Ratio(geometric_mean(ratios), lo, hi, "n/a")


def ratio_of_processes(num_on: Groups, num_off: Groups, den_on: Groups, den_off: Groups,
                       band: float) -> Ratio:
    """process_ratio(num_on, num_off) / process_ratio(den_on, den_off) with its 95% interval
    and verdict against `band`, e.g. statebench's relative cost of TTL over Flink's. The two
    sides come from different processes: Welch's t on the difference of their mean log-ratios
    (``band.log_ratio_interval``)."""
    num, den = process_ratios(num_on, num_off), process_ratios(den_on, den_off)
    lo, hi = log_ratio_interval(num, den, CONFIDENCE)
    return Ratio(geometric_mean(num) / geometric_mean(den), lo, hi, band_agreement(lo, hi, band))


#: The per-op table is judged by its verdicts: over back-to-back runs at least
#: this share of the cells repeat their verdict (24 of 28) and none contradicts itself.
SAME_VERDICT_SHARE = 24 / 28


def verdict_bar(cells: int) -> int:
    """How many of `cells` must repeat their verdict over back-to-back runs."""
    return math.ceil(SAME_VERDICT_SHARE * cells)


def check_runs(runs: int, most: int | None = None) -> None:
    """Refuse a count of runs no verdict can repeat over (fewer than two), or more than `most`
    (where given: what the caller can afford)."""
    allowed = f" (give 2 to {most})" if most is not None else ""
    if runs < 2:
        raise ValueError(f"a verdict repeats over at least two runs, not {runs}{allowed}")
    if most is not None and runs > most:
        raise ValueError(f"at most {most} runs, not {runs}{allowed}")


def contradicts(verdicts: Iterable[str]) -> bool:
    """Whether one cell's verdicts over several runs agree in one and disagree in another."""
    return {"agree", "disagree"} <= set(verdicts)


def relative_move(values: Sequence[float]) -> float:
    """How far apart repeated measurements of one number are: max / min - 1 (0.25 = 25%)."""
    if min(values) <= 0:
        return math.inf
    return max(values) / min(values) - 1
