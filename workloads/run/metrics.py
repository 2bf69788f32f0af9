"""What a run measures and how it becomes tidy rows: the row schema, per-record latency
histograms, state scans, and the task=-1 totals the driver adds.

Rows follow the report's schema (``workloads/report``): ``run_id, scenario, backend, strategy,
workload, task, step, logical_time_ms, metric, value, unit``. Inside a task an operator only
knows its own numbers, so it also emits *internal* rows (metric names starting with ``_``: its
latency histogram buckets, cleanup-lag buckets, attempt number) that the driver consumes in
:func:`finalize_rows` to compute job totals, and then drops.

Rows a run writes (per task, and task=-1 job totals added by :func:`finalize_rows`):

* summary, ``logical_time_ms = -1``, ``step`` = repetition: ``records`` (count),
  ``records_per_s`` (records/s; busy time after the warm-up, per task; the total is the sum),
  ``state_ops_per_s`` (ops/s; read-modify-write counts two), ``latency_p50_us``,
  ``latency_p99_us``, ``latency_p999_us``, ``latency_max_us`` (us; the total from the merged
  histogram), ``expired_returned`` (count), and with a TTL ``cleanup_removed_<mechanism>`` for
  read, incremental, timer, compaction_filter, full_snapshot (entries), and per mechanism that
  removed something ``cleanup_lag_<mechanism>_p50_ms``, ``_p99_ms``, ``_max_ms`` (ms from expiry
  to removal, over every removed value, list element and map entry; the job total from the
  merged histogram; none for the compaction filter, whose removals happen inside RocksDB
  without a time, nor for Flink's lanes, whose backends do not report one). The runners add
  ``job_records_per_s`` (task=-1 only: all events over the wall time
  of the whole operator job, sampling, checkpoints and Spark included). Paced (ProcessingTime)
  scenarios add ``schedule_lag_p50_ms``, ``schedule_lag_p99_ms``, ``schedule_lag_max_ms`` (clock
  ms a record was released after its timestamp) and ``late_records_share`` (share, 0..1; see
  ``workloads.run.pacing``); their job totals are the tasks' maxima.
* series, ``step`` = sample index, ``logical_time_ms`` = sample time (repetition 0 only):
  ``live_entries``, ``expired_present_entries`` (entries), ``logical_bytes``,
  ``expired_present_bytes`` (the logical bytes of the expired-but-present units),
  ``physical_bytes`` (bytes; the backend's ``physical_bytes()``: SST files + memtables for
  RocksDB, a deterministic footprint of the Python objects its states hold for heap). RocksDB
  adds its own counters (``backend.rocksdb_stats()``, summed over every DB of the task):
  ``rocksdb_flushes``, ``rocksdb_compactions`` (count, cumulative since the backend opened),
  ``rocksdb_compaction_read_bytes``, ``rocksdb_compaction_write_bytes`` (bytes, cumulative),
  ``rocksdb_write_amp`` (x: flush + compaction bytes written / bytes flushed, cumulative; no
  row before the first flush, and the job total is the tasks' maximum), ``rocksdb_sst_files``
  (count), ``rocksdb_sst_bytes``, ``rocksdb_memtable_bytes`` (bytes).
* per checkpoint, ``step`` = checkpoint id, ``logical_time_ms`` = barrier time (repetition 0),
  emitted when the checkpoint's asynchronous phase has finished (Flink's checkpoint model,
  see ``workloads.run.keyed_operator``): ``checkpoint_bytes``,
  ``checkpoint_uploaded_bytes`` (bytes); ``checkpoint_sync_ms`` (the synchronous phase, in the
  task's thread: busy time; heap:
  a shallow copy of each state's dict with copy-on-write of list and map containers, RocksDB: an
  iterator per state, or flush + hard-linked checkpoint), ``checkpoint_async_ms`` (wall ms of the
  asynchronous phase on its own thread, concurrent with the record loop: TTL filtering,
  encoding, compression, writing and the metadata commit; from when the thread starts it, time
  queued behind earlier checkpoints excluded), ``checkpoint_upload_ms`` (the same
  as async on a local-disk target, where writing is the upload; kept apart for remote targets),
  ``checkpoint_total_ms`` (sync + async), ``checkpoint_async_cpu_ms`` (CPU ms of the
  asynchronous thread, ``time.thread_time()`` inside it), ``checkpoint_wait_ms`` (ms the task
  waited at this barrier because ``[checkpoints] max_in_flight`` checkpoints were in flight,
  for the oldest one's asynchronous phase: busy time; 0 while the queue has room. Flink's task
  never waits: its coordinator delays the next trigger instead; statebench keeps every barrier
  and queues the asynchronous phases, see ``workloads.run.checkpoints``), and
  ``restore_ms`` (ms) for the last checkpoint.
* per task and repetition, summary rows when the run checkpoints (CHECKPOINT_SUMMARY_METRICS):
  ``checkpoint_sync_share`` (share: (sync + wait) / busy time after the warm-up; the job total is
  the tasks' maximum), ``records_per_s_during_async`` and ``records_per_s_outside_async``
  (records/s of the state loop while an asynchronous phase ran beside it, any checkpoint in
  flight, and while none did:
  what concurrency costs the task, the GIL included; no row when no record fell there; totals
  summed), ``checkpoint_async_cpu_s`` (s, summed over checkpoints; the total is the sum).
* ``not_applicable`` (value 1, unit "flag", task -1) for a strategy reported, not run.

Latency timing (why it is cheap enough): the operator takes one ``perf_counter_ns()`` per record
into a Python list; a batch's latencies are ``np.diff`` of it, bucketed with ``np.bincount`` into
log-linear buckets (64 per power of two, < 1.6 % relative error) and only the non-empty buckets
are fed to an ``hdrh`` histogram when percentiles are asked for. Cost: one clock call (~50 ns
here) and one list append per record plus ~20 ns of numpy per record, measured at 90-180 ns per
record, 10-15 % of a heap value-state record (``--no-latency`` turns it off). A record's latency
is the time from its stamp to the next one: the state calls plus the loop's own dispatch.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hdrh.histogram import HdrHistogram

from backends.cleanup.counters import MECHANISMS as CLEANUP_MECHANISMS
from backends.cleanup.counters import bucket_percentiles
from workloads.results.summaries import (
    NO_TIME,
    TOTAL_TASK,
    ScenarioKey,
    combine_tasks,
    lag_metric,
)

# ------------------------------------------------------------------------------------------------
# Row schema
# ------------------------------------------------------------------------------------------------

METRIC_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string()),
        pa.field("scenario", pa.string()),
        pa.field("backend", pa.string()),
        pa.field("strategy", pa.string()),
        pa.field("workload", pa.string()),
        pa.field("task", pa.int32()),
        pa.field("step", pa.int64()),
        pa.field("logical_time_ms", pa.int64()),
        pa.field("metric", pa.string()),
        pa.field("value", pa.float64()),
        pa.field("unit", pa.string()),
    ]
)
#: The same schema as a Spark DDL string (so this module needs no pyspark import).
METRIC_DDL = (
    "run_id string, scenario string, backend string, strategy string, workload string, "
    "task int, step bigint, logical_time_ms bigint, metric string, value double, unit string"
)
INTERNAL_PREFIX = "_"
#: Shares whose job total is the ratio of two summed count metrics (workloads.operators.task).
RATIO_TOTALS = {"ttl_changed_results": ("ttl_changed_outputs", "ttl_compared_outputs")}

# internal metrics (consumed by finalize_rows, never written)
LATENCY_BUCKET = "_latency_bucket"  # step = bucket index, value = count
LAG_BUCKET = "_cleanup_lag_bucket_"  # + mechanism; step = bucket floor (ms), value = count
ATTEMPT = "_attempt"  # Spark task attempt number that produced the rows

#: Series metrics (one sample per logical-time step).
SERIES = ("live_entries", "expired_present_entries", "logical_bytes", "physical_bytes")
CHECKPOINT_METRICS = (
    "checkpoint_bytes",
    "checkpoint_uploaded_bytes",
    "checkpoint_sync_ms",
    "checkpoint_total_ms",
)
#: Per checkpoint, besides CHECKPOINT_METRICS: the async and upload phases (see above; upload ==
#: async on a local target).
CHECKPOINT_PHASE_METRICS = ("checkpoint_async_ms", "checkpoint_upload_ms")
#: Per checkpoint, the engines' checkpoint model: CPU seconds the asynchronous phase's
#: own thread used (ms), and how long the task thread waited at this barrier because
#: max_in_flight checkpoints were in flight (ms, busy time: the task could not go on).
CHECKPOINT_ASYNC_METRICS = ("checkpoint_async_cpu_ms", "checkpoint_wait_ms")
#: Per task and repetition (summary rows): the share of busy time spent in synchronous phases
#: and barrier waits, the task's rate while an asynchronous phase ran beside it and while none
#: did (what concurrency costs the task), and the asynchronous threads' CPU seconds.
CHECKPOINT_SUMMARY_METRICS = (
    ("checkpoint_sync_share", "share"),
    ("records_per_s_during_async", "records/s"),
    ("records_per_s_outside_async", "records/s"),
    ("checkpoint_async_cpu_s", "s"),
)
#: RocksDB series: (row metric, ``rocksdb_stats()`` key, unit).
ROCKSDB_SERIES = (
    ("rocksdb_flushes", "flushes", "count"),
    ("rocksdb_compactions", "compactions", "count"),
    ("rocksdb_compaction_read_bytes", "compaction_bytes_read", "bytes"),
    ("rocksdb_compaction_write_bytes", "compaction_bytes_written", "bytes"),
    ("rocksdb_write_amp", "write_amplification", "x"),
    ("rocksdb_sst_files", "sst_files", "count"),
    ("rocksdb_sst_bytes", "sst_bytes", "bytes"),
    ("rocksdb_memtable_bytes", "memtable_bytes", "bytes"),
)
LAG_STATS = (("p50", 0.5), ("p99", 0.99))  # and "max", exact


def lag_stats(buckets: dict[int, int], max_ms: float) -> dict[str, float]:
    """p50/p99 (bucket middles, never above the max) and the exact max of a lag histogram."""
    out = {k: min(v, float(max_ms))
           for k, v in bucket_percentiles(buckets, dict(LAG_STATS)).items()}
    out["max"] = float(max_ms)
    return out


#: Per-task lag percentiles: their job totals come from the merged histograms, not the tasks'.
_LAG_PERCENTILE_METRICS = frozenset(
    lag_metric(m, stat) for m in CLEANUP_MECHANISMS for stat, _ in LAG_STATS)
PERCENTILES = (("latency_p50_us", 50.0), ("latency_p99_us", 99.0), ("latency_p999_us", 99.9))



@dataclass(frozen=True)
class ScenarioId(ScenarioKey):
    """The identifying columns every row of one operator run carries: the scenario and the run."""

    run_id: str


Row = tuple[int, int, int, str, float, str]  # task, step, logical_time_ms, metric, value, unit


class MetricRows:
    """Rows of one scenario, accumulated as tuples and turned into Arrow once."""

    def __init__(self, scenario: ScenarioId) -> None:
        self.scenario = scenario
        self.rows: list[Row] = []

    def add(
        self, task: int, step: int, time_ms: int, metric: str, value: float, unit: str
    ) -> None:
        self.rows.append((task, step, time_ms, metric, float(value), unit))

    def extend(self, rows: Iterable[Row]) -> None:
        self.rows.extend(rows)

    def to_batch(self) -> pa.RecordBatch:
        return rows_to_batch(self.scenario, self.rows)


def rows_to_batch(scenario: ScenarioId, rows: list[Row]) -> pa.RecordBatch:
    n = len(rows)
    cols = list(zip(*rows)) if rows else [(), (), (), (), (), ()]
    s = scenario
    arrays = [
        pa.array([s.run_id] * n, pa.string()),
        pa.array([s.label] * n, pa.string()),
        pa.array([s.backend] * n, pa.string()),
        pa.array([s.strategy] * n, pa.string()),
        pa.array([s.workload] * n, pa.string()),
        pa.array(cols[0], pa.int32()),
        pa.array(cols[1], pa.int64()),
        pa.array(cols[2], pa.int64()),
        pa.array(cols[3], pa.string()),
        pa.array(cols[4], pa.float64()),
        pa.array(cols[5], pa.string()),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=METRIC_SCHEMA)


# ------------------------------------------------------------------------------------------------
# Latency histogram
# ------------------------------------------------------------------------------------------------

SUB_BUCKET_BITS = 6
SUB_BUCKETS = 1 << SUB_BUCKET_BITS  # 64 buckets per power of two
NUM_BUCKETS = SUB_BUCKETS * (64 - SUB_BUCKET_BITS + 1)
HDR_HIGHEST_NS = 3_600 * 10**9  # one hour: anything longer is clamped
HDR_DIGITS = 3


def bucket_index(ns: np.ndarray) -> np.ndarray:
    """Log-linear bucket of each non-negative duration: exact below 64 ns, then 64 per octave."""
    v = np.maximum(np.asarray(ns, dtype=np.int64), 0)
    small = v < SUB_BUCKETS
    # bit length via frexp: v = m * 2**e with 0.5 <= m < 1, so e = bit_length(v)
    exp = np.frexp(v.astype(np.float64))[1].astype(np.int64)
    shift = np.maximum(exp - SUB_BUCKET_BITS - 1, 0)
    mantissa = v >> shift  # in [64, 128) for v >= 64
    idx = shift * SUB_BUCKETS + mantissa
    return np.where(small, v, idx)


def bucket_value(idx: np.ndarray) -> np.ndarray:
    """A representative duration (the bucket's midpoint) for bucket indices."""
    idx = np.asarray(idx, dtype=np.int64)
    shift = np.maximum(idx // SUB_BUCKETS - 1, 0)
    mantissa = np.where(idx < SUB_BUCKETS, idx, idx - shift * SUB_BUCKETS)
    low = mantissa << shift
    return low + ((1 << shift) >> 1)


class LatencyBuckets:
    """Counts per log-linear bucket; cheap to fill from numpy, merged by addition."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts = np.zeros(NUM_BUCKETS, dtype=np.int64)

    def add(self, ns: np.ndarray) -> None:
        if len(ns):
            self.counts += np.bincount(bucket_index(ns), minlength=NUM_BUCKETS)[:NUM_BUCKETS]

    def add_bucket(self, index: int, count: int) -> None:
        self.counts[index] += count

    def merge(self, other: LatencyBuckets) -> None:
        self.counts += other.counts

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def nonzero(self) -> list[tuple[int, int]]:
        idx = np.flatnonzero(self.counts)
        return [(int(i), int(self.counts[i])) for i in idx]

    def to_hdr(self) -> HdrHistogram:
        hist = HdrHistogram(1, HDR_HIGHEST_NS, HDR_DIGITS)
        for i, count in self.nonzero():
            value = int(bucket_value(np.array([i]))[0])
            hist.record_value(min(max(value, 1), HDR_HIGHEST_NS), count)
        return hist

    def percentiles_us(self) -> dict[str, float]:
        """p50/p99/p99.9/max in microseconds; empty when nothing was recorded."""
        if not self.total:
            return {}
        hist = self.to_hdr()
        out = {name: hist.get_value_at_percentile(p) / 1e3 for name, p in PERCENTILES}
        out["latency_max_us"] = hist.get_max_value() / 1e3
        return out


# ------------------------------------------------------------------------------------------------
# State size
# ------------------------------------------------------------------------------------------------

KEY_BYTES = 8  # int64 keys
TS_BYTES = 8  # the last-access timestamp of a TTL unit
MAP_KEY_BYTES = 4  # int32 map user keys


@dataclass
class StateSample:
    """Units present in state at one logical time: live, expired but present, logical bytes."""

    live: int = 0
    expired: int = 0
    logical_bytes: int = 0
    expired_bytes: int = 0


def _value_bytes(value: Any) -> int:
    cls = value.__class__
    if cls is bytes or cls is str:
        return len(value)  # payload strings are ASCII: characters == UTF-8 bytes
    return 8  # long (and accumulators)


def scan_states(backend: Any, names: Iterable[str], ttl_ms: int | None, now_ms: int) -> StateSample:
    """Classify every stored unit (value, list element, map entry) as live or expired at
    ``now_ms`` and add up its logical bytes (key + value + timestamp + map key).

    A full scan through ``raw_state(name).iter_entries()``: it does not touch TTL, counters or
    cleanup, so measuring never changes what is measured. Call it sparsely.
    """
    out = StateSample()
    for name in names:
        raw = backend.raw_state(name)
        spec = raw.spec
        ttl = spec.ttl_layout and ttl_ms is not None
        shape = spec.shape
        unit_extra = TS_BYTES if ttl else 0
        if shape == "map":
            unit_extra += MAP_KEY_BYTES
        horizon = now_ms - ttl_ms if ttl else 0  # a unit written at ts is live iff ts > horizon
        live = expired = size = expired_size = 0
        for _kg, _key, container in raw.iter_entries():
            size += KEY_BYTES
            if shape == "value":
                units: Iterable[Any] = (container,)
            elif shape == "list":
                units = container
            else:
                units = container.values()
            for unit in units:
                if ttl:
                    value, ts = unit
                    unit_size = unit_extra + (0 if value is None else _value_bytes(value))
                    if ts > horizon:
                        live += 1
                    else:
                        expired += 1
                        expired_size += unit_size
                else:
                    value = unit
                    live += 1
                    unit_size = unit_extra + (0 if value is None else _value_bytes(value))
                size += unit_size
        out.live += live
        out.expired += expired
        out.logical_bytes += size
        out.expired_bytes += expired_size
    return out


# ------------------------------------------------------------------------------------------------
# Driver side: job totals
# ------------------------------------------------------------------------------------------------


def finalize_rows(table: pa.Table) -> pa.Table:
    """Add task=-1 totals to per-task rows and drop internal rows.

    Totals per (scenario, metric, step): :func:`workloads.results.summaries.combine_tasks`
    (sums for rates, counts, entries, bytes and CPU seconds, unit "s"; the max for durations
    in ms and for shares), except the merged
    histograms for latency percentiles and cleanup-lag p50/p99 (per mechanism). Rows already
    written with task=-1 are kept as they are.
    """
    if table.num_rows == 0:
        return table.cast(METRIC_SCHEMA)
    cols = {name: table.column(name).to_pylist() for name in METRIC_SCHEMA.names}
    scenarios: dict[str, ScenarioId] = {}
    sums: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    times: dict[tuple[str, str, int], int] = {}
    units: dict[str, str] = {}
    hists: dict[tuple[str, int], LatencyBuckets] = defaultdict(LatencyBuckets)
    lag_hists: dict[tuple[str, int, str], dict[int, int]] = defaultdict(dict)
    has_total: set[tuple[str, str, int]] = set()
    for run_id, scen, backend, strategy, workload, task, step, t, metric, value, unit in zip(
        *(cols[n] for n in METRIC_SCHEMA.names)
    ):
        scenarios.setdefault(scen, ScenarioId(workload, backend, strategy, run_id))
        if metric == LATENCY_BUCKET:
            hists[(scen, _rep_of(t))].add_bucket(step, int(value))
            continue
        if metric.startswith(LAG_BUCKET):  # time = repetition, step = bucket floor
            hist = lag_hists[(scen, _rep_of(t), metric[len(LAG_BUCKET):])]
            hist[step] = hist.get(step, 0) + int(value)
            continue
        if metric.startswith(INTERNAL_PREFIX):
            continue
        key = (scen, metric, step)
        if task == TOTAL_TASK:
            has_total.add(key)
            continue
        sums[key].append(value)
        times[key] = max(times.get(key, t), t)
        units[metric] = unit

    totals: dict[str, list[Row]] = defaultdict(list)
    for (scen, metric, step), values in sums.items():
        if (scen, metric, step) in has_total or metric.startswith("latency_") or (
                metric in _LAG_PERCENTILE_METRICS):
            continue
        value = combine_tasks(units[metric], values)
        if metric in RATIO_TOTALS:  # a share of counts: the job's is the summed counts' ratio
            num, den = (math.fsum(sums.get((scen, m, step), [])) for m in RATIO_TOTALS[metric])
            value = num / den if den else 0.0
        totals[scen].append((TOTAL_TASK, step, times[(scen, metric, step)], metric, value,
                             units[metric]))
    for (scen, rep), hist in hists.items():
        for metric, value in hist.percentiles_us().items():
            if (scen, metric, rep) not in has_total:
                totals[scen].append((TOTAL_TASK, rep, NO_TIME, metric, value, "us"))

    for (scen, rep, mechanism), hist in lag_hists.items():
        top = max(sums.get((scen, lag_metric(mechanism, "max"), rep), [math.inf]))
        for stat, value in lag_stats(hist, top).items():  # the max: combined with the others
            metric = lag_metric(mechanism, stat)
            if stat != "max" and (scen, metric, rep) not in has_total:
                totals[scen].append((TOTAL_TASK, rep, NO_TIME, metric, value, "ms"))

    keep = pc.invert(pc.starts_with(table.column("metric"), INTERNAL_PREFIX))
    parts = [table.filter(keep).cast(METRIC_SCHEMA)]
    for scen, rows in totals.items():
        parts.append(pa.Table.from_batches([rows_to_batch(scenarios[scen], rows)]))
    return pa.concat_tables(parts)


def _rep_of(time_ms: int) -> int:
    # latency buckets carry their repetition in logical_time_ms (step is the bucket index)
    return int(time_ms)


def attempts(table: pa.Table) -> dict[str, int]:
    """Per scenario, how many task attempts beyond the first produced the kept rows."""
    mask = pc.equal(table.column("metric"), ATTEMPT)
    sub = table.filter(mask)
    out: dict[str, int] = {}
    for scen, value in zip(sub.column("scenario").to_pylist(), sub.column("value").to_pylist()):
        out[scen] = out.get(scen, 0) + int(value)
    return out


def job_rows(scenario: ScenarioId, repetition: int, events: int, seconds: float) -> pa.Table:
    """``job_records_per_s``: all events over the wall time of one scenario's operator job."""
    rate = events / seconds if seconds > 0 else 0.0
    row = (TOTAL_TASK, repetition, NO_TIME, "job_records_per_s", rate, "records/s")
    return pa.Table.from_batches([rows_to_batch(scenario, [row])])


def not_applicable_rows(run_id: str, workload: str, pairs: Iterable[tuple[str, str]]) -> pa.Table:
    """One ``not_applicable`` flag row per (backend, strategy) that was reported, not run."""
    batches = [
        rows_to_batch(ScenarioId(workload, backend, strategy, run_id),
                      [(TOTAL_TASK, 0, NO_TIME, "not_applicable", 1.0, "flag")])
        for backend, strategy in pairs
    ]
    return pa.Table.from_batches(batches, schema=METRIC_SCHEMA)
