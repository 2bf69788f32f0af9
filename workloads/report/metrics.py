"""Catalogue of the metrics the report knows how to present.

The rows table is open-ended (a backend may emit metrics the report has never heard of), so the
catalogue only adds what the raw rows cannot carry: a human label, which group a metric belongs
to, and whether bigger is better (needed to colour ratios in a diff and to pick "winners"). How
values combine across tasks is ``workloads.results.summaries``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# what rows mean is defined with the summaries, once; re-exported for the report's modules
from backends.cleanup.counters import MECHANISMS as CLEANUP_MECHANISMS
from backends.strategies import mechanism_title, strategy_of_label
from workloads.lanes import LANES
from workloads.report.engines import engine_of, engine_title
from workloads.results.summaries import NOT_APPLICABLE as NOT_APPLICABLE
from workloads.results.summaries import STORED_ENTRIES
from workloads.results.summaries import lag_metric as lag_metric

#: The three classes of numbers (see :func:`class_of`).
EXACT = "exact"
TIMING_DEPENDENT = "timing-dependent"
TIMED = "timed"
CLASSES = (EXACT, TIMING_DEPENDENT, TIMED)


@dataclass(frozen=True)
class MetricSpec:
    """Presentation facts about one metric name.

    ``better`` is +1 when higher is better, -1 when lower is better and 0 when the number is
    descriptive only (e.g. how many entries a mechanism removed). ``cls`` is the metric's class
    where nothing about the scenario changes it (:func:`class_of` has the whole rule).
    """

    name: str
    label: str
    unit: str
    group: str
    better: int
    #: Written by older runs only: shown when a run has it, never as an empty column.
    legacy: bool = False
    cls: str = TIMED


GROUPS: tuple[tuple[str, str], ...] = (
    ("throughput", "Throughput (median over repetitions)"),
    ("latency", "Per-record latency (median over repetitions)"),
    ("schedule", "Schedule lag: how far behind its paced source the task ran "
                 "(median over repetitions)"),
    ("state", "State size (peak over logical time)"),
    ("rocksdb", "RocksDB activity (peak over logical time: cumulative counters read as totals)"),
    ("checkpoint", "Checkpoints (median over checkpoints)"),
    ("checkpoint_model", "Checkpoint model: share of task time in synchronous checkpoint phases "
                         "and barrier waits, the task's rate while an asynchronous phase ran "
                         "beside it and while none did, the asynchronous threads' CPU, the JVM's "
                         "GC (median over repetitions)"),
    ("cleanup", "Cleanup (median over repetitions)"),
    ("cleanup_lag", "Cleanup lag per mechanism: expiry to physical removal, values, list "
                    "elements and map entries (median over repetitions)"),
    ("correctness", "Correctness"),
    ("other", "Other metrics"),
)
#: Groups only some workloads or backends have (paced clocks, RocksDB): a workload without any
#: of their numbers gets no table rather than a table of dashes.
OPTIONAL_GROUPS = frozenset({"schedule", "rocksdb", "checkpoint_model"})

#: Cleanup mechanisms, each with its own lag histogram (``cleanup_lag_<mechanism>_<stat>_ms``):
#: the backends' counters, named as their strategies are (``backends.strategies``).
MECHANISMS: tuple[tuple[str, str], ...] = tuple(
    (mechanism, mechanism_title(mechanism)) for mechanism in CLEANUP_MECHANISMS)
LAG_STATS = ("p50", "p99", "max")


def rocksdb_metric(name: str) -> bool:
    """True for RocksDB's own counters and sizes (flushes, compactions, SST files, ...)."""
    return name.startswith("rocksdb_")

