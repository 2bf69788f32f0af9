"""The Flink lane operator: one task's events applied to Flink's own keyed state backend.

Backends ``flink-heap`` and ``flink-rocksdb`` run each task in a JVM worker
(``backends.flink``) holding Flink 2.x's HeapKeyedStateBackend or RocksDBKeyedStateBackend with
the task's key-group range and max parallelism. The task's record batches cross as fixed binary
columns (``backends.flink.events``), and one Java loop applies them exactly as statebench's
operator does (``workloads/run/hotloop.py``), so the rows are the same metrics on the same
barriers as :class:`workloads.run.operator.KeyedOperator`:

* Time: Flink's TTL is processing time only, so the lane's TtlTimeProvider *is* the scenario's
  clock: each record's timestamp (event time, and simulated processing time, which statebench's
  operator also sets from the timestamps), or a scaled wall clock from the run's start for the
  wall-clock-driven scenarios (ProcessingTime with ``compaction_filter``), as statebench's.
  Flink's compaction filter reads the same provider.
* Barriers: checkpoints (Flink's own ``snapshot()``) and samples at the same logical times,
  cut into the same event ranges; a sample counts what Flink physically holds (live vs expired
  by each unit's TTL timestamp at the barrier time) without touching TTL.
* Throughput: post-warm-up records over busy time = the Java loop's nanoseconds (one
  ``System.nanoTime()`` per record, the same log-linear latency buckets), the Python column
  encoding, and checkpoints (Flink's sync + async time). The pipe transfer is input, like Spark's.

Not measured, because Flink keeps no such counters: ``cleanup_removed_*`` and the cleanup lag
rows; and ``restore_ms`` (no restore of Flink's handles yet). One JVM per Python process is kept
between tasks (``reset()`` opens a fresh backend): a JVM start per task would cost more than a
small task's work.
"""

from __future__ import annotations

import atexit
import threading
import time
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa

import backends
from backends.flink import FlinkWorker, events
from backends.flink.lanes import LANE_KINDS, not_applicable_reason
from backends.flink.spec import ttl_fields
from backends.keygroups import KeyGroupRange
from backends.ttl_config import DEFAULT_PERIODIC_COMPACTION_MS, DEFAULT_QUERY_TIME_AFTER_NUM_ENTRIES
from workloads.ops import Op
from workloads.run import checkpoints as ck
from workloads.run import tempdirs
from workloads.run.config import OperatorConfig, wall_clock_driven
from workloads.run.metrics import (
    ATTEMPT,
    CHECKPOINT_METRICS,
    LATENCY_BUCKET,
    NO_TIME,
    LatencyBuckets,
    MetricRows,
    Row,
)
from workloads.run.operator import (
    CHECKPOINT,
    INFINITY,
    Barrier,
    ExpiredValueReturned,
    OutOfOrderInput,
    barrier_schedule,
    local_root,
    ttl_config,
)

# ------------------------------------------------------------------------------------------------
# One idle JVM per process, reused by the next task (see the module docstring)
# ------------------------------------------------------------------------------------------------

_idle: list[FlinkWorker] = []
_idle_lock = threading.Lock()


def _acquire(kind: str, **options: Any) -> FlinkWorker:
    with _idle_lock:
        worker = _idle.pop() if _idle else None
    if worker is None:
        return FlinkWorker(kind, **options)
    try:
        worker.reset(kind, **options)
    except BaseException:
        worker.close()
        raise
    return worker


def _release(worker: FlinkWorker) -> None:
    with _idle_lock:
        if not _idle:
            _idle.append(worker)
            return
    worker.close()


@atexit.register
def close_idle_workers() -> None:
    """Stops the kept JVM (at exit; tests call it to leave no process behind)."""
    with _idle_lock:
        workers, _idle[:] = list(_idle), []
    for worker in workers:
        worker.close()


# ------------------------------------------------------------------------------------------------
# The operator
# ------------------------------------------------------------------------------------------------


def _compaction_options(strategy: str) -> tuple[int, int | None]:
    """(query_time_after_num_entries, periodic compaction ms) the worker opens with: Flink 2.x
    sets both per backend, so they come from the scenario's compaction_filter arguments."""
    parsed = backends.parse_strategy(strategy)
    if parsed.name != "compaction_filter":
        return DEFAULT_QUERY_TIME_AFTER_NUM_ENTRIES, None
    query = parsed.args[0] if parsed.args else DEFAULT_QUERY_TIME_AFTER_NUM_ENTRIES
    periodic = parsed.args[1] if len(parsed.args) > 1 else DEFAULT_PERIODIC_COMPACTION_MS
    return query, periodic


