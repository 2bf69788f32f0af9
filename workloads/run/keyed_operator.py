"""The keyed operator: applies a task's events to keyed state and measures it.

One :class:`KeyedOperator` per task (operator index): it owns one backend whose key-group range
is the task's (``KeyGroupRange.of_operator``), registers the states the workload's ops need
(fixed names ``value``, ``list``, ``map``, ``reducing``, ``aggregating``) with the TTL config of
the spec plus exactly one cleanup strategy, and processes the task's events in timestamp order.
:func:`workloads.run.tasks.run_operator_batches` drives any number of tasks from one stream of
record batches (the body of the Spark engine's operator stage and of the in-process engine
alike, so both measure the same code); which operator runs a task is chosen by backend kind
there, never by the engine.

Time (the TTL clock):
* EventTime: the backend's event clock is set to each record's timestamp.
* ProcessingTime: paced (``workloads.run.pacing``). Every strategy runs on one wall-driven
  ``PacedClock`` (a ``ScaledClock(time_speedup)``: one real ms = ``time_speedup`` clock ms)
  whose time is the run's start when the task starts, and each record is released to the
  operator once the clock reaches its timestamp, so the TTL clock, RocksDB's native TTL (the
  compaction filter reads the wall clock) and the records' time agree for every strategy.
  Barriers wait for their time too. Waiting is not busy time; how far behind its schedule a task
  ran is reported as ``schedule_lag_*_ms`` and ``late_records_share``. Paced runs follow the wall
  clock, so their state sizes and timings are not bit-identical from run to run.

Logical-time barriers, fired before the first record at or after their time: checkpoints every
``checkpoint_interval_ms`` (id ``k`` at ``start + k * interval``, only inside the run so every
task takes the same set) and metric samples every ``sample_interval_ms`` (step ``k``, the last at
or after the end, fired at end of input). Samples are measurement and their time is excluded from
throughput; checkpoints are part of the system under test.

Checkpoints follow the engines' model with a queue (``checkpoints.CheckpointPipeline``): at a
barrier the task runs the synchronous phase (``checkpoint_sync_ms``: the heap's dict copies,
RocksDB's iterators or flush + hard links) and goes on processing records while the asynchronous
phase (encoding, writing, commit) queues behind the earlier ones on the backend's one snapshot
thread. It waits first only when the spec's ``[checkpoints] max_in_flight`` checkpoints are in
flight (``checkpoint_wait_ms``, for the oldest). Flink's task never waits for an asynchronous
phase (its coordinator delays the next trigger instead); statebench keeps every logical barrier,
so checkpoint contents stay exact, and queues the asynchronous phases where Flink would delay the
trigger: it may do more asynchronous work than Flink would, never less (``max_in_flight = 1``:
every barrier waits for the previous asynchronous phase). Each checkpoint's rows are emitted
when its asynchronous phase has finished, in id order (with the barrier's step and time); at the
end of input the task waits for all of them, which is not busy time, before its summary rows and
the restore.

Throughput (``records_per_s``) is per task: records after the warm-up (the first
``warmup_fraction`` of the task's records) over the busy time spent on them: converting input
batches, the state loop, the synchronous checkpoint phases and barrier waits. Waiting for input
(Spark's shuffle and Arrow transfer), metric samples, the asynchronous checkpoint phases (another
thread) and the final restore are not busy time. What the asynchronous thread costs the task
(CPU, and the GIL wherever it runs Python code) shows in the state loop's rate while it runs:
``records_per_s_during_async`` against ``records_per_s_outside_async`` (loop records over loop
busy time; "during" is while any checkpoint is in flight, i.e. the snapshot thread is busy with
one of the queued phases; a chunk of records that straddles the end of the last one is split in
proportion to time).
``checkpoint_sync_share`` is (sync + wait) / busy time, ``checkpoint_async_cpu_s`` the
asynchronous threads' CPU. Series, checkpoint and restore rows come from repetition 0 only;
later repetitions take no samples and measure throughput and latency.
"""