_CATALOGUE: tuple[MetricSpec, ...] = (
    MetricSpec("records_per_s", "records", "records/s", "throughput", +1),
    MetricSpec("state_ops_per_s", "state operations", "ops/s", "throughput", +1),
    MetricSpec("job_records_per_s", "whole job (with scheduling and transfer)", "records/s",
               "throughput", +1),
    MetricSpec("records", "records processed", "records", "throughput", 0, cls=EXACT),
    MetricSpec("sql_job_s", "Flink SQL job, submission to result", "s", "throughput", -1),
    # Spark's lanes (workloads.lanes.spark_sql, spark_tws): a streaming query per job
    MetricSpec("spark_query_s", "Spark query, start to stop", "s", "throughput", -1),
    MetricSpec("spark_batches", "micro-batches", "count", "throughput", 0,
               cls=TIMING_DEPENDENT),
    MetricSpec("batch_duration_p50_ms", "micro-batch p50", "ms", "latency", -1),
    MetricSpec("batch_duration_max_ms", "micro-batch max", "ms", "latency", -1),
    MetricSpec("batch_duration_ms", "micro-batch duration", "ms", "latency", -1),
    MetricSpec("state_commit_ms", "state store commit", "ms", "checkpoint", -1),
    MetricSpec("state_commit_total_ms", "state store commits, summed", "ms", "checkpoint", -1),
    MetricSpec("batch_duration_p99_ms", "micro-batch p99", "ms", "latency", -1),
    MetricSpec("spark_start_s", "Spark query start-up", "s", "throughput", -1),
    MetricSpec("ttl_removed_values", "values removed by Spark's TTL", "count", "cleanup", 0,
               cls=TIMING_DEPENDENT),
    MetricSpec("checkpoint_written_bytes", "state store checkpoint files uploaded, summed",
               "bytes",
               "checkpoint", -1, cls=TIMING_DEPENDENT),
    MetricSpec("spark_model_mismatches", "reads unlike the TTL model's", "count", "correctness",
               -1, cls=TIMING_DEPENDENT),
    MetricSpec("released_records_per_s", "records released by the paced source", "records/s",
               "throughput", +1),
    MetricSpec("schedule_lag_p50_ms", "p50", "ms", "schedule", -1),
    MetricSpec("schedule_lag_p99_ms", "p99", "ms", "schedule", -1),
    MetricSpec("schedule_lag_max_ms", "max", "ms", "schedule", -1),
    MetricSpec("late_records_share", "records late", "share", "schedule", -1),
    MetricSpec("latency_p50_us", "p50", "us", "latency", -1),
    MetricSpec("latency_p99_us", "p99", "us", "latency", -1),
    MetricSpec("latency_p999_us", "p99.9", "us", "latency", -1),
    MetricSpec("latency_max_us", "max", "us", "latency", -1),
    MetricSpec("live_entries", "live entries", "entries", "state", -1, cls=EXACT),
    MetricSpec("expired_present_entries", "expired-present entries", "entries", "state", -1,
               cls=EXACT),
    MetricSpec("expired_present_bytes", "expired-present bytes", "bytes", "state", -1, cls=EXACT),
    MetricSpec(STORED_ENTRIES, "stored entries (live + expired)", "entries", "state", -1,
               cls=EXACT),
    MetricSpec("logical_bytes", "logical bytes", "bytes", "state", -1, cls=EXACT),
    MetricSpec("physical_bytes", "physical bytes", "bytes", "state", -1, cls=EXACT),
    # flink-sql (a real Flink SQL job): RocksDB's estimate-num-keys over its column families
    MetricSpec("estimated_entries", "estimated entries (RocksDB's estimate-num-keys)", "entries",
               "state", -1, cls=TIMING_DEPENDENT),
    # Spark's state store (numRowsTotal, numRowsUpdated, numRowsRemoved, memoryUsedBytes) and
    # its watermark eviction, per micro-batch
    MetricSpec("state_rows", "state store rows", "rows", "state", -1, cls=TIMING_DEPENDENT),
    MetricSpec("state_internal_rows",
               "state store internal rows (the TTL index, list counts: Spark's "
               "rocksdbNumInternalColFamiliesKeys)",
               "rows", "state", -1, cls=TIMING_DEPENDENT),
    MetricSpec("state_rows_updated", "state store rows updated", "rows", "state", 0,
               cls=TIMING_DEPENDENT),
    MetricSpec("state_rows_removed", "state store rows removed", "rows", "state", 0,
               cls=TIMING_DEPENDENT),
    MetricSpec("state_memory_bytes", "state store memory", "bytes", "state", -1,
               legacy=True, cls=TIMING_DEPENDENT),
    # Spark's own per-batch and per-query numbers, as its StreamingQueryProgress names them
    # (workloads.lanes.spark_tws, spark_sql)
    MetricSpec("state_updates_ms", "state updates (allUpdatesTimeMs)", "ms", "latency", -1),
    MetricSpec("state_updates_total_ms", "state updates, summed (allUpdatesTimeMs)", "ms",
               "throughput", -1),
    MetricSpec("rocksdb_puts", "RocksDB puts per batch (rocksdbPutCount)", "count", "rocksdb", 0,
               cls=TIMING_DEPENDENT),
    MetricSpec("rocksdb_puts_total", "RocksDB puts (rocksdbPutCount)", "count", "rocksdb", 0,
               cls=TIMING_DEPENDENT),
    MetricSpec("rocksdb_bytes_written", "RocksDB bytes written per batch "
               "(rocksdbTotalBytesWritten)", "bytes", "rocksdb", -1, cls=TIMING_DEPENDENT),
    MetricSpec("rocksdb_bytes_written_total", "RocksDB bytes written "
               "(rocksdbTotalBytesWritten)", "bytes", "rocksdb", -1, cls=TIMING_DEPENDENT),
    MetricSpec("rocksdb_flush_bytes_written_total", "RocksDB bytes written by flushes",
               "bytes", "rocksdb", -1, cls=TIMING_DEPENDENT),
    MetricSpec("rocksdb_compaction_bytes_written_total", "RocksDB bytes written by compactions",
               "bytes", "rocksdb", -1, cls=TIMING_DEPENDENT),
    MetricSpec("spark_min_deltas_for_snapshot", "snapshot every N batches "
               "(minDeltasForSnapshot)", "batches", "checkpoint", 0, cls=EXACT),
    MetricSpec("ttl_removed_values_batch", "values removed by Spark's TTL per batch", "count",
               "cleanup", 0, cls=TIMING_DEPENDENT),
    MetricSpec("ttl_run_valid", "TTL run kept up with its TTL (1) or not (0: not ranked)",
               "flag", "correctness", 0, cls=TIMING_DEPENDENT),
    MetricSpec("ttl_wall_ms", "TTL on the wall clock", "ms", "correctness", 0, cls=EXACT),
    MetricSpec("late_rows_dropped", "rows dropped as late by the watermark "
               "(numRowsDroppedByWatermark)", "count", "correctness", -1, cls=TIMING_DEPENDENT),
    MetricSpec("timers_fired_batch", "timers fired per batch", "count", "cleanup", 0,
               cls=TIMING_DEPENDENT),
    MetricSpec("data_batch_duration_p50_ms", "micro-batch p50, batches with data", "ms",
               "latency", -1),
    MetricSpec("state_evicted_by_watermark", "state evicted by the watermark (0: unbounded)",
               "flag", "correctness", 0, cls=EXACT),
    MetricSpec("keep_last_outputs", "keep-last dedup outputs", "count", "correctness", 0,
               cls=TIMING_DEPENDENT),
    MetricSpec("keep_last_keys", "keep-last dedup keys", "count", "correctness", 0,
               cls=TIMING_DEPENDENT),
    MetricSpec("keep_last_changed_keys", "keep-last keys unlike the emulation's", "count",
               "correctness", -1, cls=TIMING_DEPENDENT),
    MetricSpec("keep_last_compared_keys", "keep-last keys compared with the emulation", "count",
               "correctness", 0, cls=TIMING_DEPENDENT),
    MetricSpec("keep_last_changed_share", "keep-last keys unlike the emulation's", "share",
               "correctness", -1, cls=TIMING_DEPENDENT),
    MetricSpec("emulation_changed_outputs", "outputs unlike the emulation's", "count",
               "correctness", -1, cls=TIMING_DEPENDENT),
    MetricSpec("emulation_compared_outputs", "outputs compared with the emulation", "count",
               "correctness", 0, cls=TIMING_DEPENDENT),
    MetricSpec("emulation_changed_share", "outputs unlike the emulation's", "share",
               "correctness", -1, cls=TIMING_DEPENDENT),
    MetricSpec("rows_dropped_by_watermark", "rows dropped by the watermark", "count",
               "correctness", 0, cls=TIMING_DEPENDENT),
    MetricSpec("watermark_ms", "watermark", "ms", "state", 0, cls=TIMING_DEPENDENT),
    MetricSpec("checkpoint_dir_bytes", "state store checkpoint files (state/**)", "bytes",
               "checkpoint", -1,
               cls=TIMING_DEPENDENT),
    MetricSpec("checkpoint_dir_final_bytes", "state store checkpoint files (state/**) at the end",
               "bytes",
               "checkpoint", -1, cls=TIMING_DEPENDENT),
    # ForSt (flink-forst): the files in its local working folder and on its primary folder
    MetricSpec("physical_local_bytes", "physical bytes, local", "bytes", "state", -1,
               cls=TIMING_DEPENDENT),
    MetricSpec("physical_primary_bytes", "physical bytes, primary", "bytes", "state", -1,
               cls=TIMING_DEPENDENT),
    MetricSpec("rocksdb_flushes", "flushes", "count", "rocksdb", 0, cls=TIMING_DEPENDENT),
    MetricSpec("rocksdb_compactions", "compactions", "count", "rocksdb", 0, cls=TIMING_DEPENDENT),
    MetricSpec("rocksdb_compaction_read_bytes", "compaction read", "bytes", "rocksdb", 0,
               cls=TIMING_DEPENDENT),
    MetricSpec("rocksdb_compaction_write_bytes", "compaction written", "bytes", "rocksdb", -1,
               cls=TIMING_DEPENDENT),
    MetricSpec("rocksdb_write_amp", "write amplification", "x", "rocksdb", -1,
               cls=TIMING_DEPENDENT),
    MetricSpec("rocksdb_sst_files", "SST files", "count", "rocksdb", -1, cls=TIMING_DEPENDENT),
    MetricSpec("rocksdb_sst_bytes", "SST bytes", "bytes", "rocksdb", -1, cls=TIMING_DEPENDENT),
    MetricSpec("rocksdb_memtable_bytes", "memtable bytes", "bytes", "rocksdb", 0,
               cls=TIMING_DEPENDENT),
    MetricSpec("checkpoint_bytes", "full size", "bytes", "checkpoint", -1, cls=EXACT),
    MetricSpec("checkpoint_uploaded_bytes", "uploaded", "bytes", "checkpoint", -1, cls=EXACT),
    MetricSpec("checkpoint_referenced_bytes", "referenced (not uploaded)", "bytes", "checkpoint",
               0, cls=EXACT),
    MetricSpec("checkpoint_sync_ms", "sync duration", "ms", "checkpoint", -1),
    MetricSpec("checkpoint_async_ms", "async duration", "ms", "checkpoint", -1),
    MetricSpec("checkpoint_upload_ms", "upload duration", "ms", "checkpoint", -1),
    MetricSpec("checkpoint_total_ms", "total duration", "ms", "checkpoint", -1),
    MetricSpec("checkpoint_async_cpu_ms", "async CPU", "ms", "checkpoint", -1),
    MetricSpec("checkpoint_wait_ms", "wait for a checkpoint slot", "ms", "checkpoint", -1),
    MetricSpec("restore_ms", "restore", "ms", "checkpoint", -1),
    # the engines' checkpoint model: per task and repetition
    MetricSpec("checkpoint_sync_share", "share of task time in sync phases and waits", "share",
               "checkpoint_model", -1),
    MetricSpec("records_per_s_during_async", "records/s while an async phase ran", "records/s",
               "checkpoint_model", +1),
    MetricSpec("records_per_s_outside_async", "records/s with no async phase", "records/s",
               "checkpoint_model", +1),
    MetricSpec("checkpoint_async_cpu_s", "async threads' CPU", "s", "checkpoint_model", -1),
    MetricSpec("jvm_gc_ms", "JVM GC time", "ms", "checkpoint_model", -1),
    MetricSpec("jvm_gc_count", "JVM GC runs", "count", "checkpoint_model", -1),
    MetricSpec("cleanup_removed_read", "removed on read", "entries", "cleanup", 0, cls=EXACT),
    MetricSpec("cleanup_removed_incremental", "removed incrementally", "entries", "cleanup", 0,
               cls=EXACT),
    MetricSpec("cleanup_removed_compaction_filter", "removed by compaction", "entries",
               "cleanup", 0, cls=EXACT),
    MetricSpec("cleanup_removed_timer", "removed by timer", "entries", "cleanup", 0, cls=EXACT),
    MetricSpec("cleanup_removed_full_snapshot", "dropped from snapshots", "entries", "cleanup", 0,
               cls=EXACT),
    # cleanup lag is logical ms (expiry time to removal time on the TTL clock), not wall time
    *(
        MetricSpec(lag_metric(m, st), f"{label} lag {st}", "ms", "cleanup_lag", -1, cls=EXACT)
        for m, label in MECHANISMS
        for st in LAG_STATS
    ),
    # one histogram over every mechanism, as older runs wrote it
    MetricSpec("cleanup_lag_mean_ms", "cleanup lag mean", "ms", "cleanup", -1, legacy=True,
               cls=EXACT),
    MetricSpec("cleanup_lag_max_ms", "cleanup lag max", "ms", "cleanup", -1, legacy=True,
               cls=EXACT),
    MetricSpec("cleanup_lag_p50_ms", "cleanup lag p50", "ms", "cleanup", -1, legacy=True,
               cls=EXACT),
    MetricSpec("cleanup_lag_p99_ms", "cleanup lag p99", "ms", "cleanup", -1, legacy=True,
               cls=EXACT),
    MetricSpec("expired_returned", "expired values returned (must be 0)", "count",
               "correctness", -1, cls=EXACT),
    # operator workloads (workloads.operators): outputs, and what a TTL changed in them against
    # the same run without TTL - exact under event time (the TTL clock is the records' time)
    MetricSpec("ttl_changed_results", "outputs changed by the TTL (share)", "share",
               "correctness", -1, cls=EXACT),
    MetricSpec("ttl_changed_outputs", "outputs changed by the TTL", "count", "correctness", -1,
               cls=EXACT),
    MetricSpec("ttl_compared_outputs", "outputs compared (TTL run and reference)", "count",
               "correctness", 0, cls=EXACT),
    MetricSpec("operator_outputs", "operator outputs", "count", "correctness", 0, cls=EXACT),
    MetricSpec("timers_registered", "timers registered", "count", "state", 0, cls=EXACT),
    MetricSpec("timers_fired", "timers fired", "count", "state", 0, cls=EXACT),
)

