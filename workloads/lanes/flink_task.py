"""The Flink lane operator: one task's events applied to Flink's own keyed state backend.

Backends ``flink-heap``, ``flink-rocksdb`` and ``flink-forst`` run each task in a JVM worker
(``backends.flink``) holding Flink 2.x's HeapKeyedStateBackend, RocksDBKeyedStateBackend or
ForSt's ForStSyncKeyedStateBackend with the task's key-group range and max parallelism;
``flink-forst-async`` runs ForSt's asynchronous ForStKeyedStateBackend through State V2 under
Flink's execution controller (``statebench.flink.ForStAsyncLane``: the worker serves the same
event commands there), with flink-forst's folders, options and rows.
ForSt's working folder is the task's local folder; its DB files live on a primary folder of the
task's own (a separate folder beside it, Flink's "remote" directory; with
``STATEBENCH_FORST_PRIMARY=checkpoint`` under the task's checkpoint folder instead, where ForSt's
checkpoints refer to its files in place), and its samples add
``physical_local_bytes`` / ``physical_primary_bytes`` (files on disk in each). The task's
record batches cross as fixed binary columns (``backends.flink.events``), and one Java loop
applies them exactly as statebench's operator does (``workloads/run/hotloop.py``), so the rows
are the same metrics on the same barriers as :class:`workloads.run.keyed_operator.KeyedOperator`:

* Time: Flink's TTL is processing time only, so the lane's TtlTimeProvider *is* the scenario's
  clock: each record's timestamp under event time; under ProcessingTime the paced clock of
  ``workloads.run.pacing`` (a scaled wall clock from the task's start, each record released
  once it is due, barriers waited for), kept in Java, with the same schedule-lag rows.
  Flink's compaction filter reads the same provider.
* Barriers: checkpoints (Flink's own ``snapshot()``) and samples at the same logical times,
  cut into the same event ranges; a sample counts what Flink physically holds (live vs expired
  by each unit's TTL timestamp at the barrier time) without touching TTL.
* Checkpoints follow the engines' model with a queue (the same setting and rules as
  statebench's lanes, ``workloads/run/checkpoints.py``): at a checkpoint barrier the task thread
  runs the synchronous phase (Flink's ``snapshot()``, which returns the asynchronous phase as a
  RunnableFuture) and queues that future on a checkpoint thread of the worker (one daemon
  thread per backend, as a TaskManager's async snapshot thread, running them in order), then
  goes on with its records while it runs, really concurrently, competing for the CPU. It waits
  first only while the spec's ``[checkpoints] max_in_flight`` checkpoints are in flight (sent
  with every EV_CHECKPOINT; 1 is Flink's max-concurrent-checkpoints default: a barrier waits for
  the previous asynchronous phase). Why a queue: Flink's task never waits for an asynchronous
  phase; its coordinator delays the next trigger instead, which under a logical clock would make
  checkpoint contents timing-dependent. statebench keeps every logical barrier and queues the
  asynchronous phases where Flink would delay the trigger (more asynchronous work than Flink
  would do, never less). With ``max_in_flight = 1``, where barriers come faster than the
  asynchronous phase ends (the shipped specs: a heap task meets one every few ms of its time),
  the waits put most of that phase back into busy time, and the lane no longer matches a real
  Flink job's cost of checkpoints (tests/flink/test_real_job.py). The task completes a checkpoint
  (``notifyCheckpointComplete``) at its first record after its asynchronous phase finished; at
  the end of input it waits for all of them (not busy time). One deviation from Flink: the
  checkpoint thread reads the TTL clock the task had at the barrier (Flink's full-snapshot TTL
  transformer reads its TtlTimeProvider while it writes), so full_snapshot checkpoint sizes
  stay exact under the logical clock.
* Throughput: post-warm-up records over busy time = the Java loop's nanoseconds (one
  ``System.nanoTime()`` per record, the same log-linear latency buckets), the Python column
  encoding, the synchronous phases and the barrier waits, and every garbage-collection pause
  after the warm-up that fell outside those (the JVM waits for the next batch while Python
  encodes it, and a pause then would not count, though a Flink task, never idle, is stopped by
  each one: which pauses fell there depended on who allocated, so heap full_snapshot's, set off
  by the task, counted and none's, set off by its long asynchronous phases, mostly did not);
  never the asynchronous phase (its cost to the task shows as a slower loop while it runs).
  The pipe transfer is input, like Spark's.
* Checkpoint rows (``workloads.run.metrics``): per checkpoint ``checkpoint_sync_ms``,
  ``checkpoint_async_ms`` (= ``checkpoint_upload_ms``: the asynchronous phase writes the files
  to the local checkpoint folder), ``checkpoint_total_ms`` (sync + async wall),
  ``checkpoint_async_cpu_ms`` (the checkpoint thread's CPU, ThreadMXBean),
  ``checkpoint_wait_ms``, ``checkpoint_bytes``, ``checkpoint_uploaded_bytes`` and, on
  ``flink-forst``, ``checkpoint_referenced_bytes`` (the handle's size minus what this checkpoint
  uploaded: files of earlier checkpoints it refers to; the other lanes keep statebench's
  operator's rows, where it is checkpoint_bytes - checkpoint_uploaded_bytes); per task the
  CHECKPOINT_SUMMARY_METRICS (sync share of busy time; the loop's records/s while an
  asynchronous phase ran beside it and while none did, over the loop's own nanoseconds; the
  asynchronous phases' CPU seconds, checkpoints after the warm-up) and the JVM's garbage
  collection after the warm-up, ``jvm_gc_ms`` and ``jvm_gc_count`` (GarbageCollectorMXBean; the
  worker runs the serial collector, whose pauses stop the task thread too), so a remaining
  gap between strategies can be put down to a measured cause.

``restore_ms`` times a fresh Flink backend restored from the last checkpoint's handle with the
states registered again, on all three lanes (ForSt: into fresh working and primary folders).
Not measured, because Flink keeps no such counters:
``cleanup_removed_*`` and the cleanup lag rows. One JVM per Python process is kept
between tasks (``reset()`` opens a fresh backend): a JVM start per task would cost more than a
small task's work; a JVM first applies a synthetic warm-up stream per backend kind
(``_warm_up``).
"""

