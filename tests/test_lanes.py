"""The lane registry (issue 30): every backend a run accepts is one lane object of
``workloads.lanes``, with a name, an engine, a way of running (tasks fed by the engine, or whole
jobs) and the questions the planner asks; a lane module's lanes are all registered."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import workloads.lanes as lanes_package
from workloads.lanes import ENGINES, LANES, RUN_BACKENDS, Lane, lane
from workloads.run.plan import PlanError, RunConfig, plan_scenarios
from workloads.spec import load_spec


def _lane_modules() -> list[str]:
    return [f"workloads.lanes.{m.name}" for m in pkgutil.iter_modules(lanes_package.__path__)]


def test_every_backend_is_one_registered_lane_of_a_known_engine() -> None:
    assert tuple(LANES) == RUN_BACKENDS and len(set(RUN_BACKENDS)) == len(RUN_BACKENDS)
    assert {"heap", "rocksdb", "flink-heap", "flink-rocksdb", "flink-sql"} <= set(LANES)
    for name, found in LANES.items():
        assert isinstance(found, Lane) and found.name == name and found.engine in ENGINES
        assert found.summary, name
        assert found.__class__.__module__.startswith("workloads.lanes."), name
        way = "task_operator" if found.runs_tasks else "run_job"
        assert getattr(type(found), way) is not getattr(Lane, way), (name, way)


def test_every_lane_class_of_the_package_is_registered() -> None:
    """Adding a lane is adding a module: a Lane subclass nobody registered would be a lane the
    planner never asks."""
    registered = {type(found) for found in LANES.values()}
    defined = set()
    for module in _lane_modules():
        for _, cls in inspect.getmembers(importlib.import_module(module), inspect.isclass):
            if issubclass(cls, Lane) and cls is not Lane and cls.__module__ == module:
                defined.add(cls)
    assert defined and defined <= registered, defined - registered


def test_an_unknown_backend_is_one_line_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown backend 'nope'; expected one of heap, rocksdb"):
        lane("nope")
    with pytest.raises(PlanError, match="unknown backend 'nope'"):
        RunConfig(load_spec("ycsb-a"), backends=("heap", "nope"))


def test_the_planner_takes_each_lanes_own_reason() -> None:
    cfg = RunConfig(load_spec("ycsb-a"), backends=("heap", "rocksdb"), run_id="t",
                    strategies=("none", "incremental(5, false)"))
    runnable, skipped = plan_scenarios(cfg)
    assert [(s.backend, s.strategy) for s in runnable] == [
        ("heap", "none"), ("heap", "incremental(5, false)"), ("rocksdb", "none")]
    (only,) = skipped
    assert only.reason == LANES["rocksdb"].strategy_reason(cfg, "incremental(5, false)")
    assert "RocksDB has none" in only.reason


def test_a_run_naming_no_strategy_adds_each_lanes_own() -> None:
    """Spark's lanes expire state in Spark's terms: a run that names no strategy gets the
    spec's and theirs, and each lane says which of the others it cannot run, in one line."""
    spec = load_spec("sessions-churn")
    cfg = RunConfig(spec, backends=("heap", "spark-tws"), run_id="t")
    labels = cfg.strategy_labels
    assert labels[:len(spec.state.strategies)] == spec.state.strategies
    assert {"spark_no_ttl", "spark_ttl", "spark_timer", "spark_event_timer"} <= set(labels)
    runnable, skipped = plan_scenarios(cfg)
    assert {s.strategy for s in runnable if s.backend == "spark-tws"} == {
        "spark_no_ttl", "spark_ttl", "spark_timer", "spark_event_timer"}  # an EventTime spec
    reasons = {(n.backend, n.strategy): n.reason for n in skipped}
    assert "Spark's own state expiry" in reasons[("heap", "spark_ttl")]
    assert reasons[("spark-tws", "none")] and "\n" not in reasons[("spark-tws", "none")]
    # a spec without a TTL keeps only what runs without one
    no_ttl = RunConfig(spec.with_overrides(ttl_ms=None, strategies=["none"]),
                       backends=("heap", "spark-tws"),
                       run_id="t")
    assert "spark_ttl" not in no_ttl.strategy_labels
    assert "spark_no_ttl" in no_ttl.strategy_labels


def test_flink_sql_brings_the_cleanup_its_ttl_runs() -> None:
    """A SQL user sets table.exec.state.ttl and gets the backend's default cleanup: a run of an
    operator spec naming no strategy runs it on flink-sql, whatever the spec lists."""
    spec = load_spec("nexmark-q20-join")
    assert "compaction_filter" not in spec.state.strategies
    cfg = RunConfig(spec, backends=("rocksdb", "flink-sql"), run_id="t")
    runnable, _ = plan_scenarios(cfg)
    assert [s.strategy for s in runnable if s.backend == "flink-sql"] == ["compaction_filter"]
