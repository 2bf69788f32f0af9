"""The keyed operator run in-process: deterministic, backend-independent, honest about what it
could not run, and loud when a backend returns an expired value."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest

from backends.ttl import states as ttl_states
from tests.runner.conftest import deterministic, mixed_spec, small_spec, values
from workloads.run.engines.inprocess import data_facts, run_in_process
from workloads.run.plan import PlanError, RunConfig, Scenario, operator_config
from workloads.run.source import keyed_table
from workloads.run.task_checks import ExpiredValueReturned, OutOfOrderInput
from workloads.run.tasks import run_operator_batches

BACKEND_INDEPENDENT = frozenset(
    {"records", "live_entries", "expired_present_entries", "logical_bytes",
     "cleanup_removed_read", "cleanup_removed_timer", "cleanup_removed_full_snapshot",
     "expired_returned",
     *(f"cleanup_lag_{m}_{stat}_ms" for m in ("read", "timer", "full_snapshot")
       for stat in ("p50", "p99", "max"))}
)


def _run(spec, tmp_path: Path, **kw) -> object:
    kw.setdefault("checkpoint_root", str(tmp_path / "ckpt"))
    return run_in_process(RunConfig(spec, run_id="t", **kw))


def _without_backend(rows: list[tuple]) -> list[tuple]:
    return sorted((s.replace("/heap/", "/*/").replace("/rocksdb/", "/*/"), *rest)
                  for s, *rest in rows)


def test_same_seed_twice_gives_identical_metrics(tmp_path: Path) -> None:
    spec = mixed_spec()
    kw = {"backends": ("heap", "rocksdb"), "strategies": ("full_snapshot", "timer")}
    a = _run(spec, tmp_path / "a", **kw)
    b = _run(spec, tmp_path / "b", **kw)
    assert deterministic(a.rows) == deterministic(b.rows)
    assert values(a.rows, "records", "mixed/heap/timer")[0] == 12_000
    assert values(a.rows, "checkpoint_bytes", "mixed/rocksdb/timer")  # compared too
    # and a different seed changes them
    c = _run(spec.with_overrides(seed=8), tmp_path / "c", backends=("heap",),
             strategies=kw["strategies"])
    heap = [r for r in deterministic(a.rows) if "/heap/" in r[0]]
    assert deterministic(c.rows) != heap


def test_heap_and_rocksdb_see_the_same_state(tmp_path: Path) -> None:
    out = _run(mixed_spec(), tmp_path, backends=("heap", "rocksdb"),
               strategies=("none", "full_snapshot", "timer"))
    heap = [r for r in deterministic(out.rows, BACKEND_INDEPENDENT) if "/heap/" in r[0]]
    rocks = [r for r in deterministic(out.rows, BACKEND_INDEPENDENT) if "/rocksdb/" in r[0]]
    assert heap and _without_backend(heap) == _without_backend(rocks)


def test_strategies_behave_as_documented(tmp_path: Path) -> None:
    spec = small_spec("ycsb-a", events=30_000)
    out = _run(spec, tmp_path, backends=("heap",))
    rows = out.rows
    last = max(values(rows, "expired_present_entries", "ycsb-a/heap/none"))

    def final(metric: str, strategy: str) -> float:
        return values(rows, metric, f"ycsb-a/heap/{strategy}")[last]

    assert final("expired_present_entries", "none") > 1_000  # nothing removes cold keys
    assert final("expired_present_entries", "timer") <= 5  # removed as they expire
    assert final("expired_present_entries", "incremental(5, false)") < final(
        "expired_present_entries", "none") / 5
    # live entries do not depend on the cleanup strategy
    assert len({final("live_entries", s) for s in
                ("none", "full_snapshot", "incremental(5, false)", "timer")}) == 1
    # full-snapshot cleanup shrinks checkpoints, not local state
    ck_none = values(rows, "checkpoint_bytes", "ycsb-a/heap/none")
    ck_full = values(rows, "checkpoint_bytes", "ycsb-a/heap/full_snapshot")
    assert sorted(ck_none) == sorted(ck_full) == [1, 2]
    assert ck_full[2] < ck_none[2]
    assert values(rows, "cleanup_removed_full_snapshot", "ycsb-a/heap/full_snapshot")[0] > 0
    assert values(rows, "cleanup_removed_timer", "ycsb-a/heap/timer")[0] > 1_000
    assert values(rows, "restore_ms", "ycsb-a/heap/none")  # the last checkpoint was restored

    def lag(mechanism: str, stat: str, strategy: str) -> float:
        return values(rows, f"cleanup_lag_{mechanism}_{stat}_ms", f"ycsb-a/heap/{strategy}")[0]

    # cleanup lag, per mechanism: timers remove at expiry (within a record's spacing); the
    # incremental walk removes later; read-time cleanup waits for the next read of a key
    for strategy, mechanism in (("timer", "timer"), ("incremental(5, false)", "incremental"),
                                ("full_snapshot", "full_snapshot"), ("none", "read")):
        p50, p99, top = (lag(mechanism, st, strategy) for st in ("p50", "p99", "max"))
        assert 0 <= p50 <= p99 <= top, strategy
    assert lag("timer", "max", "timer") <= 1
    assert lag("incremental", "p50", "incremental(5, false)") > lag("timer", "p99", "timer")
    assert lag("read", "p50", "none") > lag("incremental", "p50", "incremental(5, false)")
    assert not values(rows, "cleanup_lag_timer_p50_ms", "ycsb-a/heap/none")  # none removed
    for strategy in ("none", "timer"):
        scen = f"ycsb-a/heap/{strategy}"
        assert values(rows, "records", scen)[0] == 30_000
        assert values(rows, "expired_returned", scen)[0] == 0
        assert values(rows, "records_per_s", scen)[0] > 0
        p = {m: values(rows, m, scen)[0] for m in
             ("latency_p50_us", "latency_p99_us", "latency_p999_us", "latency_max_us")}
        assert 0 < p["latency_p50_us"] <= p["latency_p99_us"] <= p["latency_p999_us"]
        assert p["latency_p999_us"] <= p["latency_max_us"]


def test_not_applicable_strategies_are_reported_not_run(tmp_path: Path) -> None:
    spec = small_spec("ycsb-a", events=3_000)
    out = _run(spec, tmp_path, backends=("heap", "rocksdb"),
               strategies=("none", "incremental(5, false)", "compaction_filter"))
    skipped = {(n.backend, n.strategy): n.reason for n in out.not_applicable}
    assert set(skipped) == {
        ("rocksdb", "incremental(5, false)"),
        ("heap", "compaction_filter(1000)"),
        ("rocksdb", "compaction_filter(1000)"),  # EventTime: not wall-clock driven
    }
    assert "wall clock" in skipped[("rocksdb", "compaction_filter(1000)")]
    for backend, strategy in skipped:
        scen = f"ycsb-a/{backend}/{strategy}"
        rows = [r for r in out.rows.to_pylist() if r["scenario"] == scen]
        assert [(r["metric"], r["value"], r["unit"]) for r in rows] == [
            ("not_applicable", 1.0, "flag")]
    assert values(out.rows, "records", "ycsb-a/heap/incremental(5, false)")[0] == 3_000


def test_processing_time_compaction_filter_runs_on_a_scaled_clock(tmp_path: Path) -> None:
    spec = small_spec("ycsb-a", events=3_000, state__time_characteristic="ProcessingTime")
    out = _run(spec, tmp_path, backends=("rocksdb",), strategies=("none", "compaction_filter"),
               time_speedup=1000.0)
    assert out.not_applicable == []
    assert values(out.rows, "records", "ycsb-a/rocksdb/compaction_filter(1000)")[0] == 3_000
    assert values(out.rows, "expired_returned", "ycsb-a/rocksdb/compaction_filter(1000)")[0] == 0


def test_unknown_backend_and_strategy_are_plan_errors() -> None:
    spec = small_spec(events=100)
    with pytest.raises(PlanError, match="unknown backend 'cassandra'"):
        RunConfig(spec, backends=("cassandra",))
    with pytest.raises(PlanError, match="unknown cleanup strategy"):
        RunConfig(spec, strategies=("sometimes",))


def _patch_reads_ignore_ttl(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken value state: reads return whatever is stored, expired or not."""

    def broken_read(raw, ctx):
        raw_value = raw.value

        def value():
            stored = raw_value()
            return None if stored is None else stored[0]

        return value

    monkeypatch.setattr(ttl_states, "_value_reader_no_hooks", broken_read)


