"""The regression check's statistics: pairs of processes as replicates, both ways proven.

Simulated checks stand in for the machine here (the measured proof is
bench/regress_experiment.py): pairs whose trials carry noise and a per-process offset, as the
worker pairs show. A check of identical sides must flag nothing but at a rate alpha allows, a
planted slowdown well above the minimal detectable effect must be flagged, and one pair that is
off must not be taken for a regression.
"""

from __future__ import annotations

import math
import random

import pytest

from workloads.regress import stats


def _pairs(rng: random.Random, shift: float, pairs: int = 16, trials: int = 4,
           process_sd: float = 0.02, trial_sd: float = 0.05) -> list[tuple[list[float],
                                                                            list[float]]]:
    out = []
    for _ in range(pairs):
        pa, pb = rng.gauss(0, process_sd), rng.gauss(0, process_sd)
        a = [1000 * math.exp(pa + rng.gauss(0, trial_sd)) for _ in range(trials)]
        b = [1000 * (1 + shift) * math.exp(pb + rng.gauss(0, trial_sd)) for _ in range(trials)]
        out.append((a, b))
    return out


def _check(rng: random.Random, shifts: dict[str, float]) -> list[stats.Estimate]:
    return stats.decide([stats.estimate(name, _pairs(rng, shift))
                         for name, shift in shifts.items()], alpha=0.05, min_effect=0.03)


def test_identical_sides_flag_at_most_at_rate_alpha_over_a_whole_suite() -> None:
    rng = random.Random(7)
    checks = 200
    flagged = sum(
        any(e.verdict != stats.SAME for e in _check(rng, {f"state/b{i}": 0.0 for i in range(40)}))
        for _ in range(checks))
    assert flagged / checks <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / checks)


def test_a_planted_slowdown_is_named_and_its_neighbours_are_not() -> None:
    rng = random.Random(11)
    shifts = {f"state/heap/null{i}": 0.0 for i in range(30)}
    shifts["state/heap/planted"] = 0.10
    found = 0
    for _ in range(20):
        estimates = {e.name: e for e in _check(rng, shifts)}
        planted = estimates["state/heap/planted"]
        found += planted.verdict == stats.SLOWER
        assert planted.lo > 1.0 or planted.verdict != stats.SLOWER
        assert all(e.verdict == stats.SAME for n, e in estimates.items() if n != planted.name)
    assert found >= 18


def test_a_slowdown_under_the_threshold_is_not_a_regression() -> None:
    rng = random.Random(3)
    est = _check(rng, {"state/x": 0.015, **{f"state/n{i}": 0.0 for i in range(5)}})[0]
    assert est.verdict == stats.SAME  # significant or not, 1.5% is under the 3% threshold


def test_one_pair_that_is_off_widens_the_interval_instead_of_making_a_change() -> None:
    rng = random.Random(5)
    pairs = _pairs(rng, 0.0, process_sd=0.0)
    a, b = pairs[3]
    pairs[3] = (a, [x * 1.35 for x in b])  # one process of B's was slow on everything
    est = stats.decide([stats.estimate("state/x", pairs)], alpha=0.05, min_effect=0.03)[0]
    assert est.verdict == stats.SAME
    assert est.hi > 1.02


def test_every_no_change_says_the_smallest_change_it_could_have_seen() -> None:
    rng = random.Random(2)
    quiet = _check(rng, {"state/q": 0.0})[0]
    noisy = stats.decide([stats.estimate("state/n", _pairs(rng, 0.0, process_sd=0.2))],
                         alpha=0.05, min_effect=0.03)[0]
    assert quiet.verdict == noisy.verdict == stats.SAME
    assert 0.03 <= quiet.mde < noisy.mde
    assert math.isfinite(noisy.mde)


def test_a_single_pair_decides_nothing() -> None:
    est = stats.decide([stats.estimate("state/x", [([1.0, 1.0], [2.0, 2.0])])], 0.05, 0.03)[0]
    assert est.verdict == stats.UNDECIDED and math.isinf(est.mde)


def test_exact_figures_are_compared_exactly() -> None:
    a = {"scenario/s": [{"entries": 10.0, "bytes": 100.0}, {"entries": 10.0, "bytes": 100.0}]}
    same = {"scenario/s": [{"entries": 10.0, "bytes": 100.0}]}
    one_byte = {"scenario/s": [{"entries": 10.0, "bytes": 101.0}]}
    assert stats.exact_changes(a, same) == []
    (change,) = stats.exact_changes(a, one_byte)
    assert (change.metric, change.a, change.b, change.verdict) == ("bytes", [100.0], [101.0],
                                                                   "changed")
    moving = {"scenario/s": [{"entries": 10.0}, {"entries": 11.0}]}
    (not_exact,) = stats.exact_changes(moving, moving)
    assert not_exact.verdict == "not exact"
    (missing,) = stats.exact_changes(same, {"scenario/s": [{"bytes": 100.0}]})
    assert missing.metric == "entries" and math.isnan(missing.b[0])


@pytest.mark.parametrize("shift", [-0.2, 0.2])
def test_the_direction_is_named(shift: float) -> None:
    rng = random.Random(9)
    est = _check(rng, {"state/x": shift})[0]
    assert est.verdict == (stats.SLOWER if shift > 0 else stats.FASTER)
    assert (est.ratio > 1) == (shift > 0)