from __future__ import annotations

import time
import weakref
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa

import backends
from backends.flink import FlinkWorker, events, lanes
from backends.flink.lanes import LANE_KINDS
from backends.flink.register import ttl_fields
from backends.keygroups import KeyGroupRange
from backends.strategies import COMPACTION_FILTER
from backends.ttl_config import DEFAULT_PERIODIC_COMPACTION_MS, DEFAULT_QUERY_TIME_AFTER_NUM_ENTRIES
from workloads.lanes.flink_workers import TIMEOUT_S, WorkerPool
from workloads.ops import Op
from workloads.run import checkpoints as ck
from workloads.run import run_tempdirs
from workloads.run.barriers import CHECKPOINT, INFINITY, Barrier, barrier_schedule
from workloads.run.config import OperatorConfig, local_root, paced, wall_clock_driven
from workloads.run.metrics import (
    ATTEMPT,
    CHECKPOINT_ASYNC_METRICS,
    CHECKPOINT_METRICS,
    CHECKPOINT_PHASE_METRICS,
    CHECKPOINT_SUMMARY_METRICS,
    LATENCY_BUCKET,
    NO_TIME,
    ROCKSDB_SERIES,
    LatencyBuckets,
    MetricRows,
    Row,
)
from workloads.run.state_setup import ttl_config_of
from workloads.run.task_checks import fail_if_expired_returned, sorted_times

# ------------------------------------------------------------------------------------------------
# One idle JVM per process, reused by the next task (see the module docstring)
# ------------------------------------------------------------------------------------------------

WORKERS = WorkerPool()
_warmed: weakref.WeakKeyDictionary[FlinkWorker, set[str]] = weakref.WeakKeyDictionary()


