"""The lanes' checkpoint model (issue 15): Flink's asynchronous phase runs on a thread of the
worker while the record loop goes on, its numbers come back when it completed, and under the
logical clock a full_snapshot checkpoint holds exactly what the barrier's time says.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from backends.flink import FlinkWorker, events
from backends.flink.build import ensure_worker_built
from tests.flink.conftest import start_worker
from tests.runner.conftest import small_spec
from workloads.lanes.flink_task import close_idle_workers
from workloads.run.engines.inprocess import run_in_process
from workloads.run.plan import RunConfig

#: value state, TTL 1 s, OnCreateAndWrite, NeverReturnExpired, no background cleanup but the
#: full-snapshot one (backends.flink.register.ttl_fields)
FULL_SNAPSHOT_TTL = (1_000, 1, 1, 3, 0, 0, 0)
KEYS = 100_000


@pytest.fixture(scope="module")
def heap() -> Iterator[FlinkWorker]:
    with start_worker("heap") as worker:
        yield worker


def _lane(ttl: tuple[int, ...] = FULL_SNAPSHOT_TTL) -> events.LaneSpec:
    return events.LaneSpec(value_type="long", state_types=("value",), ttl_fields=ttl,
                           clock=events.CLOCK_RECORD, speedup=1.0, start_ms=0,
                           warmup_records=0, verify=False, latency=False)


def _updates(keys: np.ndarray, ts: int) -> bytes:
    n = len(keys)
    batch = pa.RecordBatch.from_arrays(
        [pa.array(keys, pa.int64()), pa.array(np.full(n, ts), pa.int64()),
         pa.array(np.ones(n, np.int8), pa.int8()),  # VALUE_UPDATE
         pa.array(keys, pa.int64()), pa.array(np.full(n, 8, np.int32), pa.int32()),
         pa.array(np.zeros(n, np.int32), pa.int32())],
        names=["key", "ts", "op", "value", "value_size", "map_key"])
    return events.encode_apply(batch, "long", False)


def test_the_async_phase_overlaps_the_record_loop(heap: FlinkWorker, tmp_path: Path) -> None:
    """A checkpoint of 100 k keys, then more records in the same frame: the barrier returns
    after the synchronous phase, records are processed while the asynchronous phase runs, and
    its numbers arrive with the stats once it completed (on the task thread)."""
    heap.reset("heap")
    keys = np.arange(KEYS, dtype=np.int64)
    out = heap.send(events.encode_open(_lane((0, 0, 0, 0, 0, 0, 0))) + _updates(keys, 10)
                    + events.encode_checkpoint(1, str(tmp_path / "ckpt"))
                    + _updates(keys, 20) + _updates(keys, 30) + events.encode_stats())
    sync_ms, wait_ms = events.decode_checkpoint(out[0])
    stats = events.decode_stats(out[1])
    assert wait_ms < 1.0  # no checkpoint before it to wait for
    assert stats.during_async_records > 0 and stats.during_async_ns > 0
    assert stats.post_records == 3 * KEYS
    [done] = stats.checkpoints
    assert done.id == 1 and done.bytes > 8 * KEYS and done.sync_ms == pytest.approx(sync_ms)
    assert done.async_ms > 0 and done.async_cpu_ms > 0
    # the checkpoint holds the state at its barrier: a restore works from it
    assert heap.send(events.encode_restore())[0] > 0


def test_a_second_barrier_waits_for_the_first_async_phase(heap: FlinkWorker,
                                                          tmp_path: Path) -> None:
    """Two barriers back to back: at most one checkpoint in flight, the second waits for the
    first one's asynchronous phase, and both complete in order."""
    heap.reset("heap")
    keys = np.arange(KEYS, dtype=np.int64)
    out = heap.send(events.encode_open(_lane((0, 0, 0, 0, 0, 0, 0))) + _updates(keys, 10)
                    + events.encode_checkpoint(1, str(tmp_path / "a"))
                    + events.encode_checkpoint(2, str(tmp_path / "b")) + events.encode_stats())
    _, wait_ms = events.decode_checkpoint(out[1])
    stats = events.decode_stats(out[2])
    assert [c.id for c in stats.checkpoints] == [1, 2]
    assert wait_ms > 0 and stats.checkpoints[1].wait_ms == pytest.approx(wait_ms)
    assert stats.checkpoints[0].bytes == stats.checkpoints[1].bytes