def _local_checkpoint_dir(target: str) -> str:
    if "://" in target and not target.startswith("file://"):
        raise ValueError(
            f"checkpoint folder {target}: Flink's lane writes checkpoints through a local "
            "FsCheckpointStreamFactory; give a local checkpoint root"
        )
    return target.removeprefix("file://")


class FlinkLaneOperator:
    """One task's Flink backend in a JVM worker, fed the task's batches (TaskOperator)."""

    def __init__(
        self, cfg: OperatorConfig, task: int, attempt: int = 0, attempt_id: int | None = None
    ) -> None:
        if cfg.backend not in LANE_KINDS:
            raise ValueError(f"'{cfg.backend}' is not a Flink lane ({', '.join(LANE_KINDS)})")
        reason = not_applicable_reason(cfg.backend, cfg.strategy)
        if reason is not None:
            raise RuntimeError(f"{cfg.scenario.label}: {reason}; the runner should have skipped it")
        self.cfg = cfg
        self.task = task
        self.attempt = attempt
        self.attempt_id = attempt if attempt_id is None else attempt_id
        self.kind = LANE_KINDS[cfg.backend]
        self.rows = MetricRows(cfg.scenario)
        self._wall = wall_clock_driven(cfg.time_characteristic, cfg.strategy)
        counts = dict(cfg.task_counts)
        self._warm_left = int(counts.get(task, 0) * cfg.warmup_fraction)
        self._python_ns = 0.0  # column encoding after the warm-up (pro rata per batch)
        self._checkpoint_ns = 0.0
        self._state_ops = 0
        self._last_ts = -INFINITY
        self._uses_map = "map" in cfg.state_types
        self._barriers = barrier_schedule(cfg)
        self._bi = 0
        self._next_barrier = self._barriers[0].time_ms if self._barriers else INFINITY
        self._ckpt_target = self._checkpoint_target()
        self._local = tempdirs.make(f"statebench-flink-t{task}-", dir=local_root(cfg))
        self.worker: FlinkWorker | None = None
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def _open(self) -> None:
        cfg = self.cfg
        query, periodic = _compaction_options(cfg.strategy)
        self.worker = _acquire(
            self.kind,
            max_parallelism=cfg.max_parallelism,
            key_group_range=KeyGroupRange.of_operator(self.task, cfg.parallelism,
                                                      cfg.max_parallelism),
            path=self._local,
            query_time_after_num_entries=query,
            periodic_compaction_ms=periodic,
            incremental_checkpoints=self.kind == "rocksdb" and cfg.checkpoint_mode == "incremental",
        )
        # Flink's TTL is processing time: the lane's provider is driven by the scenario's clock
        ttl = ttl_config(replace(cfg, time_characteristic="ProcessingTime"))
        spec = events.LaneSpec(
            value_type=cfg.value_type,
            state_types=cfg.state_types,
            ttl_fields=ttl_fields(ttl, query, periodic),
            wall_clock=self._wall,
            speedup=cfg.time_speedup,
            start_ms=cfg.start_ms,
            warmup_records=self._warm_left,
            verify=cfg.ttl_ms is not None,
            latency=cfg.measure_latency,
        )
        self.worker.send(events.encode_open(spec))

    def _checkpoint_target(self) -> str | None:
        cfg = self.cfg
        if cfg.checkpoint_root is None or cfg.checkpoint_interval_ms <= 0:
            return None
        folder = ck.task_dir(cfg.checkpoint_root, cfg.run_id, ck.slug(cfg.scenario.label),
                             cfg.repetition, self.task)
        ck.remove_earlier_attempts(folder, self.attempt_id)
        return _local_checkpoint_dir(ck.attempt_dir(folder, self.attempt_id))

    # ------------------------------------------------------------------ the stream
    def process(self, batch: pa.RecordBatch) -> None:
        """Apply a batch of this task's events (EVENT_SCHEMA columns, ts non-decreasing): the
        event ranges between barriers and the barriers themselves go out as one frame."""
        n = batch.num_rows
        if n == 0:
            return
        start = time.perf_counter_ns()
        ts = batch.column("ts").to_numpy(zero_copy_only=False)
        if ts[0] < self._last_ts or (n > 1 and bool((ts[1:] < ts[:-1]).any())):
            raise OutOfOrderInput(
                f"task {self.task}: events are not sorted by ts (got {int(ts[0])} after "
                f"{self._last_ts}); sort each task's events by time before the operator"
            )
        last = int(ts[-1])
        self._last_ts = last
        ops = batch.column("op").to_numpy(zero_copy_only=False)
        self._state_ops += n + int(np.count_nonzero(ops == int(Op.VALUE_RMW)))
        b = self.worker.batch()
        fired: list[tuple[Barrier, bool]] = []
        lo = 0
        while self._next_barrier <= last:
            cut = int(np.searchsorted(ts, self._next_barrier, "left"))
            if cut > lo:
                b.raw(events.encode_apply(batch.slice(lo, cut - lo), self.cfg.value_type,
                                          self._uses_map))
                lo = cut
            fired.append((self._add_barrier(b), self._warm_left - cut <= 0))
        if lo < n:
            b.raw(events.encode_apply(batch.slice(lo, n - lo), self.cfg.value_type,
                                      self._uses_map))
        post = n - min(n, max(self._warm_left, 0))
        self._python_ns += (time.perf_counter_ns() - start) * post / n
        self._warm_left -= n
        self._record(fired, b.flush())

    def _add_barrier(self, b: Any) -> Barrier:
        barrier = self._barriers[self._bi]
        self._bi += 1
        self._next_barrier = (
            self._barriers[self._bi].time_ms if self._bi < len(self._barriers) else INFINITY
        )
        if barrier.kind == CHECKPOINT:
            assert self._ckpt_target is not None
            b.snapshot(barrier.index, self._ckpt_target)
        else:
            b.raw(events.encode_sample(None if self._wall else barrier.time_ms), reads=1)
        return barrier

    def _record(self, fired: list[tuple[Barrier, bool]], results: list[Any]) -> None:
        """Rows of the barriers fired in one frame (results in the same order); each barrier
        says whether the warm-up was over when it fired."""
        add, task = self.rows.add, self.task
        for (barrier, warm_done), result in zip(fired, results):
            step, t = barrier.index, barrier.time_ms
            if barrier.kind == CHECKPOINT:
                total_ms = result["sync_ms"] + result["async_ms"]
                # a checkpoint inside the warm-up is not busy time (as KeyedOperator's)
                if warm_done:
                    self._checkpoint_ns += total_ms * 1e6
                if self.cfg.emit_series:
                    values = (result["bytes"], result["checkpointed_bytes"], result["sync_ms"],
                              total_ms)
                    for metric, value in zip(CHECKPOINT_METRICS, values):
                        unit = "bytes" if metric.endswith("bytes") else "ms"
                        add(task, step, t, metric, value, unit)
            else:
                s = events.decode_sample(result)
                add(task, step, t, "live_entries", s.live, "entries")
                add(task, step, t, "expired_present_entries", s.expired, "entries")
                add(task, step, t, "logical_bytes", s.logical_bytes, "bytes")
                add(task, step, t, "physical_bytes", s.physical_bytes, "bytes")

    # ------------------------------------------------------------------ the end
    def finish(self) -> list[Row]:
        """Fire the remaining barriers, emit the summary rows, give the JVM back."""
        b = self.worker.batch()
        fired = []
        while self._bi < len(self._barriers):
            fired.append((self._add_barrier(b), self._warm_left <= 0))
        b.raw(events.encode_stats(), reads=1)
        results = b.flush()
        self._record(fired, results[:-1])
        stats = events.decode_stats(results[-1])
        cfg, task, rep, add = self.cfg, self.task, self.cfg.repetition, self.rows.add
        busy_ns = stats.busy_ns + self._python_ns + self._checkpoint_ns
        rate = stats.post_records / (busy_ns / 1e9) if busy_ns > 0 else 0.0
        add(task, rep, NO_TIME, "records", stats.records, "count")
        add(task, rep, NO_TIME, "records_per_s", rate, "records/s")
        ops_ratio = self._state_ops / stats.records if stats.records else 1.0
        add(task, rep, NO_TIME, "state_ops_per_s", rate * ops_ratio, "ops/s")
        latency = LatencyBuckets()
        for index, count in stats.buckets:
            latency.add_bucket(index, count)
        for metric, value in latency.percentiles_us().items():
            add(task, rep, NO_TIME, metric, value, "us")
        for index, count in latency.nonzero():
            add(task, index, rep, LATENCY_BUCKET, count, "count")  # internal: time = repetition
        add(task, rep, NO_TIME, "expired_returned", stats.expired_returned, "count")
        add(task, rep, NO_TIME, ATTEMPT, self.attempt, "count")
        self.close()
        if cfg.never_return_expired and stats.expired_returned:
            raise ExpiredValueReturned(
                f"{cfg.scenario.label} task {task}: {stats.expired_returned} expired value(s) "
                "returned under NeverReturnExpired by Flink"
            )
        return self.rows.rows

    def close(self) -> None:
        """Give the JVM back for the next task (its backend is disposed on reuse or exit), then
        delete the task's RocksDB folder. A worker that failed is closed, not kept."""
        worker, self.worker = self.worker, None
        if worker is not None:
            try:
                worker.reset("heap")  # disposes this task's backend before its folder goes
            except BaseException:
                worker.close()
            else:
                _release(worker)
        tempdirs.remove(self._local)