CATALOGUE: dict[str, MetricSpec] = {m.name: m for m in _CATALOGUE}


def spec_for(name: str, unit: str = "") -> MetricSpec:
    """Return the catalogue entry for ``name``, or a neutral one built from the row's unit.

    Unknown metrics still get a row in the tables (group "other") so nothing a run measured is
    silently dropped from the report.
    """
    known = CATALOGUE.get(name)
    if known is not None:
        return known
    return MetricSpec(name, name.replace("_", " "), unit, "other", 0)


# ------------------------------------------------------------------------------------------------
# Classes: which numbers repeat exactly, which move with background timing, which are timed
# ------------------------------------------------------------------------------------------------

#: The clock under which counted numbers repeat from run to run.
LOGICAL_CLOCK = "EventTime"
#: Physical sizes: RocksDB's files (SST files + memtables) on a RocksDB backend; on statebench's
#: heap the footprint of the Python objects its states hold, which with the engines'
#: checkpoint model (copy-on-write of list and map containers while an asynchronous snapshot
#: runs) moves slightly from run to run (two same-seed runs of sessions-churn: up to 0.02%
#: apart at 17 of 44 samples); Flink's heap lane counts serialized sizes, identical run to run.
FILE_SIZE_METRICS = frozenset({"physical_bytes"})
#: Checkpoint sizes: canonical full snapshots are a function of the state's contents; RocksDB's
#: incremental checkpoints are the SST files that exist at the barrier.
CHECKPOINT_SIZE_METRICS = frozenset({"checkpoint_bytes", "checkpoint_uploaded_bytes",
                                     "checkpoint_referenced_bytes"})