def _acquire(kind: str, **options: Any) -> tuple[FlinkWorker, bool]:
    """A worker with a fresh backend, and whether its JVM still needs a warm-up for `kind`."""
    worker = WORKERS.acquire(kind, **options)
    warmed = _warmed.setdefault(worker, set())
    cold = kind not in warmed
    warmed.add(kind)
    return worker, cold


#: Synthetic events a JVM applies before its first heap task (RocksDB: a quarter), unless the
#: environment variable below says otherwise (0: no warm-up; tests that measure no speed).
WARMUP_EVENTS = lanes.WARMUP_EVENTS
WARMUP_ENV = lanes.WARMUP_ENV


def warmup_events(kind: str) -> int:
    n = lanes.warmup_events_setting()  # checked before any work too (RunConfig)
    return n if kind in lanes.IN_MEMORY_KINDS else n // 4


def _warm_up(worker: FlinkWorker, spec: events.LaneSpec, kind: str, ttl_ms: int | None,
             checkpoint_dir: str, max_in_flight: int) -> None:
    """JIT warm-up, as JMH's warm-up iterations: a new JVM interprets Flink's code until the
    JIT compiles it, so the first task of a JVM kept for later tasks would run slower than the
    others and bias the strategies' relative costs by their order. A seeded synthetic stream
    over the same states and ops (TTL expiring inside it) goes through the loop first, then one
    checkpoint into ``checkpoint_dir`` and a restore from it, so the first timed restore_ms of a
    JVM does not pay for loading and compiling the backend's restore path (measured on
    sessions-churn: ForSt's first restore in a JVM 153 ms, its next ones about 30 ms); the
    caller then opens a fresh backend."""
    n = warmup_events(kind)
    if n == 0:
        return
    codes = [int(op) for op in Op if op.state_type.value in spec.state_types]
    rng = np.random.default_rng(0)
    span = 4 * (ttl_ms or 1_000)
    batch = pa.RecordBatch.from_arrays(
        [pa.array(rng.integers(0, 5_000, n), pa.int64()),
         pa.array(spec.start_ms + np.arange(n, dtype=np.int64) * span // n, pa.int64()),
         pa.array(rng.choice(codes, n).astype(np.int8), pa.int8()),
         pa.array(rng.integers(0, 1 << 40, n), pa.int64()),
         pa.array(rng.integers(1, 64, n).astype(np.int32), pa.int32()),
         pa.array(rng.integers(0, 8, n).astype(np.int32), pa.int32())],
        names=["key", "ts", "op", "value", "value_size", "map_key"])
    warm = replace(spec, clock=events.CLOCK_RECORD, warmup_records=n)
    worker.send(events.encode_open(warm) + events.encode_apply(batch, spec.value_type, True)
                + events.encode_checkpoint(1, checkpoint_dir, max_in_flight)
                + events.encode_restore())


#: Where flink-forst keeps its primary folder: "separate" (default: a folder of the task's own
#: beside its working folder, so ForSt copies its files into every checkpoint, as RocksDB
#: does) or "checkpoint" (under the task's checkpoint folder's shared/, Flink's
#: ``state.backend.forst.primary-dir: checkpoint-dir``, the V2 default: checkpoints then refer
#: to the DB's files in place; with checkpoints off the folder stays separate).
FORST_PRIMARY_ENV = lanes.FORST_PRIMARY_ENV
#: Worker kinds of ForSt's lanes: flink-forst (V1, synchronous) and flink-forst-async (State V2
#: under Flink's asynchronous execution controller, statebench.flink.ForStAsyncLane): the same
#: folders, options and rows.
FORST_KINDS = ("forst", "forst-async")
FORST_PRIMARY_CHOICES = lanes.FORST_PRIMARY_CHOICES


def forst_primary() -> str:
    """The flink-forst primary folder's place (FORST_PRIMARY_ENV), checked."""
    return lanes.forst_primary()  # checked before any work too (RunConfig)


def close_idle_workers() -> None:
    """Stops the kept JVM (at exit; tests call it to leave no process behind)."""
    WORKERS.close_idle()


# ------------------------------------------------------------------------------------------------
# The operator
# ------------------------------------------------------------------------------------------------


def compaction_options(strategy: str, rocksdb_options: dict[str, Any]
                        ) -> tuple[int, int | None]:
    """(query_time_after_num_entries, periodic compaction ms) the worker opens with: Flink 2.x
    sets both per backend with its compaction filter, so they come from the scenario's
    compaction_filter arguments; the period otherwise from the spec's [rocksdb] table."""
    parsed = backends.parse_strategy(strategy)
    if parsed.kind is not COMPACTION_FILTER:
        return DEFAULT_QUERY_TIME_AFTER_NUM_ENTRIES, None
    query = parsed.args[0] if parsed.args else DEFAULT_QUERY_TIME_AFTER_NUM_ENTRIES
    periodic = (parsed.args[1] if len(parsed.args) > 1
                else rocksdb_options.get("periodic_compaction_ms", DEFAULT_PERIODIC_COMPACTION_MS))
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

    #: Where close() gives the JVM back (the operator lane keeps a pool of its own)
    workers: WorkerPool = WORKERS

    def __init__(
        self, cfg: OperatorConfig, task: int, attempt: int = 0, attempt_id: int | None = None
    ) -> None:
        if cfg.backend not in LANE_KINDS:
            raise ValueError(f"'{cfg.backend}' is not a Flink lane ({', '.join(LANE_KINDS)})")
        self.cfg = cfg
        self.task = task
        self.attempt = attempt
        self.attempt_id = attempt if attempt_id is None else attempt_id
        self.kind = LANE_KINDS[cfg.backend]
        self.rows = MetricRows(cfg.scenario)
        self._paced = paced(cfg.time_characteristic)
        self._wall = self._paced or wall_clock_driven(cfg.time_characteristic, cfg.strategy)
        counts = dict(cfg.task_counts)
        self._warm_left = int(counts.get(task, 0) * cfg.warmup_fraction)
        self._python_ns = 0.0  # column encoding after the warm-up (pro rata per batch)
        self._sync_ns = 0.0  # synchronous phases after the warm-up (busy time)
        self._wait_ns = 0.0  # barrier waits (max_in_flight in flight) after it (busy time)
        self._checkpoints: dict[int, tuple[Barrier, bool]] = {}  # id -> barrier, after warm-up
        self._max_in_flight = cfg.checkpoint_max_in_flight  # the spec's, as every lane
        self._state_ops = 0
        self._last_ts = -INFINITY
        self._uses_map = "map" in cfg.state_types
        self._barriers = barrier_schedule(cfg)
        self._bi = 0
        self._next_barrier = self._barriers[0].time_ms if self._barriers else INFINITY
        self._ckpt_target = self._checkpoint_target()
        self._last_checkpoint: Barrier | None = None
        self._local = run_tempdirs.make(f"statebench-flink-t{task}-", dir=local_root(cfg))
        # ForSt's primary ("remote") folder: a separate folder of the task's own, or with
        # FORST_PRIMARY_ENV=checkpoint one under the task's checkpoint folder (forst_primary)
        self._primary_in_checkpoint = False
        self._primary = None
        if self.kind in FORST_KINDS:
            if forst_primary() == "checkpoint" and self._ckpt_target is not None:
                self._primary = f"{self._ckpt_target}/shared/forst-primary"
                self._primary_in_checkpoint = True
            else:
                self._primary = run_tempdirs.make(f"statebench-forst-primary-t{task}-",
                                              dir=local_root(cfg))
        self.worker: FlinkWorker | None = None
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def _open(self) -> None:
        cfg = self.cfg
        query, periodic = compaction_options(cfg.configured_cleanup,
                                             dict(cfg.rocksdb_options))
        options = self._worker_options(self._local, query, periodic, ("rocksdb", *FORST_KINDS))
        primary = self._primary
        if primary is not None:
            options["primary_path"] = f"{primary}/task"
        self.worker, cold = _acquire(self.kind, **options)
        # Flink's TTL is processing time: the lane's provider is driven by the scenario's clock
        ttl = ttl_config_of(replace(cfg, time_characteristic="ProcessingTime"))
        spec = events.LaneSpec(
            value_type=cfg.value_type,
            state_types=cfg.state_types,
            ttl_fields=ttl_fields(ttl, query, periodic),
            clock=self._clock(),
            speedup=cfg.time_speedup,
            start_ms=cfg.start_ms,
            warmup_records=self._warm_left,
            verify=cfg.ttl_ms is not None,
            latency=cfg.measure_latency,
        )
        if cold:  # on a backend of every key group, in a folder of its own, then the task's
            warm = {"key_group_range": None, "path": f"{self._local}/warm-up"}
            if primary is not None:
                warm["primary_path"] = f"{primary}/warm-up"
            self.worker.reset(self.kind, **(options | warm))
            _warm_up(self.worker, spec, self.kind, cfg.ttl_ms, f"{self._local}/warm-up-ckpt",
                     self._max_in_flight)
            self.worker.reset(self.kind, **(options | {"path": f"{self._local}/task"}))
        self._allow_paced_span()
        self.worker.send(events.encode_open(spec))

    def _worker_options(self, path: str, query: int, periodic: int | None,
                        rocksdb_kinds: tuple[str, ...]) -> dict[str, Any]:
        """The worker's backend options for this task: its key groups, folder, compaction
        filter arguments and, on ``rocksdb_kinds``, the checkpoint mode and [rocksdb] options."""
        cfg = self.cfg
        rocks = self.kind in rocksdb_kinds
        return {
            "max_parallelism": cfg.max_parallelism,
            "key_group_range": KeyGroupRange.of_operator(self.task, cfg.parallelism,
                                                         cfg.max_parallelism),
            "path": path,
            "query_time_after_num_entries": query,
            "periodic_compaction_ms": periodic,
            "incremental_checkpoints": rocks and cfg.checkpoint_mode == "incremental",
            "rocksdb_options": dict(cfg.rocksdb_options) if rocks else None,
        }

    def _clock(self) -> int:
        """The worker's clock (events.CLOCK_*): paced, wall or each record's timestamp."""
        return (events.CLOCK_PACED if self._paced
                else events.CLOCK_WALL if self._wall else events.CLOCK_RECORD)

    def _allow_paced_span(self) -> None:
        """Paced, a frame waits for its records' time: allow the whole run's span per frame."""
        if self._paced:
            cfg = self.cfg
            span_s = (cfg.end_ms - cfg.start_ms) / cfg.time_speedup / 1e3
            self.worker.timeout_s = TIMEOUT_S + span_s

    def _checkpoint_target(self) -> str | None:
        target = ck.task_attempt_dir(self.cfg, self.task, self.attempt_id)
        return None if target is None else _local_checkpoint_dir(target)

    # ------------------------------------------------------------------ the stream
    def process(self, batch: pa.RecordBatch) -> None:
        """Apply a batch of this task's events (EVENT_SCHEMA columns, ts non-decreasing): the
        event ranges between barriers and the barriers themselves go out as one frame."""
        n = batch.num_rows
        if n == 0:
            return
        start = time.perf_counter_ns()
        ts = sorted_times(batch, self._last_ts, self.task)
        last = int(ts[-1])
        self._last_ts = last
        self._count_state_ops(batch)
        b = self.worker.batch()
        fired: list[tuple[Barrier, bool]] = []
        lo = 0
        while self._next_barrier <= last:
            cut = int(np.searchsorted(ts, self._next_barrier, "left"))
            if cut > lo:
                b.raw(self._encode_records(batch.slice(lo, cut - lo)))
                lo = cut
            if self._paced:  # a barrier, as a record, happens at its time
                b.raw(events.encode_wait(self._next_barrier))
            fired.append((self._add_barrier(b), self._warm_left - cut <= 0))
        if lo < n:
            b.raw(self._encode_records(batch.slice(lo, n - lo)))
        post = n - min(n, max(self._warm_left, 0))
        self._python_ns += (time.perf_counter_ns() - start) * post / n
        self._warm_left -= n
        self._record(fired, b.flush())

    def _count_state_ops(self, batch: pa.RecordBatch) -> None:
        """State accesses of a batch: one per event, two per read-modify-write."""
        ops = batch.column("op").to_numpy(zero_copy_only=False)
        self._state_ops += batch.num_rows + int(np.count_nonzero(ops == int(Op.VALUE_RMW)))

    def _encode_records(self, batch: pa.RecordBatch) -> bytes:
        """A range of the task's records as the worker's apply frame."""
        return events.encode_apply(batch, self.cfg.value_type, self._uses_map)

    def _add_barrier(self, b: Any) -> Barrier:
        barrier = self._barriers[self._bi]
        self._bi += 1
        self._next_barrier = (
            self._barriers[self._bi].time_ms if self._bi < len(self._barriers) else INFINITY
        )
        if barrier.kind == CHECKPOINT:
            assert self._ckpt_target is not None
            b.raw(events.encode_checkpoint(barrier.index, self._ckpt_target,
                                           self._max_in_flight), reads=1)
            self._last_checkpoint = barrier
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
                # the task thread's part; the rest comes when the checkpoint completed (finish)
                sync_ms, wait_ms = events.decode_checkpoint(result)
                self._checkpoints[barrier.index] = (barrier, warm_done)
                # a checkpoint inside the warm-up is not busy time (as KeyedOperator's)
                if warm_done:
                    self._sync_ns += sync_ms * 1e6
                    self._wait_ns += wait_ms * 1e6
            else:
                s = events.decode_sample(result)
                self._sample_rows(barrier, s)
                if s.local_bytes is not None:  # flink-forst: files on disk, each folder
                    add(task, step, t, "physical_local_bytes", s.local_bytes, "bytes")
                    add(task, step, t, "physical_primary_bytes", s.primary_bytes, "bytes")

    def _sample_rows(self, barrier: Barrier, s: events.Sample) -> None:
        """A sample's rows every Flink lane reports (at its barrier): entries and bytes."""
        add, task, step, t = self.rows.add, self.task, barrier.index, barrier.time_ms
        add(task, step, t, "live_entries", s.live, "entries")
        add(task, step, t, "expired_present_entries", s.expired, "entries")
        add(task, step, t, "logical_bytes", s.logical_bytes, "bytes")
        add(task, step, t, "expired_present_bytes", s.expired_bytes, "bytes")
        for metric, key, unit in ROCKSDB_SERIES:  # flink-rocksdb and flink-forst
            value = s.rocksdb.get(key)
            if value is not None:  # no row before the first flush (write amplification)
                add(task, step, t, metric, value, unit)
        add(task, step, t, "physical_bytes", s.physical_bytes, "bytes")

    def _checkpoint_rows(self, done: list[events.AsyncCheckpoint]) -> float:
        """Per checkpoint rows of the completed checkpoints (at their barrier); returns the
        asynchronous phases' CPU ms of those after the warm-up."""
        add, task, cpu_ms = self.rows.add, self.task, 0.0
        for c in done:
            barrier, warm_done = self._checkpoints[c.id]
            if warm_done:
                cpu_ms += c.async_cpu_ms
            if not self.cfg.emit_series:
                continue
            step, t = barrier.index, barrier.time_ms
            # ForSt's files referred to in place were not uploaded (0 with a separate primary)
            uploaded = c.checkpointed_bytes - c.in_place_bytes
            values = (c.bytes, uploaded, c.sync_ms, c.sync_ms + c.async_ms)
            for metric, value in zip(CHECKPOINT_METRICS, values):
                add(task, step, t, metric, value, "bytes" if metric.endswith("bytes") else "ms")
            if self.kind in FORST_KINDS:  # ForSt's claim: checkpoints mostly refer to files
                add(task, step, t, "checkpoint_referenced_bytes", c.bytes - uploaded, "bytes")
            # Flink's async phase writes the snapshot's files: the upload, as ours
            for metric in CHECKPOINT_PHASE_METRICS:
                add(task, step, t, metric, c.async_ms, "ms")
            for metric, value in zip(CHECKPOINT_ASYNC_METRICS, (c.async_cpu_ms, c.wait_ms)):
                add(task, step, t, metric, value, "ms")
        return cpu_ms

    def _model_rows(self, stats: events.LaneStats, checkpoint_ns: float, busy_ns: float,
                    async_cpu_ms: float) -> None:
        """The checkpoint model's summary rows (CHECKPOINT_SUMMARY_METRICS) and the JVM's GC."""
        add, task, rep = self.rows.add, self.task, self.cfg.repetition
        outside = stats.post_records - stats.during_async_records
        outside_ns = stats.busy_ns - stats.during_async_ns
        values = {
            "checkpoint_sync_share": checkpoint_ns / busy_ns if busy_ns > 0 else 0.0,
            "records_per_s_during_async": (
                stats.during_async_records / (stats.during_async_ns / 1e9)
                if stats.during_async_records and stats.during_async_ns > 0 else None),
            "records_per_s_outside_async": (outside / (outside_ns / 1e9)
                                            if outside and outside_ns > 0 else None),
            "checkpoint_async_cpu_s": async_cpu_ms / 1e3,
        }
        for metric, unit in CHECKPOINT_SUMMARY_METRICS:
            # none without checkpoints; no rate without records
            if self._checkpoints and values[metric] is not None:
                add(task, rep, NO_TIME, metric, values[metric], unit)
        add(task, rep, NO_TIME, "jvm_gc_ms", stats.gc_ms, "ms")
        add(task, rep, NO_TIME, "jvm_gc_count", stats.gc_count, "count")

    # ------------------------------------------------------------------ the end
    def finish(self) -> list[Row]:
        """Fire the remaining barriers, emit the summary rows, give the JVM back."""
        b = self.worker.batch()
        fired = []
        while self._bi < len(self._barriers):
            fired.append((self._add_barrier(b), self._warm_left <= 0))
        b.raw(events.encode_stats(), reads=1)
        cfg, task, rep, add = self.cfg, self.task, self.cfg.repetition, self.rows.add
        restore = cfg.emit_series and cfg.restore_at_end and self._last_checkpoint is not None
        if restore:
            b.raw(events.encode_restore(), reads=1)
        results = b.flush()
        if restore:
            assert self._last_checkpoint is not None
            restore_ns = results.pop()
            add(task, self._last_checkpoint.index, self._last_checkpoint.time_ms, "restore_ms",
                restore_ns / 1e6, "ms")
        self._record(fired, results[:-1])
        stats = events.decode_stats(results[-1])
        async_cpu_ms = self._checkpoint_rows(stats.checkpoints)
        checkpoint_ns = self._sync_ns + self._wait_ns
        busy_ns = stats.busy_ns + self._python_ns + checkpoint_ns + stats.gc_outside_busy_ns
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
        self._model_rows(stats, checkpoint_ns, busy_ns, async_cpu_ms)
        add(task, rep, NO_TIME, ATTEMPT, self.attempt, "count")
        if self._paced and stats.released:
            lag = LatencyBuckets()  # clock ms stored as ms * 1e6, as workloads.run.pacing
            for index, count in stats.lag_buckets:
                lag.add_bucket(index, count)
            us = lag.percentiles_us()
            for name in ("p50", "p99", "max"):
                add(task, rep, NO_TIME, f"schedule_lag_{name}_ms", us[f"latency_{name}_us"] / 1e3,
                    "ms")
            add(task, rep, NO_TIME, "late_records_share", stats.late / stats.released, "share")
        self.close()
        fail_if_expired_returned(cfg, task, stats.expired_returned, by=" by Flink")
        return self.rows.rows

    def close(self) -> None:
        """Give the JVM back for the next task (its backend is disposed on reuse or exit), then
        delete the task's RocksDB folder. A worker that failed is closed, not kept."""
        worker, self.worker = self.worker, None
        if worker is not None:
            self.workers.give_back(worker)  # disposes this task's backend before its folder goes
        run_tempdirs.remove(self._local)
        if self._primary is not None and not self._primary_in_checkpoint:
            run_tempdirs.remove(self._primary)  # (one in the checkpoint folder goes with it)