import gc
import itertools
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from backends.keygroups import KeyGroupRange
from backends.storage.registry import storage_backend
from workloads.ops import Op
from workloads.payloads import PayloadColumn
from workloads.run import checkpoints as ck
from workloads.run import run_tempdirs
from workloads.run.barriers import CHECKPOINT, INFINITY, Barrier, barrier_schedule
from workloads.run.config import OperatorConfig, local_root, wall_clock_driven
from workloads.run.hotloop import build_loop
from workloads.run.metrics import (
    ATTEMPT,
    CHECKPOINT_ASYNC_METRICS,
    CHECKPOINT_METRICS,
    CHECKPOINT_PHASE_METRICS,
    CHECKPOINT_SUMMARY_METRICS,
    CLEANUP_MECHANISMS,
    LAG_BUCKET,
    LATENCY_BUCKET,
    NO_TIME,
    ROCKSDB_SERIES,
    LatencyBuckets,
    MetricRows,
    Row,
    lag_metric,
    lag_stats,
    scan_states,
)
from workloads.run.pacing import PacedClock, Pacer
from workloads.run.planted import with_planted_cost
from workloads.run.state_setup import descriptors, make_clock, register_states
from workloads.run.task_checks import fail_if_expired_returned, sorted_times

_ZEROS = itertools.repeat(0)  # the map_key column of a workload without map state


def _pylist(column: pa.Array) -> list:
    """An Arrow integer column as a Python list (via numpy: faster than ``to_pylist``)."""
    return column.to_numpy(zero_copy_only=False).tolist()




@dataclass
class _Throughput:
    """Records and busy nanoseconds after the warm-up, and totals; the busy ns of checkpoint
    phases (sync + barrier waits), and the state loop's records and ns while an asynchronous
    checkpoint phase ran beside it and while none did."""

    warm_left: int
    records: int = 0
    state_ops: int = 0
    post_records: int = 0
    post_ns: float = 0.0
    checkpoint_ns: float = 0.0
    during_records: float = 0.0
    during_ns: float = 0.0
    outside_records: float = 0.0
    outside_ns: float = 0.0

    def rate(self) -> float:
        return self.post_records / (self.post_ns / 1e9) if self.post_ns > 0 else 0.0

    def split_async(self, start_ns: float, end_ns: float, records: int, busy_ns: float,
                    async_end_ns: float | None) -> None:
        """Attribute a chunk of the loop (post-warm-up ``records`` over ``busy_ns``, processed
        between ``start_ns`` and ``end_ns``) to during/outside an asynchronous phase that ends
        at ``async_end_ns`` (math.inf: still running; None: none in flight)."""
        if records <= 0:
            return
        if async_end_ns is None or async_end_ns <= start_ns:
            share = 0.0
        elif async_end_ns >= end_ns:
            share = 1.0
        else:
            share = (async_end_ns - start_ns) / (end_ns - start_ns)
        self.during_records += records * share
        self.during_ns += busy_ns * share
        self.outside_records += records * (1 - share)
        self.outside_ns += busy_ns * (1 - share)


