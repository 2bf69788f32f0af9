"""Operator workloads end to end in-process: shipped specs run, ttl_changed_results is exact
and deterministic under event time, heap and RocksDB see the same accesses, the TTL sweep gives
a state-vs-TTL curve, and unsupported lanes and kinds are refused up front."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tests.runner.conftest import deterministic
from tests.ttl_curve_rows import ttl_curve
from workloads.operators import UnsupportedOperator, check_supported
from workloads.run.engines.inprocess import run_in_process
from workloads.run.plan import PlanError, RunConfig
from workloads.run.sweep import parse_sweep
from workloads.spec import load_spec

OPERATOR_METRICS = frozenset({"live_entries", "expired_present_entries", "logical_bytes",
                              "checkpoint_bytes", "records", "operator_outputs",
                              "ttl_changed_results", "ttl_changed_outputs",
                              "ttl_compared_outputs", "timers_registered", "timers_fired"})


def totals(rows: pa.Table, metric: str) -> dict[str, float]:
    """strategy label -> the job total of a summary metric (repetition 0)."""
    return {r["strategy"]: r["value"] for r in rows.to_pylist()
            if r["metric"] == metric and r["task"] == -1 and r["step"] == 0}


def small(name: str, events: int = 20_000, **overrides: object):
    return load_spec(name).with_overrides(events=events, checkpoint_interval_ms=500,
                                          **overrides)


@pytest.mark.parametrize("name", ["nexmark-q18-dedup", "nexmark-q20-join",
                                  "nexmark-q7-window", "nexmark-q4-agg", "nexmark-q5-sliding",
                                  "nexmark-interval-join", "nexmark-q19-topn",
                                  "nexmark-q11-session"])
def test_shipped_spec_runs_deterministically(name: str, tmp_path) -> None:
    spec = small(name, ttl_ms=300)
    runs = [
        run_in_process(RunConfig(spec=spec, backends=("heap", "rocksdb"),
                                 strategies=("none", "timer"), measure_latency=False,
                                 checkpoint_root=str(tmp_path / f"ck{i}")))
        for i in range(2)
    ]
    rows = [deterministic(r.rows, OPERATOR_METRICS) for r in runs]
    assert rows[0] == rows[1]  # same seed, event time: every count identical
    changed = totals(runs[0].rows, "ttl_changed_results")
    assert set(changed) == {"none", "timer"}
    # NeverReturnExpired: what a read sees does not depend on the cleanup, nor on the backend
    per_backend = {(r["backend"], r["strategy"]): r["value"] for r in runs[0].rows.to_pylist()
                   if r["metric"] == "ttl_changed_outputs" and r["task"] == -1}
    assert len(set(per_backend.values())) == 1
    outputs = totals(runs[0].rows, "operator_outputs")
    assert outputs["none"] > 0
    if name in ("nexmark-q7-window", "nexmark-q5-sliding", "nexmark-interval-join",
                "nexmark-q11-session"):
        registered = totals(runs[0].rows, "timers_registered")["none"]
        fired = totals(runs[0].rows, "timers_fired")["none"]
        if name == "nexmark-q11-session":  # merged sessions' timers are deleted, not fired
            assert registered > fired > 0
        else:  # every timer fires, at the latest at the end of input
            assert registered == fired > 0


def test_changed_results_zero_when_ttl_outlives_the_run_and_grow_as_it_shrinks() -> None:
    shares = {}
    for ttl in (50, 400, 100_000):
        out = run_in_process(RunConfig(spec=small("nexmark-q20-join", ttl_ms=ttl),
                                       backends=("heap",), strategies=("timer",),
                                       measure_latency=False))
        shares[ttl] = totals(out.rows, "ttl_changed_results")["timer"]
        changed = totals(out.rows, "ttl_changed_outputs")["timer"]
        compared = totals(out.rows, "ttl_compared_outputs")["timer"]
        assert shares[ttl] == pytest.approx(changed / compared)  # the job total is the ratio
    assert shares[100_000] == 0.0
    assert shares[50] > shares[400] > 0.0


def test_ttl_sweep_gives_the_state_vs_ttl_curve() -> None:
    spec = small("nexmark-q4-agg")
    sweep = parse_sweep("ttl(ms=100,400,100000)")
    out = run_in_process(RunConfig(spec=spec, backends=("heap",),
                                   strategies=("none", *sweep.labels), sweep=sweep,
                                   measure_latency=False))
    curve = ttl_curve(out.rows)
    assert [p.ttl_ms for p in curve] == [100, 400, 100_000]
    live = [p.peak_live_entries for p in curve]
    changed = [p.ttl_changed_results for p in curve]
    assert live[0] < live[1] < live[2]
    assert changed[0] > changed[1] > changed[2] == 0.0


def test_flink_lanes_are_refused_naming_the_lane() -> None:
    # flink-heap/-rocksdb run every kind (tests/flink/test_flink_operators.py); flink-forst none
    for name in ("nexmark-q18-dedup", "nexmark-q11-session"):
        with pytest.raises(PlanError, match=r"flink-forst.*run on flink-heap and flink-rocksdb"):
            RunConfig(spec=small(name), backends=("flink-forst",))
    with pytest.raises(UnsupportedOperator, match="'nope' is not emulated"):
        check_supported("nope")


#: Whether Flink applies ``table.exec.state.ttl`` / a state TTL to the operator's state, read
#: in Flink 2.3's classes (docs/operators.md, "Which operators Flink's state TTL reaches"):
#: windows (``WindowOperator``; SQL's ``AbstractSyncStateWindowAggProcessor``) and the interval
#: join (``TimeIntervalJoin``) never enable one; dedup, the regular join, the group aggregate
#: and Top-N do.
FLINK_APPLIES_TTL = {
    "nexmark-q7-window": False, "nexmark-q5-sliding": False, "nexmark-q11-session": False,
    "nexmark-interval-join": False, "nexmark-q18-dedup": True, "nexmark-q20-join": True,
    "nexmark-q4-agg": True, "nexmark-q19-topn": True,
}


@pytest.mark.parametrize("name", sorted(FLINK_APPLIES_TTL))
def test_a_ttl_changes_results_only_where_flink_applies_one(name: str, tmp_path) -> None:
    """A 20 ms TTL (far shorter than any window, interval or key's life in these specs): where
    Flink ignores TTL, outputs, live state and checkpoints are those of the same run without a
    TTL and nothing expires; where Flink applies it, entries expire and results change."""
    spec = small(name, events=10_000, ttl_ms=20)
    out = run_in_process(RunConfig(spec=spec, backends=("heap", "rocksdb"),
                                   strategies=("none", "timer"), measure_latency=False,
                                   checkpoint_root=str(tmp_path / "ck")))
    rows = out.rows.to_pylist()

    def series(backend: str, strategy: str, metric: str) -> list[float]:
        return [r["value"] for r in sorted(rows, key=lambda r: (r["task"], r["step"]))
                if r["backend"] == backend and r["strategy"] == strategy
                and r["metric"] == metric]

    for backend in ("heap", "rocksdb"):
        changed = series(backend, "timer", "ttl_changed_outputs")
        expired = series(backend, "timer", "expired_present_entries")
        assert changed and expired
        if FLINK_APPLIES_TTL[name]:
            assert sum(changed) > 0 and max(expired) > 0, backend
        else:
            assert sum(changed) == 0 and max(expired) == 0, backend
            for metric in ("operator_outputs", "live_entries", "timers_fired"):
                assert series(backend, "timer", metric) == series(backend, "none", metric)


def test_a_window_ttl_sweep_is_flat_as_in_flink() -> None:
    """What Flink shows for a window: every TTL keeps the same state and changes nothing (the
    q4 sweep above is the contrast: there the TTL bounds state and changes results)."""
    sweep = parse_sweep("ttl(ms=20,400,100000)")
    out = run_in_process(RunConfig(spec=small("nexmark-q7-window", events=10_000),
                                   backends=("heap",), strategies=("none", *sweep.labels),
                                   sweep=sweep, measure_latency=False))
    curve = ttl_curve(out.rows)
    assert [p.ttl_ms for p in curve] == [20, 400, 100_000]
    assert {p.ttl_changed_results for p in curve} == {0.0}
    assert len({p.peak_live_entries for p in curve}) == 1
