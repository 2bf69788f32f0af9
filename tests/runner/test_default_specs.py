"""The default comparison's workload list (issue 17 item 6): it includes a regular join and a
dedup over Nexmark input, lighter than the shipped specs, and a lane that cannot run operator
kinds is planned as not applicable with its reason instead of refusing the comparison."""

from __future__ import annotations

import pytest

from backends.flink import FlinkUnavailableError
from tests.flink.conftest import fail_or_skip
from workloads.lanes import LANES
from workloads.run.compare import DEFAULT_OVERRIDES, DEFAULT_SPECS, default_specs
from workloads.run.plan import PlanError, RunConfig, plan_scenarios
from workloads.spec import WorkloadSpec, load_spec


def _config_with_flink_lanes(spec: WorkloadSpec, backends: tuple[str, ...]) -> RunConfig:
    """The run's plan with Flink's lanes in it; where they cannot start (no JDK 17), the test
    fails if this session must run them (the flink extra installed, as in CI) and is skipped
    elsewhere: the shared rule of tests/flink/conftest.py."""
    try:
        return RunConfig(spec=spec, backends=backends)
    except PlanError as exc:
        fail_or_skip("the Flink lanes' plan", FlinkUnavailableError(str(exc)))


def test_default_includes_a_regular_join_and_a_dedup() -> None:
    specs = default_specs()
    assert [s.name for s in specs] == list(DEFAULT_SPECS)
    kinds = {s.name: s.operator.kind for s in specs if s.operator is not None}
    assert sorted(kinds.values()) == ["dedup", "regular_join"]
    assert [s.name for s in specs[:3]] == ["sessions-churn", "ycsb-a", "sessions-paced"]


def test_default_specs_are_lighter_over_enough_event_time() -> None:
    by_name = {s.name: s for s in default_specs()}
    for name, overrides in DEFAULT_OVERRIDES.items():
        shipped, light = load_spec(name), by_name[name]
        if "rate" in overrides:  # half the rate over the shipped event time
            assert light.time.events == overrides["events"] < shipped.time.events
            assert light.time.rate == overrides["rate"] < shipped.time.rate
            span = light.time.events / light.time.rate
            assert span == shipped.time.events / shipped.time.rate  # 10 s
        else:  # a paced workload costs wall time: a shorter run
            assert light.time.duration_ms == overrides["duration_ms"] < shipped.time.duration_ms
            span = light.time.duration_ms / 1000
        assert span * 1000 >= 2 * light.checkpoints.interval_ms
        # a TTL period to fill the state, two or more in which the TTL bounds it
        assert span * 1000 >= 3 * light.state.ttl_ms
    assert set(DEFAULT_OVERRIDES) <= set(DEFAULT_SPECS)
    # --events scales every default workload alike, the operator ones included
    assert {s.time.events for s in default_specs(events=30_000)} == {30_000}


def test_operator_specs_run_on_flink_heap_and_rocksdb_and_not_on_forst() -> None:
    backends = ("heap", "rocksdb", "flink-heap", "flink-rocksdb", "flink-forst")
    spec = load_spec("nexmark-q18-dedup")
    cfg = _config_with_flink_lanes(spec, backends)
    # the default comparison's operator kinds run on flink-heap and flink-rocksdb too; only
    # flink-forst is planned as not applicable, with its reason
    runnable, skipped = plan_scenarios(cfg)
    assert {s.backend for s in runnable} == set(backends) - {"flink-forst"}
    assert LANES["flink-heap"].spec_reason(cfg) is None
    flink = [n for n in skipped if n.backend == "flink-forst"]
    assert {n.strategy for n in flink} == set(spec.state.strategies)
    for n in flink:
        assert n.reason == LANES[n.backend].spec_reason(cfg)
        assert "backend 'flink-forst'" in n.reason and "kind = 'dedup'" in n.reason
    # statebench's own not-applicable strategies keep their own reasons
    assert any(n.backend == "rocksdb" and "incremental" in n.strategy for n in skipped)
    # key-value traffic still runs on the Flink lanes
    kv = _config_with_flink_lanes(load_spec("ycsb-a"), ("heap", "flink-heap"))
    assert LANES["flink-heap"].spec_reason(kv) is None
    assert any(s.backend == "flink-heap" for s in plan_scenarios(kv)[0])


def test_only_lanes_without_operator_kinds_is_refused() -> None:
    _config_with_flink_lanes(load_spec("ycsb-a"), ("flink-heap",))
    with pytest.raises(PlanError, match=r"flink-forst.*run on flink-heap and flink-rocksdb"):
        RunConfig(spec=load_spec("nexmark-q20-join"), backends=("flink-forst",))
