"""Fixtures for the runner tests: small specs, deterministic-metric views, Spark sessions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from workloads.spec import WorkloadSpec, load_spec, parse_spec

#: Metrics that depend only on the input and the code, never on timing (checkpoint sizes with a
#: logical clock included: full snapshots are byte-for-byte reproducible).
DETERMINISTIC = frozenset(
    {
        "records",
        "live_entries",
        "expired_present_entries",
        "logical_bytes",
        "checkpoint_bytes",
        "checkpoint_uploaded_bytes",
        "cleanup_removed_read",
        "cleanup_removed_incremental",
        "cleanup_removed_timer",
        "cleanup_removed_full_snapshot",
        "cleanup_removed_compaction_filter",
        "expired_returned",
        "not_applicable",
        # cleanup lag is in logical ms: deterministic under event time
        *(f"cleanup_lag_{m}_{stat}_ms" for m in ("read", "incremental", "timer", "full_snapshot")
          for stat in ("p50", "p99", "max")),
    }
)


def deterministic(rows: pa.Table, metrics: frozenset[str] = DETERMINISTIC) -> list[tuple]:
    """Sorted (scenario, task, step, time, metric, value) of the deterministic metrics."""
    return sorted(
        (r["scenario"], r["task"], r["step"], r["logical_time_ms"], r["metric"], r["value"])
        for r in rows.to_pylist()
        if r["metric"] in metrics
    )


def values(rows: pa.Table, metric: str, scenario: str | None = None, task: int = -1) -> dict:
    """step -> value of one metric (job totals by default)."""
    return {
        r["step"]: r["value"]
        for r in rows.to_pylist()
        if r["metric"] == metric and r["task"] == task
        and (scenario is None or r["scenario"] == scenario)
    }


def small_spec(name: str = "ycsb-a", events: int = 30_000, **overrides: Any) -> WorkloadSpec:
    """A shipped spec scaled down to ``events`` over 3 logical seconds: with the shipped 1 s TTL
    and a 1 s checkpoint interval, keys expire and two checkpoints happen inside the run."""
    overrides.setdefault("checkpoint_interval_ms", 1_000)
    return load_spec(name).with_overrides(events=events, rate=events // 3, **overrides)


def mixed_spec(**state: Any) -> WorkloadSpec:
    """Every state type and op, string payloads, EventTime TTL, full checkpoints."""
    data: dict[str, Any] = {
        "name": "mixed",
        "seed": 7,
        "keys": {"count": 2_000, "distribution": "zipfian"},
        "operations": {
            "value_get": 0.2, "value_update": 0.15, "value_rmw": 0.05, "value_clear": 0.02,
            "list_add": 0.1, "list_get": 0.05, "map_put": 0.1, "map_get": 0.08,
            "map_iterate": 0.03, "map_remove": 0.02, "reducing_add": 0.1,
            "aggregating_add": 0.1,
        },
        "values": {"type": "string", "size": {"distribution": "uniform", "min": 1, "max": 64}},
        "time": {"rate": 5_000, "events": 12_000, "max_out_of_orderness_ms": 30},
        "state": {
            "ttl_ms": 400, "update_type": "OnCreateAndWrite", "visibility": "NeverReturnExpired",
            "time_characteristic": "EventTime",
            "strategies": ["none", "full_snapshot", "incremental(3, true)", "timer"],
            "map_keys": 6,
        } | state,
        "checkpoints": {"interval_ms": 700, "mode": "full"},
    }
    return parse_spec(data, source="<mixed>")


def spark_session(master: str) -> Iterator[Any]:
    """Body of a module-scoped fixture: one SparkSession for the module, stopped after it."""
    from workloads.run.engines.spark import get_session

    spark = get_session(master, app_name="statebench-tests")
    try:
        yield spark
    finally:
        spark.stop()


@pytest.fixture
def tiny_spec() -> WorkloadSpec:
    return small_spec(events=6_000)
