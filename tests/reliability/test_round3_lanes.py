"""Issue 31, category 5 (nonsense accepted), the lanes' rules:

* One not-applicable rule for every lane: flink-sql refused a whole run or compare when one
  spec was not its kind (key-value traffic, a kind without a query), while ForSt in the same
  place was listed not applicable and the run went on. Now flink-sql's scenarios are listed
  with the reason too; a run in which no lane can run the spec is still refused.
* A TTL sweep ran "beside a real Flink SQL job" in the README, but every flink-sql scenario
  of a sweep was not applicable (its cleanup is ``timer``). A TTL sweep's scenario is the TTL
  itself, which is what SQL sets (``table.exec.state.ttl``): the SQL lanes run it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workloads.run.plan import PlanError, RunConfig, operator_config, plan_scenarios
from workloads.run.sweep import parse_sweep
from workloads.spec import load_spec

pytestmark = pytest.mark.usefixtures("flink_sql_job")


def test_flink_sql_lists_a_spec_it_cannot_run_as_not_applicable_like_any_lane() -> None:
    cfg = RunConfig(load_spec("ycsb-a"), backends=("heap", "flink-sql"))
    runnable, skipped = plan_scenarios(cfg)
    assert {s.backend for s in runnable} == {"heap"}
    sql = [n for n in skipped if n.backend == "flink-sql"]
    assert len(sql) == len(cfg.strategy_labels)
    assert all("raw key-value traffic" in n.reason for n in sql)
    runnable, _ = plan_scenarios(RunConfig(load_spec("nexmark-q5-sliding"),
                                           backends=("heap", "flink-sql-heap")))
    assert "flink-sql-heap" in {s.backend for s in runnable}  # every kind has its query
    with pytest.raises(PlanError, match="raw key-value traffic"):  # nothing at all would run
        RunConfig(load_spec("ycsb-a"), backends=("flink-sql",))


def test_a_ttl_sweep_runs_on_the_sql_lanes_at_each_ttl() -> None:
    from workloads.lanes.flink_sql_job import sql_job_config
    from workloads.run.plan import DataFacts

    sweep = parse_sweep("ttl(ms=500,2000)")
    cfg = RunConfig(load_spec("nexmark-q20-join"), backends=("heap", "flink-sql",
                                                             "flink-sql-heap"),
                    strategies=("none", *sweep.labels), sweep=sweep)
    runnable, _ = plan_scenarios(cfg)
    for lane in ("flink-sql", "flink-sql-heap"):
        assert [s.strategy for s in runnable if s.backend == lane] == list(sweep.labels)
    facts = DataFacts(((0, 10),), 0, 1_000)
    scenario = next(s for s in runnable if s.backend == "flink-sql")
    op_cfg = operator_config(cfg, scenario, 0, facts)
    job = sql_job_config(cfg, op_cfg, Path("/nonexistent/events.csv"), 10, Path("/tmp/x"))
    assert job.ttl_ms == 500 and job.backend == "rocksdb"
