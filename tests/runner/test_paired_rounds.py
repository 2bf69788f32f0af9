"""A comparison runs in rounds (workloads/run/runner.py): the jobs ran in the order run.json
records, repetition r of every row is round r, and the warm-up round's rows are not kept."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from workloads.lanes.flink_task import close_idle_workers
from workloads.run.compare import comparison_configs, run_comparison, write_comparison
from workloads.run.runner import WARMUP_ROUND, round_order
from workloads.spec import load_spec


@pytest.mark.slow
def test_jobs_run_in_the_recorded_order_and_rows_carry_the_round(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATEBENCH_FLINK_WARMUP_EVENTS", "0")  # no speed is measured here
    spec = load_spec("ycsb-a").with_overrides(events=4_000)
    configs = comparison_configs([spec], backends=("heap", "flink-heap"),
                                 strategies=("none", "full_snapshot", "timer"), repetitions=3)
    ran: list[tuple[int, str]] = []
    try:
        outcomes = run_comparison(configs, in_process=True,
                                  on_job=lambda s, r: ran.append((r, f"{s.backend}/{s.strategy}")))
    finally:
        close_idle_workers()
    run_dir = write_comparison(outcomes, tmp_path)
    meta = json.loads((run_dir / "run.json").read_text())
    rounds = meta["config"]["workloads"]["ycsb-a"]["rounds"]
    assert meta["config"]["rounds"] == rounds["count"] == 3 and meta["config"]["warm_up"]

    # the warm-up first (flink-heap only: timer is not applicable there), then the rounds,
    # each in the order recorded, which is the seeded shuffle of the plan
    warm = [label for r, label in ran if r == WARMUP_ROUND]
    assert rounds["warm_up"] and rounds["warm_up_order"] == warm
    assert sorted(warm) == ["flink-heap/full_snapshot", "flink-heap/none"]
    assert ran[:len(warm)] == [(WARMUP_ROUND, label) for label in warm]
    measured = ran[len(warm):]
    assert [[label for r, label in measured if r == k] for k in range(3)] == rounds["orders"]
    assert [r for r, _ in measured] == sorted(r for r, _ in measured)  # round after round
    from workloads.run.plan import plan_scenarios

    runnable, _ = plan_scenarios(configs[0])
    for k in range(3):
        assert rounds["orders"][k] == [f"{s.backend}/{s.strategy}"
                                       for s in round_order(runnable, spec.seed, k)]
    assert set(rounds["warm_up_job_seconds"]) == {f"ycsb-a/{label}" for label in warm}

    # every row's repetition is its round; no row of the warm-up is kept
    rows = pq.read_table(run_dir / "rows.parquet").to_pylist()
    reps = {(r["backend"], r["strategy"], r["step"]) for r in rows
            if r["metric"] == "records_per_s" and r["task"] == -1}
    assert reps == {(*label.split("/"), k) for k in range(3) for label in rounds["orders"][k]}
    seconds = meta["config"]["workloads"]["ycsb-a"]["job_seconds"]
    assert all(len(v) == 3 for v in seconds.values())  # measured jobs only