def test_an_expired_value_returned_fails_the_run(tmp_path, monkeypatch) -> None:
    _patch_reads_ignore_ttl(monkeypatch)
    spec = small_spec("ycsb-b", events=20_000)
    with pytest.raises(ExpiredValueReturned, match="expired value"):
        _run(spec, tmp_path, backends=("heap",), strategies=("none",))


def test_return_expired_visibility_counts_without_failing(tmp_path) -> None:
    spec = small_spec("ycsb-b", events=20_000, state__visibility="ReturnExpiredIfNotCleanedUp")
    out = _run(spec, tmp_path, backends=("heap",), strategies=("none",))
    assert values(out.rows, "expired_returned", "ycsb-b/heap/none")[0] > 0


def _keyed(spec, parallelism: int = 2) -> tuple[pa.Table, object]:
    cfg = RunConfig(spec, parallelism=parallelism, checkpoint_root=None, run_id="t")
    table = keyed_table(spec, cfg.partitions, cfg.parallelism, 128, 4096)
    return table, cfg


def test_interleaved_tasks_give_the_same_result_as_grouped_tasks() -> None:
    spec = mixed_spec()
    table, cfg = _keyed(spec)
    op_cfg = operator_config(cfg, Scenario("heap", "timer"), 0, data_facts(table, cfg))
    grouped = pa.Table.from_batches(run_operator_batches(op_cfg, table.to_batches(1000)))
    # all tasks mixed in every batch, each task still in time order
    mixed = table.sort_by([("ts", "ascending"), ("seq", "ascending")])
    assert len(set(mixed.slice(0, 1000).column("task").to_pylist())) == 2
    interleaved = pa.Table.from_batches(run_operator_batches(op_cfg, mixed.to_batches(999)))
    assert deterministic(grouped) == deterministic(interleaved)