#: Numbers that stay exact even where the state's layout is timing-dependent: expired values
#: returned must be 0 whatever happens, records processed is the input.
ALWAYS_EXACT = frozenset({"expired_returned", "records"})


@dataclass(frozen=True)
class MetricClass:
    """A metric's class in one scenario and why (``reason`` is "" for exact numbers)."""

    cls: str
    reason: str = ""

    @property
    def exact(self) -> bool:
        return self.cls == EXACT


def lane_class(backend: str, metric: str) -> MetricClass | None:
    """The class a job lane gives one of its numbers (``Lane.metric_classes``), where it says:
    a lane that runs a whole engine job knows which of the engine's numbers repeat."""
    lane = LANES.get(backend)
    cls = None if lane is None else lane.metric_classes.get(metric)
    if cls is None:
        return None
    return MetricClass(cls, "" if cls == EXACT else f"{backend}: as its lane classes it "
                                                    "(workloads.lanes)")


def class_of(metric: str, backend: str = "", strategy: str = "", *,
             clock: str = LOGICAL_CLOCK, checkpoint_mode: str = "full") -> MetricClass:
    """The class of ``metric`` in a scenario: the one rule the report, ``diff`` and asv share.

    * **exact** (:data:`EXACT`): counted under the logical clock; the same seed and configuration
      give the same number: entry counts, logical bytes, Flink's heap lane's physical bytes
      (serialized sizes), canonical full-snapshot sizes, cleanup counts and lags (logical ms).
      A diff says "equal" or "different".
    * **timing-dependent** (:data:`TIMING_DEPENDENT`): physical numbers that move with
      background threads: RocksDB's SST/physical/memtable bytes, flush and compaction counts,
      write amplification, RocksDB's incremental checkpoint sizes (and Flink's RocksDB
      checkpoints in full mode too), statebench's heap footprint (copy-on-write while
      asynchronous snapshots run); with RocksDB's compaction
      filter also the state's counts (it drops entries when a compaction runs); and every
      counted number on a ProcessingTime (paced) clock. A diff gives their spread and the
      significance test, never "different".
    * **timed** (:data:`TIMED`): throughput, latency, durations, shares of time, CPU, GC.
      Unknown metrics are treated as timed: never "different" without a rule saying so.

    ``clock`` is the workload's TTL time characteristic ("EventTime" or "ProcessingTime"),
    ``checkpoint_mode`` its spec's ``[checkpoints] mode`` ("full" or "incremental").
    """
    spec = CATALOGUE.get(metric)
    if spec is None:
        return MetricClass(TIMED, "not in the metric catalogue")
    if spec.cls == TIMED:
        return MetricClass(TIMED, "timed")
    own = lane_class(backend, metric)
    if own is not None:
        return own
    if spec.cls == TIMING_DEPENDENT or rocksdb_metric(metric):
        return MetricClass(TIMING_DEPENDENT, "RocksDB's counters and sizes depend on when its "
                                             "background flushes and compactions ran")
    if metric in ALWAYS_EXACT:
        return MetricClass(EXACT)
    timing = engine_title(engine_of(backend)).timing  # the lane registry's engine
    if timing:
        return MetricClass(TIMING_DEPENDENT, timing)
    if clock != LOGICAL_CLOCK:
        return MetricClass(TIMING_DEPENDENT, f"{clock} clock: counts depend on wall time")
    lane = LANES.get(backend)  # what the lane says of its numbers (an older run's: nothing)
    on_rocksdb = lane is not None and lane.background_compactions
    if on_rocksdb and metric in FILE_SIZE_METRICS:
        return MetricClass(TIMING_DEPENDENT, "file sizes depend on background flushes and "
                                             "compactions")
    if lane is not None and lane.copy_on_write_sizes and metric in FILE_SIZE_METRICS:
        return MetricClass(TIMING_DEPENDENT, "copy-on-write during asynchronous snapshots: "
                                             "which containers were copied depends on when "
                                             "each snapshot's asynchronous part ran")
    if on_rocksdb and metric in CHECKPOINT_SIZE_METRICS and checkpoint_mode == "incremental":
        return MetricClass(TIMING_DEPENDENT, "incremental checkpoints hold the SST files that "
                                             "exist at the barrier: background compactions "
                                             "decide which")
    if lane is not None and lane.layout_checkpoints and metric in CHECKPOINT_SIZE_METRICS:
        return MetricClass(TIMING_DEPENDENT, "Flink's RocksDB snapshots follow its SST layout "
                                             "in full mode too: background compactions move "
                                             "them")
    cleanup = strategy_of_label(strategy)
    if on_rocksdb and cleanup is not None and cleanup.cleans_in_compactions:
        return MetricClass(TIMING_DEPENDENT, "the compaction filter drops entries when "
                                             "background compactions run")
    return MetricClass(EXACT)


