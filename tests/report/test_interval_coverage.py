"""Every interval statebench labels 95% covers the true value at least 95% of the time
(issue 29 item 4c), in seeded simulations: the decision's and ``ab``'s paired interval, the
diff's unpaired one, the per-op suite's ratio intervals and the band verdict's (per-op and
fidelity). Each check allows the simulation's own sampling error (2.58 standard errors of a
binomial share at 95%); the old intervals (a bootstrap of a median of three: its minimum and
maximum) are measured by the same check and fail it, so it can fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench import perop_stats as st
from workloads.report.fidelity import factor_interval
from workloads.report.metrics import TIMED, MetricClass
from workloads.report.significance import mean_ratio_ci
from workloads.report.verdict import compare_scenarios
from workloads.results.band import log_ratio_interval

TRUE = 1.15
LEVEL = 0.95


def floor(draws: int) -> float:
    """The lowest share a 95% interval may show over ``draws`` simulated samples."""
    return LEVEL - 2.58 * math.sqrt(LEVEL * (1 - LEVEL) / draws)


def covered(intervals: list[tuple[float, float]], truth: float) -> float:
    return float(np.mean([lo <= truth <= hi for lo, hi in intervals]))


@pytest.mark.parametrize("rounds", [3, 6, 8])
@pytest.mark.parametrize("tails", ["normal", "heavy"])
def test_the_paired_interval_covers_the_true_ratio(rounds: int, tails: str) -> None:
    """Per-round log-ratios: a machine's multiplicative noise (normal logs), and a heavier
    tail (Student's t with 3 degrees of freedom: now and then a round far off)."""
    draws = 6000
    rng = np.random.default_rng(rounds)
    noise = (rng.normal(0, 0.08, (draws, rounds)) if tails == "normal"
             else 0.05 * rng.standard_t(3, (draws, rounds)))
    logs = math.log(TRUE) + noise
    share = covered([mean_ratio_ci(d, LEVEL) for d in logs], TRUE)  # type: ignore[misc]
    assert share >= floor(draws), share


def test_the_decision_shows_the_paired_interval_and_the_diff_the_welch_one() -> None:
    """The intervals checked here are the ones the decision table and the diff print."""
    rng = np.random.default_rng(1)
    a = 1e5 * np.exp(rng.normal(0, 0.3, 6))
    b = a * TRUE * np.exp(rng.normal(0, 0.05, 6))
    klass = MetricClass(TIMED, "timed")
    paired, unpaired = compare_scenarios([("records_per_s", a, b, klass)] * 2,
                                         paired=[True, False])
    assert paired.ci == pytest.approx(mean_ratio_ci(np.log(b / a), LEVEL))
    assert unpaired.ci == pytest.approx(log_ratio_interval(b, a, LEVEL))
    assert "95% CI" in paired.note and "6 paired rounds" in paired.note


@pytest.mark.parametrize("n", [3, 6])
def test_the_unpaired_interval_covers_the_true_ratio(n: int) -> None:
    """Two runs' repetitions, each side's spread its own (Welch)."""
    draws = 6000
    rng = np.random.default_rng(10 + n)
    a = np.exp(rng.normal(0, 0.25, (draws, n)))
    b = TRUE * np.exp(rng.normal(0, 0.08, (draws, n)))
    share = covered([log_ratio_interval(y, x, LEVEL) for x, y in zip(a, b)], TRUE)
    assert share >= floor(draws), share


def _processes(rng: np.random.Generator, ratio: float, spread: float, processes: int = 3
               ) -> tuple[list[list[float]], list[list[float]]]:
    """One process's on/off rates: a level the process drew, shared by both modes, and a
    per-process ratio around ``ratio`` (log-normal, sd ``spread``); two values each."""
    on, off = [], []
    for _ in range(processes):
        level = 1e6 * math.exp(rng.normal(0, 0.3))
        r = ratio * math.exp(rng.normal(0, spread))
        off.append([level, level])
        on.append([level * r, level * r])
    return on, off


def test_the_per_op_ratio_interval_covers_and_the_old_one_did_not() -> None:
    draws = 6000
    rng = np.random.default_rng(7)
    honest, old = [], []
    for _ in range(draws):
        on, off = _processes(rng, 0.4, 0.1)
        r = st.process_ratio(on, off)
        honest.append((r.ci_low, r.ci_high))
        ratios = st.process_ratios(on, off)
        old.append((min(ratios), max(ratios)))  # what the bootstrap of a median of 3 gave
    assert covered(honest, 0.4) >= floor(draws)
    assert covered(old, 0.4) < floor(draws)  # about 75%: the check can fail


def test_the_band_verdicts_interval_covers_the_true_factor() -> None:
    """statebench's relative cost over Flink's: two sides of three processes each, their
    spreads unequal (Welch's t, degrees of freedom rounded down)."""
    draws = 6000
    rng = np.random.default_rng(8)
    truth = 0.4 / 0.8
    shares = []
    for _ in range(draws):
        num_on, num_off = _processes(rng, 0.4, 0.05)
        den_on, den_off = _processes(rng, 0.8, 0.2)
        r = st.ratio_of_processes(num_on, num_off, den_on, den_off, 1.5)
        shares.append((r.ci_low, r.ci_high))
    assert covered(shares, truth) >= floor(draws)


@pytest.mark.parametrize("reps", [3, 6])
def test_the_fidelity_factor_interval_covers_the_true_factor(reps: int) -> None:
    draws = 6000
    rng = np.random.default_rng(20 + reps)
    mine = 0.9 * np.exp(rng.normal(0, 0.1, (draws, reps)))
    theirs = 1.2 * np.exp(rng.normal(0, 0.2, (draws, reps)))
    share = covered([factor_interval(m, t) for m, t in zip(mine, theirs)], 0.9 / 1.2)
    assert share >= floor(draws), share