def test_unsorted_input_is_rejected() -> None:
    table, cfg = _keyed(mixed_spec())
    op_cfg = operator_config(cfg, Scenario("heap", "none"), 0, data_facts(table, cfg))
    shuffled = table.take(pa.array(list(range(table.num_rows))[::-1]))
    with pytest.raises(OutOfOrderInput, match="not sorted by ts"):
        list(run_operator_batches(op_cfg, shuffled.to_batches(500)))


def test_a_retried_attempt_replaces_the_failed_attempts_checkpoints(tmp_path: Path) -> None:
    table, cfg = _keyed(mixed_spec(), parallelism=1)
    cfg = dataclasses.replace(cfg, checkpoint_root=str(tmp_path))
    op_cfg = operator_config(cfg, Scenario("heap", "none"), 0, data_facts(table, cfg))

    def fail(i: int) -> None:
        if i == 5:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        list(run_operator_batches(op_cfg, table.to_batches(1000), attempt=0, attempt_id=7,
                                  after_batch=fail))
    task_dir = next(tmp_path.glob("t/*/rep-0/task-00000"))
    assert [p.name for p in task_dir.iterdir()] == ["attempt-7"]  # a partial checkpoint set
    out = pa.Table.from_batches(
        run_operator_batches(op_cfg, table.to_batches(1000), attempt=1, attempt_id=9))
    assert [p.name for p in task_dir.iterdir()] == ["attempt-9"]
    assert sorted(c.name for c in (task_dir / "attempt-9").iterdir() if c.is_dir()) == [
        f"chk-{i}" for i in range(1, 4)]
    assert values(out, "_attempt", task=0) == {0: 1.0}