def _spec_of(meta: dict[str, Any], workload: str) -> dict[str, Any]:
    specs = meta.get("spec")
    for spec in specs if isinstance(specs, list) else [specs]:
        if isinstance(spec, dict) and spec.get("name") == workload:
            return spec
    return {}


def workload_clock(meta: dict[str, Any], workload: str) -> str:
    """The workload's TTL time characteristic from run.json ("unknown" if the run has no spec
    for it); a spec without the field is ProcessingTime, the parser's default."""
    spec = _spec_of(meta, workload)
    if not spec:
        return "unknown"
    state = spec.get("state") if isinstance(spec.get("state"), dict) else {}
    return str(state.get("time_characteristic", "ProcessingTime"))


# ------------------------------------------------------------------------------------------------
# Lockstep latency: a job whose latency measures how far it fell behind, not the engine
# ------------------------------------------------------------------------------------------------

#: The per-record latency percentiles: each output row's (or record's) delay.
PER_RECORD_LATENCY = ("latency_p50_us", "latency_p99_us", "latency_p999_us", "latency_max_us")
#: How the report names such a number wherever it shows one.
LOCKSTEP = "lockstep: how far the job fell behind its paced clock"


def lockstep_latency(metric: str, backend: str, clock: str) -> bool:
    """Whether ``metric`` of ``backend`` under ``clock`` (the workload's time characteristic)
    measures how far a lockstep job fell behind its paced clock, not the engine's per-record
    latency: its lane says so of itself (``Lane.event_time_lockstep``: the Flink SQL job holds
    each record until its keyed tasks took the one before, so that its TTL clock follows the
    records' time). Such a number is shown marked (:data:`LOCKSTEP`) and never ranked against
    another lane's latency; under ProcessingTime the job does not run in lockstep."""
    if metric not in PER_RECORD_LATENCY or clock != LOGICAL_CLOCK:
        return False
    lane = LANES.get(backend)
    return lane is not None and lane.event_time_lockstep