def test_with_two_in_flight_the_second_barrier_does_not_wait(heap: FlinkWorker,
                                                              tmp_path: Path) -> None:
    """max in flight 2 (Flink's max-concurrent-checkpoints 2): the second barrier's sync phase
    runs at once, its async phase queues behind the first on the checkpoint thread, records
    go on beside both, and they complete in order with the same contents."""
    heap.reset("heap")
    keys = np.arange(KEYS, dtype=np.int64)
    out = heap.send(events.encode_open(_lane((0, 0, 0, 0, 0, 0, 0))) + _updates(keys, 10)
                    + events.encode_checkpoint(1, str(tmp_path / "a"), 2)
                    + events.encode_checkpoint(2, str(tmp_path / "b"), 2)
                    + _updates(keys, 20) + events.encode_stats())
    _, wait_ms = events.decode_checkpoint(out[1])
    stats = events.decode_stats(out[2])
    assert wait_ms < 1.0 and stats.during_async_records > 0
    assert [c.id for c in stats.checkpoints] == [1, 2]
    assert stats.checkpoints[0].bytes == stats.checkpoints[1].bytes > 8 * KEYS
    with pytest.raises(ValueError, match=">= 1"):
        events.encode_checkpoint(3, str(tmp_path / "c"), 0)


def test_the_async_phase_reads_the_barriers_ttl_clock(heap: FlinkWorker, tmp_path: Path) -> None:
    """full_snapshot drops expired entries while Flink writes the checkpoint. Records right
    after the barrier move the lane's clock past every entry's expiry while the asynchronous
    phase still writes; the checkpoint still holds what the barrier's time says: the same bytes
    as a synchronous snapshot with the clock at the barrier (no record after it)."""
    keys = np.arange(KEYS, dtype=np.int64)
    later = np.arange(KEYS, KEYS + 1_000, dtype=np.int64)
    heap.reset("heap")
    out = heap.send(events.encode_open(_lane()) + _updates(keys, 500)
                    + events.encode_checkpoint(1, str(tmp_path / "async"))
                    + _updates(later, 1_000_000) + events.encode_stats())
    [async_ckpt] = events.decode_stats(out[1]).checkpoints
    heap.reset("heap")
    b = heap.batch().raw(events.encode_open(_lane()) + _updates(keys, 500))
    [sync_ckpt] = b.snapshot(1, tmp_path / "sync").flush()
    assert sync_ckpt["bytes"] > 8 * KEYS  # nothing had expired at the barrier
    assert async_ckpt.bytes == sync_ckpt["bytes"]


