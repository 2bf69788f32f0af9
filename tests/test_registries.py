"""One registry per axis: a cleanup strategy and a storage backend are each one module
(``tests/throwaway/strategy.py``, ``tests/throwaway/backend.py``) and one registration, and
everything that plans, runs, reports or refuses one asks its registry, never its name: the
comparison runs them, the report shows and classes them, and Flink's lanes refuse the strategy
(which has no Flink configuration) rather than run it as ``none``.

A lane of a new engine is one module and one registration the same way (``Lane.engine``):
``test_a_lane_of_a_new_engine_is_asked_for_its_engine``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from backends import strategies
from backends.flink.errors import NotApplicableError
from backends.flink.register import ttl_fields
from backends.storage import registry as storage
from backends.storage.kind import StorageBackend
from backends.ttl_config import StateTtlConfig
from tests.throwaway.backend import THROWAWAY_HEAP
from tests.throwaway.strategy import LAZY
from workloads.lanes import (
    ENGINE_TITLES,
    LANES,
    Lane,
    register_lane,
    runs_on_flink,
    unregister_lane,
)
from workloads.lanes.statebench import StatebenchLane
from workloads.report.decision import decisions
from workloads.report.engines import engine_of, engine_title, is_reference
from workloads.report.load import ScenarioKey, load_run
from workloads.report.metrics import class_of
from workloads.report.render import render_report
from workloads.report.stats import stat
from workloads.results.store import write_run
from workloads.results.summaries import STORED_ENTRIES
from workloads.run.engines.inprocess import run_in_process
from workloads.run.plan import PlanError, RunConfig, plan_scenarios
from workloads.spec import load_spec

FLINK_LANES = ("flink-heap", "flink-rocksdb", "flink-forst", "flink-forst-async")


@pytest.fixture
def registered() -> Iterator[None]:
    """The throwaway strategy and backend registered (with the backend's lane), then gone."""
    strategies.register(LAZY)
    storage.register(THROWAWAY_HEAP)
    register_lane(StatebenchLane(THROWAWAY_HEAP.name))
    try:
        yield
    finally:
        unregister_lane(THROWAWAY_HEAP.name)
        storage.unregister(THROWAWAY_HEAP.name)
        strategies.unregister(LAZY.name)


def _spec():  # a few thousand events: the registries, not the numbers, are under test
    return load_spec("ycsb-a").with_overrides(events=6_000, rate=2_000,
                                              checkpoint_interval_ms=1_000)


def test_unregistered_they_are_unknown_in_one_line() -> None:
    with pytest.raises(PlanError, match="unknown cleanup strategy 'throwaway_lazy'"):
        RunConfig(_spec(), backends=("heap",), strategies=("throwaway_lazy",))
    with pytest.raises(PlanError, match="unknown backend 'throwaway_heap'"):
        RunConfig(_spec(), backends=("throwaway_heap",))


def test_the_comparison_runs_them_and_the_report_shows_them(registered: None,
                                                            tmp_path: Path) -> None:
    cfg = RunConfig(_spec(), backends=("heap", THROWAWAY_HEAP.name), run_id="registries",
                    strategies=("none", LAZY.name, "compaction_filter"), repetitions=1,
                    parallelism=1, measure_latency=False)
    runnable, skipped = plan_scenarios(cfg)
    assert [(s.backend, s.strategy) for s in runnable] == [
        ("heap", "none"), ("heap", "throwaway_lazy"),
        ("throwaway_heap", "none"), ("throwaway_heap", "throwaway_lazy")]
    # the backend's capabilities decide, under its own title
    reasons = {(n.backend, n.strategy): n.reason for n in skipped}
    assert reasons[("throwaway_heap", "compaction_filter(1000)")] == (
        "the compaction filter runs inside RocksDB compactions; throwaway heap has none")
    outcome = run_in_process(cfg)
    run_dir = write_run(outcome, tmp_path)
    run = load_run(run_dir)
    assert {"throwaway_heap", "heap"} <= set(run.backends)
    assert "throwaway_lazy" in run.strategies
    # they really ran: the same events to the same state on both backends, and the strategy
    # (read-time cleanup only) keeps what none keeps
    peaks = {(b, s): stat(run, ScenarioKey("ycsb-a", b, s), STORED_ENTRIES).center
             for b in ("heap", "throwaway_heap") for s in ("none", "throwaway_lazy")}
    assert len(set(peaks.values())) == 1 and next(iter(peaks.values())) > 0, peaks
    rows = decisions(run, "ycsb-a")
    assert engine_of("throwaway_heap") == "statebench" and not is_reference("throwaway_heap")
    assert {d.backend for d in rows["statebench"]} == {"heap", "throwaway_heap"}
    # the report classes its numbers by what its registry says (heap-like sizes), not by name
    assert class_of("physical_bytes", "throwaway_heap", "none").reason == class_of(
        "physical_bytes", "heap", "none").reason
    page = render_report(run_dir).read_text()
    assert "throwaway_heap" in page and "throwaway_lazy" in page


def test_flink_lanes_refuse_a_strategy_without_a_flink_configuration(registered: None) -> None:
    cfg = RunConfig(_spec(), backends=("heap",), run_id="t", strategies=("throwaway_lazy",))
    for name in FLINK_LANES:
        reason = LANES[name].strategy_reason(cfg, "throwaway_lazy")
        assert reason == ("'throwaway_lazy' is statebench's own cleanup strategy with no Flink "
                          "configuration (StateTtlConfig has no such cleanup), so it has no "
                          "Flink lane"), name
    # and the worker's REGISTER refuses its config, whose flags are exactly none's
    lazy = strategies.parse_strategy("throwaway_lazy").configure(
        StateTtlConfig.new_builder(1000)).build()
    none = strategies.parse_strategy("none").configure(StateTtlConfig.new_builder(1000)).build()
    assert lazy.get_cleanup_strategies() == none.get_cleanup_strategies()
    assert ttl_fields(none, 1000, None)[3] == 1  # disableCleanupInBackground only
    with pytest.raises(NotApplicableError, match="no Flink configuration"):
        ttl_fields(lazy, 1000, None)


def test_a_lane_of_a_new_engine_is_asked_for_its_engine() -> None:
    """A lane of an engine the report and the CLI never heard of: one lane module (here, a
    class) and one registration; the report names and groups it by its engine, the CLI does
    not take it for Flink's."""

    class ElsewhereLane(Lane):
        name = "elsewhere"
        engine = "elsewhere-engine"
        summary = "a throwaway lane of a throwaway engine"

    register_lane(ElsewhereLane())
    try:
        assert engine_of("elsewhere") == "elsewhere-engine" and is_reference("elsewhere")
        assert engine_title("elsewhere-engine").title == "elsewhere-engine"
        assert "elsewhere-engine" not in ENGINE_TITLES and not runs_on_flink("elsewhere")
    finally:
        unregister_lane("elsewhere")
    assert engine_of("elsewhere") == "unregistered"


def test_a_registration_is_checked_in_one_line() -> None:
    with pytest.raises(ValueError, match="strategy 'timer' is registered already"):
        strategies.register(strategies.TIMER)
    with pytest.raises(ValueError, match="strategy 'none' is built in"):
        strategies.unregister("none")
    with pytest.raises(ValueError, match="backend kind 'heap' is registered already"):
        storage.register(storage.HEAP)
    misnamed = StorageBackend("not_its_kind", "x", THROWAWAY_HEAP.factory)
    with pytest.raises(ValueError, match="its class ThrowawayHeapBackend has kind "
                                         "'throwaway_heap'"):
        storage.register(misnamed)
    with pytest.raises(ValueError, match="lane 'heap' is registered already"):
        register_lane(StatebenchLane("heap"))
