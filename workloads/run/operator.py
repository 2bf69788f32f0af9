"""The keyed operator: applies a task's events to keyed state and measures it.

One :class:`KeyedOperator` per task (operator index): it owns one backend whose key-group range
is the task's (``KeyGroupRange.of_operator``), registers the states the workload's ops need
(fixed names ``value``, ``list``, ``map``, ``reducing``, ``aggregating``) with the TTL config of
the spec plus exactly one cleanup strategy, and processes the task's events in timestamp order.
:func:`run_operator_batches` drives any number of tasks from one stream of record batches: it is
the body of the Spark engine's operator stage (``mapInArrow``) and of the in-process engine
alike, so both measure the same code. Which operator runs a task is chosen by backend kind in
:func:`task_operator`, never by the engine.

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

from __future__ import annotations

import gc
import itertools
import math
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

import backends
from backends.keygroups import KeyGroupRange
from workloads.ops import Op
from workloads.payloads import PayloadColumn, state_type
from workloads.run import checkpoints as ck
from workloads.run import tempdirs
from workloads.run.config import STATE_NAMES, OperatorConfig, paced, wall_clock_driven
from workloads.run.hotloop import StateCalls, build_loop
from workloads.run.keying import tasks_for_keys
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

_ZEROS = itertools.repeat(0)  # the map_key column of a workload without map state
CHECKPOINT, SAMPLE = 0, 1
INFINITY = 1 << 62


class ExpiredValueReturned(AssertionError):
    """A state returned a value that had expired, under NeverReturnExpired: a backend bug."""


def fail_if_expired_returned(cfg: OperatorConfig, task: int, count: int, by: str = "") -> None:
    """Under NeverReturnExpired a returned expired value is a wrong answer: the run fails."""
    if cfg.never_return_expired and count:
        raise ExpiredValueReturned(
            f"{cfg.scenario.label} task {task}: {count} expired value(s) returned under "
            f"NeverReturnExpired{by}"
        )


def sorted_times(batch: pa.RecordBatch, last_ts: int, task: int) -> np.ndarray:
    """A batch's ``ts`` column, checked to go on from ``last_ts`` without going back."""
    ts = batch.column("ts").to_numpy(zero_copy_only=False)
    if ts[0] < last_ts or (len(ts) > 1 and bool((ts[1:] < ts[:-1]).any())):
        raise OutOfOrderInput(
            f"task {task}: events are not sorted by ts (got {int(ts[0])} after {last_ts}); "
            "sort each task's events by time before the operator"
        )
    return ts


class OutOfOrderInput(ValueError):
    """A task's events did not arrive in timestamp order (the runner must sort them)."""


def local_root(cfg: OperatorConfig) -> str | None:
    """Where task-local backend folders go: the configured folder, else the executor's first
    Spark local dir (Spark passes SPARK_LOCAL_DIRS to its Python workers), else the temp dir."""
    if cfg.local_dir is not None:
        return cfg.local_dir
    spark_dirs = os.environ.get("SPARK_LOCAL_DIRS")
    return spark_dirs.split(",")[0] if spark_dirs else None


def _pylist(column: pa.Array) -> list:
    """An Arrow integer column as a Python list (via numpy: faster than ``to_pylist``)."""
    return column.to_numpy(zero_copy_only=False).tolist()


@dataclass(frozen=True, order=True)
class Barrier:
    time_ms: int
    kind: int  # CHECKPOINT before SAMPLE at the same time
    index: int


def barrier_schedule(cfg: OperatorConfig) -> list[Barrier]:
    """Checkpoint and sample barriers of a run, in firing order."""
    out: list[Barrier] = []
    start, end = cfg.start_ms, cfg.end_ms
    if end <= start:
        return out
    if cfg.checkpoint_interval_ms > 0 and cfg.checkpoint_root is not None:
        k = 1
        while start + k * cfg.checkpoint_interval_ms < end:
            out.append(Barrier(start + k * cfg.checkpoint_interval_ms, CHECKPOINT, k))
            k += 1
    if cfg.emit_series:
        si = cfg.sample_interval_ms
        for k in range(1, math.ceil((end - start) / si) + 1):
            out.append(Barrier(start + k * si, SAMPLE, k))
    return sorted(out)


