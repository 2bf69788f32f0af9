"""KeyedOperator in the engines' checkpoint model (issue 15 item 1) with a queue: the asynchronous
phases are not the task's busy time, a barrier waits (busy time) only when the spec's
``[checkpoints] max_in_flight`` checkpoints are in flight (1: for the previous one), every
checkpoint completes with its rows in id order, and the per-task checkpoint rows have job totals
by the schema's rules."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from backends.snapshot import writer as writer_mod
from tests.runner.conftest import deterministic, mixed_spec, values
from workloads.run.engines.inprocess import run_in_process
from workloads.run.metrics import (
    CHECKPOINT_ASYNC_METRICS,
    CHECKPOINT_METRICS,
    CHECKPOINT_PHASE_METRICS,
)
from workloads.run.plan import RunConfig

SLOW_WRITE_S = 0.1


def _run(spec, tmp_path: Path, **kw):
    kw.setdefault("checkpoint_root", str(tmp_path / "ckpt"))
    kw.setdefault("parallelism", 1)
    return run_in_process(RunConfig(spec, run_id="t", **kw))


def _task_values(rows, metric: str, scenario: str, task: int = 0) -> dict:
    return values(rows, metric, scenario, task=task)


@pytest.fixture
def slow_writes(monkeypatch):
    """Every state file of a full snapshot takes SLOW_WRITE_S longer to write (on the
    snapshot's own thread: a sleep releases the GIL, as file I/O does)."""
    real = writer_mod.write_file

    def slow(*args, **kwargs):
        time.sleep(SLOW_WRITE_S)
        return real(*args, **kwargs)

    monkeypatch.setattr(writer_mod, "write_file", slow)


STATES = 5  # one file per keyed state, each SLOW_WRITE_S late


def _ids_in_row_order(rows, metric: str, scen: str) -> list[int]:
    return [r["step"] for r in rows.to_pylist()
            if r["scenario"] == scen and r["metric"] == metric and r["task"] == 0]


@pytest.mark.parametrize("backend", ["heap", "rocksdb"])
def test_with_max_in_flight_1_a_barrier_waits_for_the_previous_async_phase(
        backend, slow_writes, tmp_path):
    # 12 000 records over 2.4 logical s, checkpoints at 0.7, 1.4 and 2.1 s: the task reaches
    # each barrier long before the previous checkpoint's slow asynchronous phase ends
    spec = mixed_spec().with_overrides(checkpoints__max_in_flight=1)
    out = _run(spec, tmp_path, backends=(backend,), strategies=("none",))
    scen = f"mixed/{backend}/none"
    rows = out.rows
    async_ms = _task_values(rows, "checkpoint_async_ms", scen)
    wait_ms = _task_values(rows, "checkpoint_wait_ms", scen)
    sync_ms = _task_values(rows, "checkpoint_sync_ms", scen)
    assert sorted(async_ms) == [1, 2, 3]
    assert all(v >= STATES * SLOW_WRITE_S * 1e3 for v in async_ms.values())
    assert wait_ms[1] == 0.0  # nothing in flight before the first barrier
    assert wait_ms[2] > 0.5 * STATES * SLOW_WRITE_S * 1e3  # busy: the task could not go on
    assert all(s < 1_000 for s in sync_ms.values())
    # busy time = loop + sync + waits: the last asynchronous phase (waited for at the end of
    # input) is not in it, the waits at barriers 2 and 3 are
    records = _task_values(rows, "records", scen)[0]
    rate = _task_values(rows, "records_per_s", scen)[0]
    busy_s = 0.9 * records / rate  # warm-up: the first 10% of records are not counted
    waits_s = (wait_ms[2] + wait_ms[3]) / 1e3
    assert waits_s <= busy_s < waits_s + async_ms[3] / 1e3
    share = _task_values(rows, "checkpoint_sync_share", scen)[0]
    assert 0.5 < share <= 1.0
    assert _task_values(rows, "checkpoint_async_cpu_s", scen)[0] > 0
    during = _task_values(rows, "records_per_s_during_async", scen)
    assert during and during[0] > 0  # records were processed while a phase ran


@pytest.mark.parametrize("backend", ["heap", "rocksdb"])
def test_with_the_default_queue_no_barrier_waits_and_every_checkpoint_completes(
        backend, slow_writes, tmp_path):
    """max_in_flight 8 (the default): the three slow asynchronous phases queue behind each
    other, no barrier waits, none of them is busy time, and each checkpoint's rows come once
    it completed, in id order; the checkpoints are complete and hold the barrier's state."""
    spec = mixed_spec()
    assert spec.checkpoints.max_in_flight == 8
    out = _run(spec, tmp_path, backends=(backend,), strategies=("none",))
    scen = f"mixed/{backend}/none"
    rows = out.rows
    async_ms = _task_values(rows, "checkpoint_async_ms", scen)
    wait_ms = _task_values(rows, "checkpoint_wait_ms", scen)
    for metric in CHECKPOINT_METRICS + CHECKPOINT_PHASE_METRICS + CHECKPOINT_ASYNC_METRICS:
        assert _ids_in_row_order(rows, metric, scen) == [1, 2, 3], metric
    assert wait_ms == {1: 0.0, 2: 0.0, 3: 0.0}
    # measured on the thread from when it starts a phase: queue time excluded
    assert all(v >= STATES * SLOW_WRITE_S * 1e3 for v in async_ms.values())
    records = _task_values(rows, "records", scen)[0]
    rate = _task_values(rows, "records_per_s", scen)[0]
    busy_s = 0.9 * records / rate
    assert busy_s < sum(async_ms.values()) / 1e3 / 2  # the queued phases are not busy time
    assert _task_values(rows, "checkpoint_sync_share", scen)[0] < 0.5
    assert _task_values(rows, "records_per_s_during_async", scen)[0] > 0
    folders = sorted((tmp_path / "ckpt").rglob("chk-*"))
    assert [f.name for f in folders] == ["chk-1", "chk-2", "chk-3"]
    assert all((f / "_metadata").exists() for f in folders)


def test_a_barrier_waits_only_when_max_in_flight_are_in_flight(slow_writes, tmp_path):
    """max_in_flight 2: barrier 2 finds one in flight and goes on, barrier 3 finds two and
    waits for the oldest."""
    spec = mixed_spec().with_overrides(checkpoints__max_in_flight=2)
    out = _run(spec, tmp_path, backends=("heap",), strategies=("none",))
    scen = "mixed/heap/none"
    wait_ms = _task_values(out.rows, "checkpoint_wait_ms", scen)
    assert wait_ms[1] == wait_ms[2] == 0.0
    assert wait_ms[3] > 0.5 * STATES * SLOW_WRITE_S * 1e3
    assert _ids_in_row_order(out.rows, "checkpoint_bytes", scen) == [1, 2, 3]


def test_checkpoint_rows_and_job_totals(tmp_path):
    out = _run(mixed_spec(), tmp_path, backends=("heap",), strategies=("full_snapshot",),
               parallelism=2)
    rows, scen = out.rows, "mixed/heap/full_snapshot"
    for metric in CHECKPOINT_METRICS + CHECKPOINT_PHASE_METRICS + CHECKPOINT_ASYNC_METRICS:
        for task in (0, 1):
            per = _task_values(rows, metric, scen, task)
            assert sorted(per) == [1, 2, 3], metric
    by_step = {(r["step"], r["metric"]): r["logical_time_ms"] for r in rows.to_pylist()
               if r["metric"] == "checkpoint_async_ms" and r["task"] == 0}
    times = sorted(by_step.values())
    assert times[1] - times[0] == times[2] - times[1] == 700  # the barriers' times
    for task in (0, 1):
        ck_sync = _task_values(rows, "checkpoint_sync_ms", scen, task)
        ck_async = _task_values(rows, "checkpoint_async_ms", scen, task)
        ck_total = _task_values(rows, "checkpoint_total_ms", scen, task)
        assert all(ck_total[k] == pytest.approx(ck_sync[k] + ck_async[k]) for k in ck_total)
        assert _task_values(rows, "checkpoint_upload_ms", scen, task) == ck_async
    shares = [_task_values(rows, "checkpoint_sync_share", scen, t)[0] for t in (0, 1)]
    assert all(0 < s < 1 for s in shares)
    assert values(rows, "checkpoint_sync_share", scen)[0] == max(shares)  # share: the max
    cpu = [_task_values(rows, "checkpoint_async_cpu_s", scen, t)[0] for t in (0, 1)]
    assert values(rows, "checkpoint_async_cpu_s", scen)[0] == pytest.approx(sum(cpu))  # s: sum
    for metric in ("records_per_s_during_async", "records_per_s_outside_async"):
        per = [_task_values(rows, metric, scen, t).get(0) for t in (0, 1)]
        per = [v for v in per if v is not None]
        if per:
            assert values(rows, metric, scen)[0] == pytest.approx(sum(per))  # rates: sum


def test_checkpoint_bytes_identical_across_runs_with_a_seed(tmp_path):
    kw = {"backends": ("heap", "rocksdb"), "strategies": ("full_snapshot",)}
    a = _run(mixed_spec(), tmp_path / "a", **kw)
    b = _run(mixed_spec(), tmp_path / "b", **kw)
    ck = frozenset({"checkpoint_bytes", "checkpoint_uploaded_bytes",
                    "cleanup_removed_full_snapshot"})
    rows_a = deterministic(a.rows, ck)
    assert rows_a == deterministic(b.rows, ck)
    assert any(r[4] == "cleanup_removed_full_snapshot" and r[5] > 0 for r in rows_a)