class KeyedOperator:
    """One task's backend, states, clock and measurements (see the module docstring)."""

    def __init__(
        self, cfg: OperatorConfig, task: int, attempt: int = 0, attempt_id: int | None = None
    ) -> None:
        self.cfg = cfg
        self.task = task
        self.attempt = attempt  # Spark's attemptNumber: 0 first, 1 on the first retry, ...
        self.attempt_id = attempt if attempt_id is None else attempt_id  # orders folders
        self._local = run_tempdirs.make(f"statebench-t{task}-", dir=local_root(cfg))  # owner-tagged
        self.clock = make_clock(cfg)
        self.backend: Any = None
        try:
            self.backend = self._open_backend()
            self._descs = self._state_descriptors()
            calls = self._register_states(self.backend)
            if self.backend.not_applicable:
                raise RuntimeError(
                    f"{cfg.scenario.label}: the backend reports strategy parts that do not apply"
                    f" ({self.backend.not_applicable}); the runner should have skipped it"
                )
        except BaseException:
            self.close()
            raise
        self.rows = MetricRows(cfg.scenario)
        self.latency = LatencyBuckets()
        counts = dict(cfg.task_counts)
        self.tp = _Throughput(warm_left=int(counts.get(task, 0) * cfg.warmup_fraction))
        self.expired_returned = 0
        self._last_ts = -INFINITY
        self._loop_t: Any = None
        self._payloads = PayloadColumn(cfg.value_type)
        self._uses_map = "map" in cfg.state_types
        self._pacer = Pacer(self.clock) if isinstance(self.clock, PacedClock) else None
        wall = self._pacer is not None or wall_clock_driven(cfg.time_characteristic, cfg.strategy)
        if wall:
            set_time = None
        elif cfg.time_characteristic == "EventTime":
            set_time = self.backend.event_clock.set  # what backend.set_event_time does
        else:
            set_time = self.clock.set
        self._shadow: dict | None = {} if cfg.ttl_ms is not None else None
        self._loop = self._make_loop(calls, set_time)
        self._barriers = barrier_schedule(cfg)
        self._bi = 0
        self._next_barrier = self._barriers[0].time_ms if self._barriers else INFINITY
        self._last_checkpoint: tuple[Any, int, int] | None = None  # (handle, id, barrier ms)
        target = self._checkpoint_target()
        self._ckpt = (None if target is None
                      else ck.CheckpointPipeline(self.backend, target, cfg.checkpoint_mode,
                                                 cfg.checkpoint_max_in_flight))

    # ------------------------------------------------------------------ setup
    # Hooks a task operator of another input shape overrides (workloads.operators.task): the
    # states, their registration, the record loop, the loop's columns and its state-op count.
    def _state_descriptors(self) -> dict[str, Any]:
        return descriptors(self.cfg)

    def _register_states(self, backend: Any) -> Any:
        """Register this task's states on ``backend`` (its own, or a restored one)."""
        return register_states(backend, descriptors(self.cfg) if backend is not self.backend
                               else self._descs)

    def _make_loop(self, calls: Any, set_time: Any) -> Any:
        cfg = self.cfg
        set_key = with_planted_cost(cfg.strategy, self.backend.set_current_key)  # test knob
        return build_loop(
            calls, set_key, set_time, self.clock.now, self._shadow,
            cfg.ttl_ms, stamp=cfg.measure_latency, refresh=cfg.update_type == "OnReadAndWrite",
        )

    def _columns(self, batch: pa.RecordBatch, ts_np: np.ndarray) -> tuple[Any, ...]:
        """The loop's columns of a batch (the first is the keys, the third the ops)."""
        return (
            _pylist(batch.column("key")),
            ts_np.tolist(),
            _pylist(batch.column("op")),
            self._payloads.values(batch),
            _pylist(batch.column("map_key")) if self._uses_map else _ZEROS,
        )

    def _state_ops(self, cols: tuple[Any, ...], count: int) -> int:
        """State calls of ``count`` records (read-modify-write counts two)."""
        return count + cols[2].count(Op.VALUE_RMW)

    def _open_backend(self) -> Any:
        cfg = self.cfg
        options: dict[str, Any] = {
            "max_parallelism": cfg.max_parallelism,
            "key_group_range": KeyGroupRange.of_operator(
                self.task, cfg.parallelism, cfg.max_parallelism
            ),
        }
        kind = storage_backend(cfg.backend)
        options.update(kind.options(self._local, cfg.rocksdb_options))
        return kind.open(clock=self.clock, **options)

    def _checkpoint_target(self) -> str | None:
        return ck.task_attempt_dir(self.cfg, self.task, self.attempt_id)

    def _async_end_ns(self) -> float | None:
        """When the in-flight asynchronous checkpoint phases ended (math.inf: one still runs;
        None: none in flight)."""
        pipeline = self._ckpt
        if pipeline is None or not pipeline.pending:
            return None
        end = pipeline.async_end_ns()
        return math.inf if end is None else end

    # ------------------------------------------------------------------ the stream
    def process(self, batch: pa.RecordBatch) -> None:
        """Apply a batch of this task's events (EVENT_SCHEMA columns, ts non-decreasing)."""
        n = batch.num_rows
        if n == 0:
            return
        start = time.perf_counter_ns()
        ts_np = sorted_times(batch, self._last_ts, self.task)
        cols = self._columns(batch, ts_np)
        post_in_batch = n - min(n, max(self.tp.warm_left, 0))
        self.tp.post_ns += (time.perf_counter_ns() - start) * post_in_batch / n
        last = int(ts_np[-1])
        self._last_ts = last
        lo = 0
        while self._next_barrier <= last:
            cut = int(np.searchsorted(ts_np, self._next_barrier, "left"))
            if cut > lo:
                self._release(cols, ts_np, lo, cut)
                lo = cut
            if self._pacer is not None:  # a barrier, as a record, happens at its time
                self._pacer.start()
                self.clock.wait_until(self._next_barrier)
            self._fire_barrier()
        if lo < n:
            self._release(cols, ts_np, lo, n)

    def _release(self, cols: tuple[Any, ...], ts_np: np.ndarray, lo: int, hi: int) -> None:
        """Apply records ``lo..hi-1``: at once, or paced, each chunk once it is due."""
        pacer = self._pacer
        if pacer is None:
            self._apply(cols, lo, hi)
            return
        while lo < hi:
            end = pacer.release(ts_np, lo, hi)
            self._apply(cols, lo, end)
            lo = end

    def _apply(self, cols: tuple[Any, ...], lo: int, hi: int) -> None:
        count = hi - lo
        if count == len(cols[0]):
            part = cols
        else:
            part = tuple(c if c is _ZEROS else c[lo:hi] for c in cols)
        tp = self.tp
        skip = min(max(tp.warm_left, 0), count)
        if self.cfg.measure_latency:
            stamps: list[int] = []  # list.append + one fromiter beat array("q").append here
            bad, self._loop_t = self._loop(*part, stamps.append, self._loop_t)
            stamps.append(time.perf_counter_ns())
            if skip < count:
                lat = np.diff(np.fromiter(stamps, dtype=np.int64, count=len(stamps)))
                self.latency.add(lat[skip:])
                busy = stamps[-1] - stamps[skip]
                tp.post_ns += busy
                if self._ckpt is not None:
                    tp.split_async(stamps[skip], stamps[-1], count - skip, busy,
                                   self._async_end_ns())
        else:
            t0 = time.perf_counter_ns()
            bad, self._loop_t = self._loop(*part, None, self._loop_t)
            if skip < count:
                t1 = time.perf_counter_ns()
                busy = (t1 - t0) * (count - skip) / count
                tp.post_ns += busy
                if self._ckpt is not None:
                    tp.split_async(t1 - busy, t1, count - skip, busy, self._async_end_ns())
        if self._ckpt is not None and self._ckpt.pending:
            for done in self._ckpt.poll():
                self._checkpoint_completed(done)
        tp.warm_left -= skip
        tp.post_records += count - skip
        tp.records += count
        tp.state_ops += self._state_ops(part, count)
        self.expired_returned += bad

    def _fire_barrier(self) -> None:
        barrier = self._barriers[self._bi]
        self._bi += 1
        self._next_barrier = (
            self._barriers[self._bi].time_ms if self._bi < len(self._barriers) else INFINITY
        )
        if barrier.kind == CHECKPOINT:
            self._checkpoint(barrier)
        else:
            self._sample(barrier)

    def _checkpoint(self, barrier: Barrier) -> None:
        """A checkpoint barrier: wait if max_in_flight checkpoints are in flight, run the
        synchronous phase (both busy time), and leave the asynchronous phase queued."""
        pipeline = self._ckpt
        assert pipeline is not None
        wait_ms, completed = pipeline.wait_for_slot()
        for done in completed:
            self._checkpoint_completed(done)
        sync_ms = pipeline.start(barrier.index, barrier.time_ms, wait_ms)
        if self.tp.warm_left <= 0:
            busy = (wait_ms + sync_ms) * 1e6
            self.tp.post_ns += busy
            self.tp.checkpoint_ns += busy

    def _checkpoint_completed(self, done: ck.Completed | None) -> None:
        """Rows of a checkpoint whose asynchronous phase finished (barrier's step and time)."""
        if done is None:
            return
        self._last_checkpoint = (done.handle, done.checkpoint_id, done.barrier_ms)
        if not self.cfg.emit_series:
            return
        nums = done.numbers
        add, task, step, t = self.rows.add, self.task, done.checkpoint_id, done.barrier_ms
        values = (nums.total_bytes, nums.uploaded_bytes, nums.sync_ms, nums.total_ms)
        for metric, value in zip(CHECKPOINT_METRICS, values):
            add(task, step, t, metric, value, "bytes" if metric.endswith("bytes") else "ms")
        for metric in CHECKPOINT_PHASE_METRICS:  # upload == async on a local target
            add(task, step, t, metric, nums.async_ms, "ms")
        for metric, value in zip(CHECKPOINT_ASYNC_METRICS, (nums.async_cpu_ms, done.wait_ms)):
            add(task, step, t, metric, value, "ms")

    def _checkpoint_summary(self) -> None:
        """Per task: sync share, the loop's rate during and outside asynchronous phases, and
        the asynchronous threads' CPU seconds (rates omitted when no record fell there)."""
        tp, add, task, rep = self.tp, self.rows.add, self.task, self.cfg.repetition
        assert self._ckpt is not None
        share = tp.checkpoint_ns / tp.post_ns if tp.post_ns > 0 else 0.0
        rates = {
            "records_per_s_during_async": (tp.during_records, tp.during_ns),
            "records_per_s_outside_async": (tp.outside_records, tp.outside_ns),
        }
        for metric, unit in CHECKPOINT_SUMMARY_METRICS:
            if metric == "checkpoint_sync_share":
                add(task, rep, NO_TIME, metric, share, unit)
            elif metric == "checkpoint_async_cpu_s":
                add(task, rep, NO_TIME, metric, self._ckpt.async_cpu_ms / 1e3, unit)
            else:
                records, ns = rates[metric]
                if records > 0 and ns > 0:
                    add(task, rep, NO_TIME, metric, records / (ns / 1e9), unit)

    def _sample(self, barrier: Barrier) -> None:
        wall = self._pacer is not None or wall_clock_driven(self.cfg.time_characteristic,
                                                              self.cfg.strategy)
        now = self.clock.now() if wall else barrier.time_ms
        s = scan_states(self.backend, self._descs, self.cfg.ttl_ms, now)
        add, task, step, t = self.rows.add, self.task, barrier.index, barrier.time_ms
        add(task, step, t, "live_entries", s.live, "entries")
        add(task, step, t, "expired_present_entries", s.expired, "entries")
        add(task, step, t, "logical_bytes", s.logical_bytes, "bytes")
        add(task, step, t, "expired_present_bytes", s.expired_bytes, "bytes")
        if storage_backend(self.backend.kind).rocksdb_statistics:
            stats = self.backend.rocksdb_stats()
            for metric, key, unit in ROCKSDB_SERIES:
                value = stats.get(key)
                if value is not None:  # statistics off, or no flush yet (write amplification)
                    add(task, step, t, metric, value, unit)
        # physical: what the backend holds (RocksDB: SST files + memtables; heap: the bytes of
        # the Python objects its states hold, each counted once, deterministic)
        add(task, step, t, "physical_bytes", self.backend.physical_bytes(), "bytes")

    # ------------------------------------------------------------------ the end
    def finish(self) -> list[Row]:
        """Fire the remaining barriers, emit the summary rows, restore once, close."""
        while self._bi < len(self._barriers):
            self._fire_barrier()
        if self._ckpt is not None:  # the phases still in flight: waited for, not busy time
            for done in self._ckpt.wait_all():
                self._checkpoint_completed(done)
        cfg, task, rep = self.cfg, self.task, self.cfg.repetition
        add = self.rows.add
        tp = self.tp
        rate = tp.rate()
        add(task, rep, NO_TIME, "records", tp.records, "count")
        add(task, rep, NO_TIME, "records_per_s", rate, "records/s")
        ops_ratio = tp.state_ops / tp.records if tp.records else 1.0
        add(task, rep, NO_TIME, "state_ops_per_s", rate * ops_ratio, "ops/s")
        for metric, value in self.latency.percentiles_us().items():
            add(task, rep, NO_TIME, metric, value, "us")
        for index, count in self.latency.nonzero():
            add(task, index, rep, LATENCY_BUCKET, count, "count")  # internal: time = repetition
        add(task, rep, NO_TIME, "expired_returned", self.expired_returned, "count")
        add(task, rep, NO_TIME, ATTEMPT, self.attempt, "count")
        if self._pacer is not None:
            for metric, value in self._pacer.summary().items():
                unit = "share" if metric.endswith("share") else "ms"
                add(task, rep, NO_TIME, metric, value, unit)
        if self._ckpt is not None:
            self._checkpoint_summary()
        if cfg.ttl_ms is not None:
            self._cleanup_rows()
        if cfg.emit_series and cfg.restore_at_end and self._last_checkpoint is not None:
            handle, checkpoint_id, barrier_ms = self._last_checkpoint
            ms = ck.timed_restore(
                cfg.backend, handle, make_clock(cfg), local_root(cfg),
                self._register_states,
                max_parallelism=cfg.max_parallelism,
                key_group_range=KeyGroupRange.of_operator(task, cfg.parallelism,
                                                          cfg.max_parallelism),
                **storage_backend(cfg.backend).options(None, cfg.rocksdb_options),
            )
            add(task, checkpoint_id, barrier_ms, "restore_ms", ms, "ms")
        self.close()
        fail_if_expired_returned(cfg, task, self.expired_returned)
        return self.rows.rows

    def _cleanup_rows(self) -> None:
        counts = self.backend.cleanup_counts()
        task, rep, add = self.task, self.cfg.repetition, self.rows.add
        for mech in CLEANUP_MECHANISMS:
            total = sum(c.get(mech, 0) for c in counts.values())
            add(task, rep, NO_TIME, f"cleanup_removed_{mech}", total, "entries")
        for mechanism, hist in self.backend.cleanup_lags().items():
            for floor, count in hist.buckets.items():  # internal: time = repetition
                add(task, floor, rep, LAG_BUCKET + mechanism, count, "count")
            for stat, value in lag_stats(hist.buckets, hist.max).items():
                add(task, rep, NO_TIME, lag_metric(mechanism, stat), value, "ms")

    def close(self) -> None:
        """Close the backend, then delete its folder once nothing references it any more.

        The order matters: RocksDB handles still alive after ``close()`` (the backend's closures
        form reference cycles) flush when the garbage collector frees them, and a flush into a
        deleted folder fails and makes RocksDB sleep a full second before it gives up."""
        backend = self.backend
        self.backend = None
        self._loop = None
        self._ckpt = None  # the backend's close() cancels and waits for the checkpoints in flight
        if backend is not None:
            backend.close()
            if storage_backend(backend.kind).holds_native_handles:
                del backend
                gc.collect()
        run_tempdirs.remove(self._local)