# ------------------------------------------------------------------------------------------------
# States
# ------------------------------------------------------------------------------------------------


class SumAggregate(backends.AggregateFunction):
    """Aggregating state's function: the sum of longs, or of payload lengths."""

    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + (value if value.__class__ is int else len(value))

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, acc_a: int, acc_b: int) -> int:
        return acc_a + acc_b


def ttl_config(cfg: OperatorConfig) -> backends.StateTtlConfig | None:
    """The spec's TTL settings with exactly the scenario's cleanup strategy turned on."""
    if cfg.ttl_ms is None:
        return None
    T = backends.StateTtlConfig
    builder = (
        T.new_builder(cfg.ttl_ms)
        .set_update_type(T.UpdateType[cfg.update_type])
        .set_state_visibility(T.StateVisibility[cfg.visibility])
        .set_ttl_time_characteristic(T.TtlTimeCharacteristic[cfg.time_characteristic])
    )
    return backends.parse_strategy(cfg.cleanup or cfg.strategy).configure(builder).build()


def descriptors(cfg: OperatorConfig) -> dict[str, backends.StateDescriptor]:
    """One descriptor per state type the workload uses, TTL enabled when the spec has a TTL."""
    vtype = state_type(cfg.value_type)
    makers: dict[str, Callable[[], backends.StateDescriptor]] = {
        "value": lambda: backends.ValueStateDescriptor("value", vtype),
        "list": lambda: backends.ListStateDescriptor("list", vtype),
        "map": lambda: backends.MapStateDescriptor("map", backends.Types.INT(), vtype),
        "reducing": lambda: backends.ReducingStateDescriptor("reducing", max, vtype),
        "aggregating": lambda: backends.AggregatingStateDescriptor(
            "aggregating", SumAggregate(), backends.Types.LONG()
        ),
    }
    ttl = ttl_config(cfg)
    out: dict[str, backends.StateDescriptor] = {}
    for name in STATE_NAMES:
        if name in cfg.state_types:
            desc = makers[name]()
            if ttl is not None:
                desc.enable_time_to_live(ttl)
            out[name] = desc
    return out


def register_states(backend: Any, descs: dict[str, backends.StateDescriptor]) -> StateCalls:
    """Register every descriptor and bind the methods the hot loop calls."""
    calls = StateCalls()
    if "value" in descs:
        s = backend.get_state(descs["value"])
        calls.v_get, calls.v_update, calls.v_clear = s.value, s.update, s.clear
    if "list" in descs:
        s = backend.get_list_state(descs["list"])
        calls.l_add, calls.l_get = s.add, s.get
    if "map" in descs:
        s = backend.get_map_state(descs["map"])
        calls.m_put, calls.m_get, calls.m_items, calls.m_remove = s.put, s.get, s.items, s.remove
    if "reducing" in descs:
        calls.r_add = backend.get_reducing_state(descs["reducing"]).add
    if "aggregating" in descs:
        calls.a_add = backend.get_aggregating_state(descs["aggregating"]).add
    return calls


def make_clock(cfg: OperatorConfig) -> Any:
    """ProcessingTime: the paced wall-driven clock (every strategy alike); EventTime: a manual
    clock the backend's event clock replaces for TTL."""
    if paced(cfg.time_characteristic):
        return PacedClock(cfg.time_speedup, start_ms=cfg.start_ms)
    return backends.ManualClock(cfg.start_ms)


