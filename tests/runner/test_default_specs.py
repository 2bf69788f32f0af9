"""The default comparison's workload list (issue 17 item 6): it includes a regular join and a
dedup over Nexmark input, lighter than the shipped specs, and a lane that cannot run operator
kinds is planned as not applicable with its reason instead of refusing the comparison."""

from __future__ import annotations

import pytest

from workloads.run.compare import DEFAULT_OVERRIDES, DEFAULT_SPECS, default_specs
from workloads.run.plan import PlanError, RunConfig, operator_lane_reason, plan_scenarios
from workloads.spec import load_spec


def test_default_includes_a_regular_join_and_a_dedup() -> None:
    specs = default_specs()
    assert [s.name for s in specs] == list(DEFAULT_SPECS)
    kinds = {s.name: s.operator.kind for s in specs if s.operator is not None}
    assert sorted(kinds.values()) == ["dedup", "regular_join"]
    assert [s.name for s in specs[:3]] == ["sessions-churn", "ycsb-a", "sessions-paced"]


def test_default_operator_specs_are_lighter_over_the_same_event_time() -> None:
    by_name = {s.name: s for s in default_specs()}
    for name, overrides in DEFAULT_OVERRIDES.items():
        shipped, light = load_spec(name), by_name[name]
        assert light.time.events == overrides["events"] < shipped.time.events
        assert light.time.rate == overrides["rate"] < shipped.time.rate
        span = light.time.events / light.time.rate
        assert span == shipped.time.events / shipped.time.rate  # 10 s: 5 TTLs, 2 checkpoints
        assert span * 1000 >= 2 * light.checkpoints.interval_ms
        assert span * 1000 >= 4 * light.state.ttl_ms
    assert by_name["ycsb-a"] == load_spec("ycsb-a")  # key-value specs untouched
    # --events scales every default workload alike, the operator ones included
    assert {s.time.events for s in default_specs(events=30_000)} == {30_000}


def test_flink_lanes_are_not_applicable_for_operator_specs() -> None:
    pytest.importorskip("pyflink")
    backends = ("heap", "rocksdb", "flink-heap", "flink-rocksdb", "flink-forst")
    spec = load_spec("nexmark-q18-dedup")
    try:
        cfg = RunConfig(spec=spec, backends=backends)
    except PlanError as exc:  # no JDK 17 here: the comparison leaves Flink's lanes out anyway
        pytest.skip(str(exc))
    # the default comparison's operator kinds run on flink-heap and flink-rocksdb too
    runnable, skipped = plan_scenarios(cfg)
    assert {s.backend for s in runnable} == set(backends) - {"flink-forst"}
    assert operator_lane_reason(cfg, "flink-heap") is None
    flink = [n for n in skipped if n.backend == "flink-forst"]
    assert {n.strategy for n in flink} == set(spec.state.strategies)
    for n in flink:
        assert n.reason == operator_lane_reason(cfg, n.backend)
        assert "backend 'flink-forst'" in n.reason and "kind = 'dedup'" in n.reason
    # statebench's own not-applicable strategies keep their own reasons
    assert any(n.backend == "rocksdb" and "incremental" in n.strategy for n in skipped)
    # key-value traffic still runs on the Flink lanes
    kv = RunConfig(spec=load_spec("ycsb-a"), backends=("heap", "flink-heap"))
    assert operator_lane_reason(kv, "flink-heap") is None
    assert any(s.backend == "flink-heap" for s in plan_scenarios(kv)[0])


def test_only_lanes_without_operator_kinds_is_refused() -> None:
    pytest.importorskip("pyflink")
    try:
        RunConfig(spec=load_spec("ycsb-a"), backends=("flink-heap",))
    except PlanError as exc:
        pytest.skip(str(exc))
    with pytest.raises(PlanError, match=r"flink-forst.*run on flink-heap and flink-rocksdb"):
        RunConfig(spec=load_spec("nexmark-q20-join"), backends=("flink-forst",))