@pytest.fixture(scope="module")
def lanes_twice(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    root = tmp_path_factory.mktemp("twice")
    try:
        return [run_in_process(RunConfig(
            small_spec("sessions-churn", events=40_000), backends=("flink-heap",),
            strategies=("none", "full_snapshot"), checkpoint_root=str(root / f"ckpt{i}"),
            run_id=f"twice{i}")) for i in range(2)]
    finally:
        close_idle_workers()


def _rows(out: Any, strategy: str, metric: str) -> dict[tuple[int, int], float]:
    return {(r["task"], r["step"]): r["value"] for r in out.rows.to_pylist()
            if r["scenario"] == f"sessions-churn/flink-heap/{strategy}"
            and r["metric"] == metric}


def test_full_snapshot_checkpoint_bytes_are_identical_across_runs(lanes_twice: list[Any]
                                                                  ) -> None:
    first, second = lanes_twice
    sizes = _rows(first, "full_snapshot", "checkpoint_bytes")
    assert len(sizes) >= 6 and sizes == _rows(second, "full_snapshot", "checkpoint_bytes")
    # and full_snapshot really dropped something there
    none = _rows(first, "none", "checkpoint_bytes")
    assert sum(sizes.values()) < sum(none.values())


def test_the_lane_reports_the_checkpoint_model(lanes_twice: list[Any]) -> None:
    """Per checkpoint: sync, async (= upload), total = sync + async, async CPU, wait; per task:
    the sync share of busy time (0..1), async CPU seconds, JVM GC."""
    out = lanes_twice[0]
    sync = _rows(out, "none", "checkpoint_sync_ms")
    async_ = _rows(out, "none", "checkpoint_async_ms")
    total = _rows(out, "none", "checkpoint_total_ms")
    assert sync and sync.keys() == async_.keys() == total.keys()
    assert async_ == _rows(out, "none", "checkpoint_upload_ms")
    # per task (a job total is the tasks' maximum of each metric, maybe of different tasks)
    assert all(total[k] == pytest.approx(sync[k] + async_[k]) for k in sync if k[0] >= 0)
    assert _rows(out, "none", "checkpoint_async_cpu_ms").keys() == sync.keys()
    assert _rows(out, "none", "checkpoint_wait_ms").keys() == sync.keys()
    share = _rows(out, "none", "checkpoint_sync_share")
    assert share and all(0 < v < 1 for v in share.values())
    assert all(v > 0 for v in _rows(out, "none", "checkpoint_async_cpu_s").values())
    assert _rows(out, "none", "jvm_gc_count") and _rows(out, "none", "jvm_gc_ms")


@pytest.mark.parametrize("max_in_flight", [None, 3])
def test_the_specs_max_in_flight_reaches_every_ev_checkpoint(
        max_in_flight: int | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The lane sends the spec's ``[checkpoints] max_in_flight`` (default 8, the same setting
    statebench's lanes use) with every checkpoint barrier."""
    sent: list[int] = []
    real = events.encode_checkpoint

    def spy(checkpoint_id: int, folder: str, max_in_flight: int = 1) -> bytes:
        sent.append(max_in_flight)
        return real(checkpoint_id, folder, max_in_flight)

    monkeypatch.setattr(events, "encode_checkpoint", spy)
    spec = small_spec("sessions-churn", events=5_000)
    if max_in_flight is not None:
        spec = spec.with_overrides(checkpoints__max_in_flight=max_in_flight)
    try:
        run_in_process(RunConfig(spec, backends=("flink-heap",), strategies=("none",),
                                 checkpoint_root=str(tmp_path / "ckpt"), run_id="inflight"))
    finally:
        close_idle_workers()
    assert sent and set(sent) == {8 if max_in_flight is None else max_in_flight}


def test_a_pause_between_batches_is_counted_apart_from_the_loops(heap: FlinkWorker) -> None:
    """A collection while the JVM waits for its next batch (here one asked for by jcmd, as the
    checkpoint thread's allocation sets one off while Python encodes) is in gc_ms but not in
    the loops' share, so the lane charges it to busy time (``LaneStats.gc_outside_busy_ns``)."""
    java = ensure_worker_built().java
    jcmd = Path(java).with_name("jcmd")
    if not jcmd.exists():
        pytest.fail(f"no jcmd beside {java}: the JDK is incomplete")
    heap.reset("heap")
    keys = np.arange(3 * KEYS, dtype=np.int64)
    heap.send(events.encode_open(_lane((0, 0, 0, 0, 0, 0, 0))) + _updates(keys, 10))
    subprocess.run([str(jcmd), str(heap.pid), "GC.run"], check=True, capture_output=True,
                   timeout=60)
    [raw] = heap.send(_updates(keys, 20) + events.encode_stats())
    stats = events.decode_stats(raw)
    assert stats.gc_count >= 1  # the full collection of 300 k live entries at least
    assert 0 <= stats.gc_in_busy_ms < stats.gc_ms
    assert stats.gc_outside_busy_ns == (stats.gc_ms - stats.gc_in_busy_ms) * 1_000_000


def test_gc_outside_the_busy_windows_is_never_negative() -> None:
    """Pauses are read in whole ms at a window's two ends, so the loops' share can round above
    the total by a ms; what is charged is never below zero."""
    base = events.LaneStats(1, 1, 1, 0, [], 0, 0, [], [], 0, 0, gc_ms=5, gc_count=1,
                            gc_in_busy_ms=6)
    assert base.gc_outside_busy_ns == 0
