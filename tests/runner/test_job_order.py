"""The order jobs run in: rounds, each every scenario once, each backend's strategies back to
back in a seeded shuffled order, after one warm-up round of the lanes whose kept JVM speeds up
over its first jobs (workloads/run/runner.py)."""

from __future__ import annotations

from collections import Counter

from workloads.run.plan import Scenario
from workloads.run.runner import WARMUP_ROUND, job_order, keeps_state, round_order

STRATEGIES = ("none", "full_snapshot", "incremental(5, false)", "timer")
MATRIX = [Scenario(b, s) for b in ("heap", "rocksdb", "flink-heap") for s in STRATEGIES]


def test_every_round_runs_every_scenario_once_before_the_next_round() -> None:
    order = job_order(MATRIX, 4, seed=42, warm_up=False)
    assert [r for r, _ in order] == [r for r in range(4) for _ in MATRIX]
    for r in range(4):
        assert Counter(s for rr, s in order if rr == r) == Counter(MATRIX)


def test_a_backends_strategies_run_back_to_back_in_every_round() -> None:
    for r in range(6):
        backends = [s.backend for s in round_order(MATRIX, 42, r)]
        runs = [b for i, b in enumerate(backends) if i == 0 or backends[i - 1] != b]
        assert sorted(runs) == ["flink-heap", "heap", "rocksdb"], backends  # one block each


def test_the_order_is_shuffled_per_round_and_the_same_for_the_same_seed() -> None:
    orders = [tuple(round_order(MATRIX, 42, r)) for r in range(8)]
    assert orders == [tuple(round_order(MATRIX, 42, r)) for r in range(8)]  # seeded
    assert len(set(orders)) == 8  # 3! * 4!^3 orders: eight rounds all differ
    firsts = {o[0].strategy for o in orders} | {o[4].strategy for o in orders}
    assert len(firsts) >= 3  # no strategy holds the first place of a block every round
    assert [tuple(round_order(MATRIX, 7, r)) for r in range(8)] != orders  # the seed counts


def test_one_warm_up_round_first_for_the_lanes_that_keep_a_jvm_only() -> None:
    order = job_order(MATRIX, 2, seed=42)
    warm = [s for r, s in order if r == WARMUP_ROUND]
    assert order[:len(warm)] == [(WARMUP_ROUND, s) for s in warm]  # before any measured job
    assert Counter(warm) == Counter(s for s in MATRIX if s.backend == "flink-heap")
    assert keeps_state("flink-rocksdb") and not keeps_state("heap")
    assert not keeps_state("rocksdb") and not keeps_state("flink-sql")
    assert [r for r, _ in order[len(warm):]] == [0] * 12 + [1] * 12
    # statebench's own backends alone: nothing to warm
    own = [s for s in MATRIX if not s.backend.startswith("flink")]
    assert all(r != WARMUP_ROUND for r, _ in job_order(own, 2, seed=42))


def test_one_scenario_and_no_scenarios() -> None:
    x = Scenario("heap", "none")
    assert job_order([x], 2, seed=1) == [(0, x), (1, x)]
    assert job_order([], 3, seed=1) == []