# ------------------------------------------------------------------------------------------------
# The operator
# ------------------------------------------------------------------------------------------------


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
        self._local = tempdirs.make(f"statebench-t{task}-", dir=local_root(cfg))  # owner-tagged
        self.clock = make_clock(cfg)
        self.backend: Any = None
        try:
            self.backend = self._open_backend()
            self._descs = descriptors(cfg)
            calls = register_states(self.backend, self._descs)
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
        self._loop = build_loop(
            calls, self.backend.set_current_key, set_time, self.clock.now, self._shadow,
            cfg.ttl_ms, stamp=cfg.measure_latency, refresh=cfg.update_type == "OnReadAndWrite",
        )
        self._barriers = barrier_schedule(cfg)
        self._bi = 0
        self._next_barrier = self._barriers[0].time_ms if self._barriers else INFINITY
        self._last_checkpoint: tuple[Any, int, int] | None = None  # (handle, id, barrier ms)
        target = self._checkpoint_target()
        self._ckpt = (None if target is None
                      else ck.CheckpointPipeline(self.backend, target, cfg.checkpoint_mode,
                                                 cfg.checkpoint_max_in_flight))

    # ------------------------------------------------------------------ setup
    def _open_backend(self) -> Any:
        cfg = self.cfg
        options: dict[str, Any] = {
            "max_parallelism": cfg.max_parallelism,
            "key_group_range": KeyGroupRange.of_operator(
                self.task, cfg.parallelism, cfg.max_parallelism
            ),
        }
        if cfg.backend == "rocksdb":
            options["path"] = self._local
            options["rocksdb_options"] = dict(cfg.rocksdb_options)
        return backends.create_backend(cfg.backend, clock=self.clock, **options)

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
        cols = (
            _pylist(batch.column("key")),
            ts_np.tolist(),
            _pylist(batch.column("op")),
            self._payloads.values(batch),
            _pylist(batch.column("map_key")) if self._uses_map else _ZEROS,
        )
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
            keys, tss, ops, vals, mks = cols
        else:
            keys, tss, ops, vals, mks = (c if c is _ZEROS else c[lo:hi] for c in cols)
        tp = self.tp
        skip = min(max(tp.warm_left, 0), count)
        if self.cfg.measure_latency:
            stamps: list[int] = []  # list.append + one fromiter beat array("q").append here
            bad, self._loop_t = self._loop(keys, tss, ops, vals, mks, stamps.append, self._loop_t)
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
            bad, self._loop_t = self._loop(keys, tss, ops, vals, mks, None, self._loop_t)
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
        tp.state_ops += count + ops.count(Op.VALUE_RMW)  # read-modify-write is two state calls
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
        if self.backend.kind == "rocksdb":
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
                lambda b: register_states(b, descriptors(cfg)),
                max_parallelism=cfg.max_parallelism,
                key_group_range=KeyGroupRange.of_operator(task, cfg.parallelism,
                                                          cfg.max_parallelism),
                **({"rocksdb_options": dict(cfg.rocksdb_options)} if cfg.backend == "rocksdb"
                   else {}),
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
            if backend.kind == "rocksdb":
                del backend
                gc.collect()
        tempdirs.remove(self._local)


# ------------------------------------------------------------------------------------------------
# Which operator runs a task
# ------------------------------------------------------------------------------------------------


class TaskOperator(Protocol):
    """What runs one task's events: fed its batches in time order, then asked for its rows."""

    def process(self, batch: pa.RecordBatch) -> None: ...

    def finish(self) -> list[Row]: ...

    def close(self) -> None: ...


#: The task operator of each backend kind. Engines never choose one themselves, so a new lane
#: (e.g. ``flink-heap``/``flink-rocksdb``: a JVM worker per task fed these record batches) is
#: one entry here, run by every engine (see ``workloads.run.runner``).
OPERATORS: dict[str, Callable[[OperatorConfig, int, int, int | None], TaskOperator]] = {
    kind: KeyedOperator for kind in backends.BACKEND_KINDS
}


