"""The shipped FLINK-27504 spec: it loads, validates and still rebuilds the issue's setup.

Why a test of its own: the README's leak plot comes from this spec, so a change to it (a TTL, a
strategy, the checkpoint mode or the logical span) silently changes what the plot claims. The
run itself takes minutes on flink-rocksdb and stays out of CI; this checks the spec and the plan
the runner makes from it, in milliseconds.
"""

from __future__ import annotations

from workloads.lanes.flink import flink_cleanup_reason
from workloads.ops import Op
from workloads.run.plan import RunConfig, plan_scenarios
from workloads.spec import builtin_specs, load_spec, parse_spec

DAY_MS = 24 * 3_600_000


def test_spec_is_shipped_and_round_trips() -> None:
    assert "flink-27504" in builtin_specs()
    spec = load_spec("flink-27504")
    assert spec.name == "flink-27504"
    assert parse_spec(spec.to_dict()) == spec


def test_spec_rebuilds_the_issue_setup() -> None:
    spec = load_spec("flink-27504")
    types = {op.state_type.name.lower() for op, share in spec.operations or () if share > 0}
    assert types == {"map", "list"}
    assert spec.proportions[Op.MAP_PUT] > 0 and spec.proportions[Op.LIST_ADD] > 0
    assert spec.state.ttl_ms == 60_000
    assert "compaction_filter(1000)" in spec.state.strategies
    assert spec.state.time_characteristic == "EventTime"
    assert spec.checkpoints.mode == "incremental"
    assert spec.time is not None and spec.time.rate == 20
    span_ms = spec.time.duration_ms
    assert span_ms is not None and 1.25 * DAY_MS <= span_ms <= 1.75 * DAY_MS
    # scaled interval: a checkpoint series long enough to show a trend, short enough for minutes
    assert 20 <= span_ms // spec.checkpoints.interval_ms <= 100
    assert spec.keys is not None and spec.keys.distribution == "sessions"  # churning keys


def test_flink_filter_runs_and_statebench_filter_is_not_applicable_under_event_time() -> None:
    spec = load_spec("flink-27504")
    assert flink_cleanup_reason("flink-rocksdb", "compaction_filter(1000)") is None
    runnable, skipped = plan_scenarios(RunConfig(spec, backends=("rocksdb",), run_id="t"))
    assert [(s.backend, s.strategy) for s in skipped] == [("rocksdb", "compaction_filter(1000)")]
    assert {s.strategy for s in runnable} == {"none", "full_snapshot"}
