"""The order jobs run in: repetition by repetition, rotated, so no strategy always runs first
on a fresh JVM (a Flink lane's JIT speeds up over its first jobs: workloads/run/runner.py)."""

from __future__ import annotations

from workloads.run.runner import job_order


def test_every_repetition_runs_every_scenario_once_before_the_next_repetition() -> None:
    order = job_order(["a", "b", "c"], 3)
    assert [rep for rep, _ in order] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    for rep in range(3):
        assert sorted(s for r, s in order if r == rep) == ["a", "b", "c"]


def test_the_first_scenario_of_each_repetition_rotates() -> None:
    order = job_order(["none", "full"], 3)
    assert order == [(0, "none"), (0, "full"), (1, "full"), (1, "none"), (2, "none"),
                     (2, "full")]
    firsts = [order[i][1] for i in range(0, len(order), 2)]
    assert firsts == ["none", "full", "none"]


def test_one_scenario_and_no_scenarios() -> None:
    assert job_order(["x"], 2) == [(0, "x"), (1, "x")]
    assert job_order([], 3) == []