def run_lockstep_latency(metas: list[dict[str, Any]], workload: str, backend: str,
                         metric: str) -> bool:
    """:func:`lockstep_latency` for a scenario of one or more runs (their run.json dicts):
    lockstep when any run's clock makes it so, so that no comparison reads it as the
    engine's."""
    return any(lockstep_latency(metric, backend, workload_clock(m, workload)) for m in metas)


def workload_checkpoint_mode(meta: dict[str, Any], workload: str) -> str:
    """The workload's checkpoint mode from run.json ("incremental" when unknown: the class
    that claims less)."""
    spec = _spec_of(meta, workload)
    ckpt = spec.get("checkpoints") if isinstance(spec.get("checkpoints"), dict) else None
    if ckpt is None:
        return "incremental"
    return str(ckpt.get("mode", "full"))


def run_class_of(metas: list[dict[str, Any]], workload: str, backend: str, strategy: str,
                 metric: str) -> MetricClass:
    """:func:`class_of` for a scenario of one or more runs (their run.json dicts): exact only
    when it is exact under every run's clock and checkpoint mode."""
    found = [class_of(metric, backend, strategy, clock=workload_clock(m, workload),
                      checkpoint_mode=workload_checkpoint_mode(m, workload)) for m in metas]
    for cls in (TIMED, TIMING_DEPENDENT):
        for c in found:
            if c.cls == cls:
                return c
    return found[0] if found else class_of(metric, backend, strategy)