def _flink_lane(
    cfg: OperatorConfig, task: int, attempt: int = 0, attempt_id: int | None = None
) -> TaskOperator:
    """A Flink lane's operator (imported on use: it imports this module)."""
    from workloads.run.flink_lane import FlinkLaneOperator

    return FlinkLaneOperator(cfg, task, attempt, attempt_id)


OPERATORS.update(dict.fromkeys(("flink-heap", "flink-rocksdb"), _flink_lane))


def task_operator(
    cfg: OperatorConfig, task: int, attempt: int = 0, attempt_id: int | None = None
) -> TaskOperator:
    """The operator for ``task`` of ``cfg``'s scenario, chosen by its backend kind."""
    make = OPERATORS.get(cfg.backend)
    if make is None:
        raise ValueError(
            f"no task operator for backend '{cfg.backend}'; known: {', '.join(OPERATORS)}"
        )
    return make(cfg, task, attempt, attempt_id)


# ------------------------------------------------------------------------------------------------
# Driving several tasks from one batch stream
# ------------------------------------------------------------------------------------------------


def _task_runs(batch: pa.RecordBatch, cfg: OperatorConfig) -> Iterator[tuple[int, int, int]]:
    """(task, offset, length) of each run of equal task ids in ``batch``."""
    if "task" in batch.schema.names:
        tasks = batch.column("task").to_numpy(zero_copy_only=False)
    else:
        keys = batch.column("key").to_numpy(zero_copy_only=False)
        tasks = tasks_for_keys(keys, cfg.parallelism, cfg.max_parallelism)
    if len(tasks) == 0:
        return
    cuts = np.flatnonzero(tasks[1:] != tasks[:-1]) + 1
    starts = np.concatenate(([0], cuts))
    ends = np.concatenate((cuts, [len(tasks)]))
    for s, e in zip(starts.tolist(), ends.tolist()):
        yield int(tasks[s]), s, e - s


@dataclass
class TaskRunner:
    """Runs one KeyedOperator per task id seen in a stream of batches.

    Batches may mix tasks and tasks may interleave: correctness never depends on how a
    partitioner grouped them, only on each task's events arriving in time order.
    """

    cfg: OperatorConfig
    attempt: int = 0
    attempt_id: int | None = None
    operators: dict[int, TaskOperator] = field(default_factory=dict)

    def process(self, batch: pa.RecordBatch) -> None:
        for task, offset, length in _task_runs(batch, self.cfg):
            op = self.operators.get(task)
            if op is None:
                op = self.operators[task] = task_operator(
                    self.cfg, task, self.attempt, self.attempt_id
                )
            op.process(batch.slice(offset, length))

    def finish(self) -> pa.RecordBatch:
        rows: list[Row] = []
        try:
            for task in sorted(self.operators):
                rows.extend(self.operators[task].finish())
        finally:
            self.close()
        return MetricRows(self.cfg.scenario).to_batch() if not rows else _batch(self.cfg, rows)

    def close(self) -> None:
        for op in self.operators.values():
            op.close()


def _batch(cfg: OperatorConfig, rows: list[Row]) -> pa.RecordBatch:
    out = MetricRows(cfg.scenario)
    out.extend(rows)
    return out.to_batch()


def run_operator_batches(
    cfg: OperatorConfig,
    batches: Iterable[pa.RecordBatch],
    attempt: int = 0,
    attempt_id: int | None = None,
    after_batch: Callable[[int], None] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Apply every batch to its task's operator, then yield the metric rows (METRIC_SCHEMA).

    ``attempt`` is the Spark attempt number (reported), ``attempt_id`` a number that grows with
    every attempt (names checkpoint folders; default: ``attempt``). ``after_batch(i)`` runs
    after the i-th input batch (fault injection in tests)."""
    runner = TaskRunner(cfg, attempt, attempt_id)
    try:
        for i, batch in enumerate(batches):
            runner.process(batch)
            if after_batch is not None:
                after_batch(i)
    except BaseException:
        runner.close()
        raise
    yield runner.finish()
