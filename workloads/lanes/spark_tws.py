"""The ``spark-tws`` lanes: a key-value spec's events through Spark's own keyed state, a real
Structured Streaming query with ``transformWithState`` on the RocksDB state store
(``backends.spark.tws``), as the run's metric rows.

Two lanes, the changelog knob: ``spark-tws`` (RocksDB changelog checkpointing on, Spark's
recommended setting: a batch uploads a changelog of its writes, snapshots come from the
maintenance thread) and ``spark-tws-nochangelog`` (off: every batch's commit uploads the
store's new SST files).

Strategies, in Spark's own terms (``backends.strategies``): ``spark_no_ttl`` (state kept
forever), ``spark_ttl`` (``ttlDurationMs`` on every state variable: reads hide expired units,
the end-of-batch sweep removes them) and ``spark_timer`` (a processing-time timer per key,
re-registered whenever a batch writes the key, clears the key when it fires: what Spark users
wrote before TTL), run by default; and, when a run names it, ``spark_event_timer`` on EventTime
specs (``backends.cleanup.spark_event_timer``: ``TimeMode.EventTime``, a watermark on the
events' time, a timer per key at its last write's time plus the TTL; Spark refuses its TTL in
that mode). statebench's strategies are not applicable here, each with its reason
(:data:`FOREIGN_REASONS`).

Events: exactly the run's (``workloads.run.source.keyed_table``, same seed and source
partitions), in the order statebench's tasks read them (by ts, then seq), one query at the run's
parallelism (shuffle partitions). The spec's values are written as they are (``long``, or the
``string``/``bytes`` payload of each event's ``value_size``).

Clock: Spark's TTL and timers run on the micro-batch's processing time, so the lane runs paced
like flink-sql: event ``ts`` is released at ``(ts - start) / speedup`` wall ms after the query
starts (Parquet files of :data:`SLICE_MS`, a processing-time trigger every :data:`TRIGGER_MS`),
and the TTL is ``ttl_ms / speedup`` wall ms. Under an EventTime spec the paced clock stands in
for the records' time as long as the query keeps up. Every number is therefore timing-dependent
or timed (:attr:`SparkTwsLane.metric_classes`). ``spark_event_timer`` is not paced: its query
runs on the records' time, one micro-batch per :data:`EVENT_SLICE_MS` of it, its input written
before it starts (``backends.spark.tws.run_event_query``), so its state and timers are the
same in every run; its rows leave out the release-based ones (``released_records_per_s``, the
latencies) and give ``late_rows_dropped`` (``numRowsDroppedByWatermark``, summed),
``ttl_run_valid`` (1 when the watermark dropped none of the spec's records and every event was
processed: the batches' lag cannot change what expires), ``timers_fired`` from the timer
handler's own rows (checked against the model in ``spark_model_mismatches``) and per batch
``timers_fired_batch``; its per-batch ``logical_time_ms`` is the batch's watermark.

Rows (task = -1, the job; ``workloads.run.metrics`` names where they mean the same; every
batch from the query's ``StreamingQueryListener``, ``backends.spark.listener``; the query runs
on after its last event until a batch started at or after the last data batch's time plus
the TTL or timer, so the final sweep is in them; docs/spark-lanes.md has the table with
Spark's name of each):

* summary (``step`` = repetition): ``records``, ``records_per_s`` (events over the query's
  processing time, ``backends.spark.listener.processing_ms``, as spark-sql's),
  ``released_records_per_s``,
  ``latency_p50_us``/``_p99_us``/``_p999_us``/``_max_us`` (per event: its release to the end of
  the batch that processed it), ``batch_duration_p50_ms``/``_p99_ms``/``_max_ms``,
  ``spark_batches``, ``spark_query_s``, ``spark_start_s``; Spark's own, summed over every
  batch of the query: ``ttl_removed_values`` (``numValuesRemovedDueToTTLExpiry``),
  ``timers_registered`` (``numRegisteredTimers``), ``state_commit_total_ms``
  (``commitTimeMs``), ``state_updates_total_ms`` (``allUpdatesTimeMs``),
  ``rocksdb_puts_total`` (``rocksdbPutCount``), ``rocksdb_bytes_written_total``
  (``rocksdbTotalBytesWritten``) and, only when not 0, ``rocksdb_flush_bytes_written_total``
  and ``rocksdb_compaction_bytes_written_total``; ``spark_min_deltas_for_snapshot`` (the
  snapshot interval set); ``checkpoint_written_bytes`` (the state store's uploads after the
  warm-up, summed: ``backends.spark.files.StateUploads``), ``checkpoint_dir_final_bytes``
  (``state/**`` at the end); ``timers_fired``, ``expired_returned``,
  ``spark_model_mismatches`` and ``ttl_changed_*`` (the model's, ``backends.spark.tws_model``);
  under spark_ttl and spark_timer ``ttl_run_valid`` (:func:`ttl_run_valid`) with
  ``ttl_wall_ms`` and ``data_batch_duration_p50_ms`` beside it;
* per micro-batch (``step`` = batch id, ``logical_time_ms`` = its time on the paced clock),
  every repetition: ``checkpoint_dir_bytes`` (``state/**`` after the batch),
  ``checkpoint_uploaded_bytes`` (its uploads); repetition 0 only: ``state_rows``
  (``numRowsTotal``), ``state_internal_rows`` (``rocksdbNumInternalColFamiliesKeys``),
  ``ttl_removed_values_batch``, ``state_commit_ms``, ``state_updates_ms``, ``rocksdb_puts``,
  ``rocksdb_bytes_written``, ``rocksdb_sst_bytes`` (only in a run where some batch had SST
  files: with the changelog on, none until a snapshot), ``batch_duration_ms``,
  ``live_entries`` and ``expired_present_entries`` (the model's).

Left out: ``memoryUsedBytes`` (constant batch after batch: RocksDB's memtable arena and block
cache, not the state).
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from backends.cleanup.spark_event_timer import SPARK_EVENT_TIMER
from backends.strategies import (
    SPARK_NO_TTL,
    SPARK_TIMER,
    SPARK_TTL,
    SPARK_WATERMARK,
    strategy_of_label,
)
from workloads.errors import first_line
from workloads.lanes.base import Lane, RunView
from workloads.lanes.cost import RESULT_ROWS_PER_JOB, JobCost, JobLoad, paced_span_s, values_s
from workloads.ops import Op, StateType
from workloads.run.config import DataFacts, OperatorConfig
from workloads.spec import WorkloadSpec

TOTAL_TASK = -1
NO_TIME = -1
#: Wall ms of input per released file, and the processing-time trigger's interval. Spark's own
#: per-batch work (planning, commit) takes 0.5-2 s here, so batches run back to back and take
#: whatever was released meanwhile; the trigger only bounds how soon an idle query looks.
SLICE_MS = 100
TRIGGER_MS = 200
#: Wall seconds a job takes beyond its paced span: Spark starts the query and its warm-up batch,
#: then the driver replays the model. And the records per second a query gets through when the
#: clock does not hold it back, halved for the batches' fixed cost (docs/guide.md, "The
#: estimate's rates").
QUERY_START_S = 15.0
QUERY_RECORDS_PER_S = 10_000.0
#: Seconds a query may run beyond its paced span before it is given up.
DEFAULT_TIMEOUT_S = 300.0
SPARK_STRATEGIES = ("spark_no_ttl", "spark_ttl", "spark_timer")
#: What the lanes run when a run names it: their own (run by default) and the event-time timer
#: (EventTime specs only; named with ``--strategies``).
RUNS = (*SPARK_STRATEGIES, SPARK_EVENT_TIMER.name)
#: Ms of the records' time per micro-batch of a spark_event_timer query (its timers fire at
#: batch ends: expiry is exact to within one batch of the records' time and the watermark's
#: delay); the paced queries' trigger interval, so that at speedup 1 both cut time alike.
EVENT_SLICE_MS = 200
#: Wall seconds a micro-batch costs beyond its records (Spark's planning and commit: 0.65-1.5 s
#: for a batch without data here), for the estimate of an event-time query of many batches.
EVENT_BATCH_S = 1.0
#: Why each of statebench's strategies has no counterpart on these lanes (Spark's source:
#: ``backends.spark.tws``).
FOREIGN_REASONS: Mapping[str, str] = {
    "none": ("'none' is TTL with read-time cleanup only, which Spark has no setting for: its "
             "reads hide an expired value without deleting it (ValueStateImplWithTTL.get) and "
             "only the end-of-batch sweep removes it; use spark_ttl"),
    "full_snapshot": ("Spark's checkpoints are the RocksDB store's own files (changelog or "
                      "snapshot); no setting leaves expired values out of them"),
    "incremental": ("Spark has no lazy per-access cleanup; its TTL sweeps an expiry index at "
                    "the end of every batch (spark_ttl)"),
    "compaction_filter": ("Spark's RocksDB state store installs no TTL compaction filter; "
                          "expired values are deleted by the end-of-batch sweep (spark_ttl)"),
    "timer": ("statebench's timer strategy is an expiry-ordered index that removes each unit "
              "once the clock passes its expiry: on Spark that is spark_ttl (its $ttl_ index, "
              "swept every batch); spark_timer is the per-key timer a user writes"),
}
_TIMING = "timing-dependent"
#: Spark's RocksDB write counters that stay 0 until RocksDB flushes or compacts (with the
#: changelog on: only when a snapshot is taken): summary row -> Spark's custom metric.
SOMETIMES_ZERO_SUMS = (("rocksdb_flush_bytes_written_total", "rocksdbTotalBytesWrittenByFlush"),
                       ("rocksdb_compaction_bytes_written_total",
                        "rocksdbTotalBytesWrittenByCompaction"))


def _state_types_of(spec: WorkloadSpec) -> set[str] | str:
    """The state types the spec's operations use, or why they cannot be known (a trace)."""
    if spec.operations is not None:
        return {op.state_type.value for op, p in spec.operations if p > 0}
    import pyarrow.parquet as pq

    path = spec.source.path
    try:
        column = pq.read_table(str(path), columns=["op"]).column("op")
    except Exception as exc:  # a missing file, no 'op' column, not Parquet
        first = first_line(exc)
        return f"spark-tws cannot read the trace {path}: {first}"
    values = pc.unique(column).to_pylist()
    found: set[str] = set()
    for value in values:
        try:
            op = Op(value) if isinstance(value, int) else Op.from_name(str(value))
        except ValueError:
            return f"spark-tws cannot read the trace {path}: unknown op {value!r}"
        found.add(op.state_type.value)
    return found


class SparkTwsLane(Lane):
    """Spark's transformWithState with TTL, changelog checkpointing on (module docstring)."""

    name = "spark-tws"
    engine = "spark"
    summary = ("Spark Structured Streaming transformWithState (value, list, map state) on the "
               "RocksDB state store, changelog checkpointing on; paced micro-batches")
    runs_tasks = False
    #: the session's JVM and Python workers warm up: the first query of a session is slow
    keeps_state = True
    own_strategies = RUNS  # spark_event_timer on EventTime specs; on others not applicable
    changelog = True
    metric_classes: Mapping[str, str] = {m: _TIMING for m in (
        "live_entries", "expired_present_entries", "checkpoint_dir_bytes",
        "checkpoint_uploaded_bytes", "checkpoint_written_bytes", "checkpoint_dir_final_bytes",
        "state_rows", "state_internal_rows", "rocksdb_sst_bytes",
        "ttl_removed_values", "ttl_removed_values_batch", "rocksdb_puts", "rocksdb_puts_total",
        "rocksdb_bytes_written", "rocksdb_bytes_written_total",
        "rocksdb_flush_bytes_written_total", "rocksdb_compaction_bytes_written_total",
        "ttl_run_valid", "late_rows_dropped", "timers_fired_batch",
        "timers_registered", "timers_fired", "expired_returned", "spark_model_mismatches",
        "ttl_changed_outputs", "ttl_compared_outputs", "ttl_changed_results", "spark_batches")
    } | {"spark_min_deltas_for_snapshot": "exact", "ttl_wall_ms": "exact",  # settings
         "data_batch_duration_p50_ms": "timed", "state_updates_ms": "timed",
         "state_updates_total_ms": "timed"}

    # ---------------------------------------------------------------- what it runs
    def spec_reason(self, run: RunView) -> str | None:
        spec = run.spec
        if spec.operator is not None:
            return (f"{self.name} runs key-value specs; {spec.name} has an [operator] table "
                    f"({spec.operator.kind}), whose Spark lane is spark-sql")
        types = _state_types_of(spec)
        if isinstance(types, str):
            return types
        other = sorted(types - {StateType.VALUE.value, StateType.LIST.value,
                                StateType.MAP.value})
        if other:
            return (f"{self.name}: Spark's transformWithState has value, list and map state "
                    f"only; {spec.name} uses {' and '.join(other)} state")
        return None

    def strategy_reason(self, run: RunView, label: str) -> str | None:
        text = self.cleanup_of(run, label)
        name = text.split("(", 1)[0].strip()
        registered = strategy_of_label(text)
        if name in FOREIGN_REASONS:
            return f"{self.name}: {FOREIGN_REASONS[name]}"
        if registered is SPARK_WATERMARK:
            return (f"{self.name}: spark_watermark is the spark-sql lane's (its built-in "
                    "operators evict by watermark); transformWithState state expires by "
                    "spark_ttl or spark_timer")
        if name not in RUNS:
            return f"{self.name} runs {', '.join(RUNS)}; '{text}' is not one of them"
        if registered is SPARK_NO_TTL:
            return None
        ttl = run.ttl_of(label)
        state = run.spec.state
        if registered is SPARK_EVENT_TIMER and state.time_characteristic != "EventTime":
            return (f"{self.name}: spark_event_timer runs on the records' time (EventTime); "
                    f"{run.spec.name} is {state.time_characteristic}: use spark_ttl or "
                    "spark_timer")
        if ttl is None:
            return f"{self.name}: {name} needs a TTL; {run.spec.name} has no state.ttl_ms"
        if state.visibility != "NeverReturnExpired":
            return (f"{self.name}: Spark never returns an expired value (reads filter them); "
                    f"{run.spec.name} asks for {state.visibility}")
        if state.update_type != "OnCreateAndWrite":
            return (f"{self.name}: Spark refreshes a TTL on write only (a read never rewrites "
                    f"the expiration); {run.spec.name} asks for {state.update_type}")
        if registered is not SPARK_EVENT_TIMER and ttl / run.speedup < 1:
            return (f"{self.name}: a TTL of {ttl} ms at speedup {run.speedup:g} is under "
                    "1 wall ms, Spark's TTL resolution")
        return None

    def check(self, run: RunView) -> str | None:
        root = run.checkpoint_root
        if root is not None and "://" in root and not root.startswith("file://"):
            return (f"checkpoint root {root}: the {self.name} lanes measure their checkpoint "
                    "folder on local disk; give a local folder or a file:// URI")
        try:
            import pyspark  # noqa: F401
        except ImportError as exc:
            return f"{self.name} needs pyspark: {exc}"
        return None

    # ---------------------------------------------------------------- what a job costs
    def paces(self, run: RunView) -> bool:
        """Always: Spark's TTL and timers run on the micro-batch's processing time."""
        return True

    def job_cost(self, run: RunView, load: JobLoad, label: str) -> JobCost:
        """The query's start, then the paced span (or its records at the query's capacity,
        if longer), then its drain; on disk the input slices of ``backends.spark.slices``."""
        from backends.spark.slices import ROW_BYTES, SLICE_FILE_BYTES, input_disk_bytes

        if strategy_of_label(self.cleanup_of(run, label)) is SPARK_EVENT_TIMER:
            # not paced; every slice (one a batch) written before the query, with its time
            files = max(1.0, (load.span_ms or 0) / EVENT_SLICE_MS)
            wall = (QUERY_START_S + load.events / QUERY_RECORDS_PER_S + values_s(load)
                    + files * EVENT_BATCH_S)
            disk = files * SLICE_FILE_BYTES + load.events * (load.value_bytes + ROW_BYTES + 8)
            return JobCost(wall, paced_s=0.0, disk_bytes=disk,
                           result_rows=RESULT_ROWS_PER_JOB + int(10 * wall))
        paced_s = paced_span_s(load.span_ms, run.speedup)
        ttl = run.ttl_of(label)  # the drain after the last event (:func:`drain_seconds`)
        drain = ((ttl / run.speedup if ttl else 0.0) + 2 * TRIGGER_MS) / 1000.0
        wall = (QUERY_START_S + max(paced_s, load.events / QUERY_RECORDS_PER_S + values_s(load))
                + drain)
        disk = input_disk_bytes(load.events, paced_s * 1000.0, SLICE_MS, load.value_bytes)
        return JobCost(wall, paced_s=paced_s, disk_bytes=disk,  # rows per micro-batch too
                       result_rows=RESULT_ROWS_PER_JOB + int(10 * wall))

    # ---------------------------------------------------------------- one job
    def run_job(self, run: RunView, cfg: OperatorConfig, facts: DataFacts) -> pa.Table:
        from backends.spark.tws import QuerySettings, run_query
        from workloads.run import run_tempdirs
        from workloads.run.engines.spark_session import get_session
        from workloads.run.metrics import MetricRows

        reason = self.spec_reason(run) or self.strategy_reason(run, cfg.strategy)
        if reason is not None:
            raise ValueError(reason)
        spark = get_session()
        processor = processor_settings(run, cfg)
        if processor.event_timer_ms is not None:
            return self._run_event_job(run, cfg, facts, spark, processor)
        events, release_ms, reads = lane_events(run, cfg, facts)
        paced_s = float(release_ms[-1]) / 1000.0 if len(release_ms) else 0.0
        settings = QuerySettings(processor, changelog=self.changelog,
                                 partitions=cfg.parallelism, slice_ms=SLICE_MS,
                                 trigger_ms=TRIGGER_MS,
                                 timeout_s=DEFAULT_TIMEOUT_S + 2 * paced_s,
                                 drain_s=drain_seconds(processor))
        with run_tempdirs.temp_dir("statebench-spark-tws-", dir=run.local_dir) as tmp:
            work = Path(tmp)
            checkpoint = self.checkpoint_dir(cfg, run.checkpoint_root, work)
            result = run_query(spark, events, release_ms, settings, work, checkpoint,
                               name=query_name(cfg.repetition))
        rows = MetricRows(cfg.scenario)
        rows.extend(job_rows(run, cfg, facts, events, release_ms, reads, processor, result))
        return pa.Table.from_batches([rows.to_batch()])

    def _run_event_job(self, run: RunView, cfg: OperatorConfig, facts: DataFacts, spark: Any,
                       processor: Any) -> pa.Table:
        """A spark_event_timer job: the events with their time, unpaced, in EventTime
        (``backends.spark.tws.run_event_query``)."""
        from backends.spark.tws import CLOSING_OP, QuerySettings, run_event_query
        from workloads.run import run_tempdirs
        from workloads.run.metrics import MetricRows

        events, _, reads = lane_events(run, cfg, facts, with_ts=True)
        if events.num_rows and pc.any(pc.equal(events.column("key"), CLOSING_OP)).as_py():
            raise ValueError(f"{self.name}: key {CLOSING_OP} is the event-time query's closing "
                             "record's; the spec's keys must not use it")
        time = run.spec.time
        settings = QuerySettings(processor, changelog=self.changelog,
                                 partitions=cfg.parallelism, timeout_s=DEFAULT_TIMEOUT_S
                                 + events.num_rows / 100.0, event_slice_ms=EVENT_SLICE_MS,
                                 watermark_delay_ms=time.max_out_of_orderness_ms
                                 if time is not None else 0)
        with run_tempdirs.temp_dir("statebench-spark-tws-", dir=run.local_dir) as tmp:
            work = Path(tmp)
            checkpoint = self.checkpoint_dir(cfg, run.checkpoint_root, work)
            result = run_event_query(spark, events, settings, work, checkpoint,
                                     name=query_name(cfg.repetition))
        rows = MetricRows(cfg.scenario)
        release = np.zeros(events.num_rows, dtype=np.int64)  # all at once: nothing paced
        rows.extend(job_rows(run, cfg, facts, events, release, reads, processor, result))
        return pa.Table.from_batches([rows.to_batch()])

    def checkpoint_dir(self, cfg: OperatorConfig, root: str | None, work: Path) -> Path:
        """Every job lane's folder (``workloads.run.checkpoints.job_checkpoint_dir``), made
        fresh: Spark would resume a query from an existing one."""
        from workloads.run.checkpoints import job_checkpoint_dir

        folder = job_checkpoint_dir(cfg, root, work, self.name)
        if root is not None and folder.exists():
            shutil.rmtree(folder)
        return folder


def drain_seconds(processor: Any) -> float:
    """How long a query keeps running after its last event is processed: its TTL or timer (wall
    ms) and two triggers, so that the batches in which what it kept expires (the TTL's sweep,
    the timers firing) are in its numbers; two triggers without either."""
    expiry_ms = processor.ttl_ms or processor.timer_ms or 0
    return (expiry_ms + 2 * TRIGGER_MS) / 1000.0


def query_name(repetition: int) -> str:
    """The streaming query's name (Spark makes it a temporary view: letters, digits and ``_``
    only): ``statebench_tws_<r>``, or ``statebench_tws_warm_up`` for a comparison's warm-up
    round, whose repetition is negative."""
    return f"statebench_tws_{repetition}" if repetition >= 0 else "statebench_tws_warm_up"


class SparkTwsNoChangelogLane(SparkTwsLane):
    """The same with RocksDB changelog checkpointing off (the changelog knob)."""

    name = "spark-tws-nochangelog"
    summary = ("Spark Structured Streaming transformWithState on the RocksDB state store, "
               "changelog checkpointing off (every commit uploads the new SST files)")
    changelog = False


SPARK_TWS_LANES: tuple[SparkTwsLane, ...] = (SparkTwsLane(), SparkTwsNoChangelogLane())


# ------------------------------------------------------------------------------------------------
# Input
# ------------------------------------------------------------------------------------------------


def lane_events(run: RunView, cfg: OperatorConfig, facts: DataFacts,
                with_ts: bool = False) -> tuple[pa.Table, np.ndarray, int]:
    """The run's events as the query's input (``key, ord, op, v, mk`` in time order, and
    their time ``ts`` with ``with_ts``: an event-time query's), each event's release time
    (wall ms after the start) and how many of them are reads."""
    from workloads.payloads import PayloadColumn
    from workloads.run.source import keyed_table

    spec = run.spec
    table = keyed_table(spec, run.partitions, cfg.parallelism, cfg.max_parallelism,
                        run.batch_size)
    table = table.sort_by([("ts", "ascending"), ("seq", "ascending")])
    n = table.num_rows
    vtype = {"long": pa.int64(), "string": pa.string(), "bytes": pa.binary()}[cfg.value_type]
    values = PayloadColumn(cfg.value_type).values(
        table.select(["value", "value_size"]).combine_chunks().to_batches()[0]
        if n else pa.RecordBatch.from_pydict({"value": [], "value_size": []}))
    events = pa.table({
        "key": table.column("key").cast(pa.int64()),
        "ord": pa.array(np.arange(n, dtype=np.int64)),
        "op": table.column("op").cast(pa.int8()),
        "v": pa.array(values, vtype),
        "mk": table.column("map_key").cast(pa.int32()),
    })
    ts = table.column("ts").to_numpy()
    if with_ts:
        events = events.append_column("ts", pa.array(ts.astype(np.int64), pa.int64()))
    release = np.maximum(0, (ts - facts.start_ms) / run.speedup).astype(np.int64)
    release = np.maximum.accumulate(release) if n else release  # out-of-order ts: not earlier
    ops = table.column("op").to_numpy()
    read_codes = [int(o) for o in (Op.VALUE_GET, Op.VALUE_RMW, Op.LIST_GET, Op.MAP_GET,
                                   Op.MAP_ITERATE)]
    return events, release, int(np.isin(ops, read_codes).sum())


def processor_settings(run: RunView, cfg: OperatorConfig) -> Any:
    """The processor of scenario ``cfg``: its state types, and its TTL or timer in wall ms
    (spark_event_timer's in the records' ms: it runs on their time)."""
    from backends.spark.tws import SPARK_STATE_TYPES, ProcessorSettings

    registered = strategy_of_label(cfg.configured_cleanup)
    wall = None if cfg.ttl_ms is None else max(1, round(cfg.ttl_ms / run.speedup))
    return ProcessorSettings(
        state_types=tuple(s for s in cfg.state_types if s in SPARK_STATE_TYPES),
        value_type=cfg.value_type,
        op_codes=tuple((op.spec_name, int(op)) for op in Op),
        ttl_ms=wall if registered is SPARK_TTL else None,
        timer_ms=wall if registered is SPARK_TIMER else None,
        event_timer_ms=cfg.ttl_ms if registered is SPARK_EVENT_TIMER else None)


# ------------------------------------------------------------------------------------------------
# Rows
# ------------------------------------------------------------------------------------------------


def epoch_ms(iso: str) -> int:
    """A progress ``timestamp`` (ISO 8601, UTC, ``Z``) as epoch ms."""
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def spark_batches(progress: list[dict[str, Any]], data_times: Any) -> tuple[list[Any],
                                                                            dict[int, int]]:
    """Every reported batch as the model's ``Batch`` (its TTL clock and its end, epoch ms),
    and which batch (index) each data batch time belongs to.

    A batch with data carries its exact time (its events' output rows); it belongs to the batch
    whose trigger started last before it. A batch without data has no output: its time is its
    trigger's start plus its ``latestOffset`` phase, after which Spark takes the batch
    timestamp (``MicroBatchExecution.constructNextBatch``; measured here: the data batches'
    times were that sum plus 0-1 ms)."""
    from bisect import bisect_right

    from backends.spark.tws_model import Batch

    starts = [epoch_ms(p["timestamp"]) for p in progress]
    owner: dict[int, int] = {}
    for t in sorted({int(t) for t in data_times}):
        i = bisect_right(starts, t) - 1
        if i >= 0:
            owner[i] = t
    batches = []
    for i, p in enumerate(progress):
        durations = p["durationMs"]
        time_ms = owner.get(i, starts[i] + int(durations.get("latestOffset", 0)))
        batches.append(Batch(time_ms, starts[i] + int(durations.get("triggerExecution", 0))))
    return batches, {t: i for i, t in owner.items()}


def ttl_run_valid(batch_p50_ms: float, latency_p50_ms: float, expiry_ms: int) -> int:
    """1 when a TTL (or timer) run kept up with its TTL, else 0: its data batches' median
    duration and its events' median latency are both under the TTL. A query that falls
    further behind than its TTL expires what it wrote by the batch lag, not by the spec's
    clock (a batch longer than the TTL commits its own writes already expired), so its
    numbers are not the TTL's and must not be ranked."""
    return int(batch_p50_ms < expiry_ms and latency_p50_ms < expiry_ms)


def _operator(progress: dict[str, Any]) -> dict[str, Any]:
    ops = progress.get("stateOperators") or []
    return ops[0] if ops else {}


def job_rows(run: RunView, cfg: OperatorConfig, facts: DataFacts, events: pa.Table,
             release_ms: np.ndarray, reads: int, processor: Any, result: Any) -> list[tuple]:
    """One query's rows (module docstring)."""
    from backends.spark.listener import custom_metric, operator_metric, processing_ms
    from backends.spark.tws_model import replay

    rep = cfg.repetition
    rows: list[tuple] = []

    def add(step: int, t: int, metric: str, value: float, unit: str) -> None:
        rows.append((TOTAL_TASK, step, t, metric, float(value), unit))

    n = events.num_rows
    speedup = run.speedup
    t0 = result.t0_ms
    event_mode = processor.event_timer_ms is not None  # unpaced: no release, no latency

    def clock(wall_ms: int) -> int:  # a no-data batch may start just before the clock
        return max(facts.start_ms, int(facts.start_ms + (wall_ms - t0) * speedup))

    progress = result.progress
    durations = [int(p["durationMs"].get("triggerExecution", 0)) for p in progress]
    out = result.outputs
    ords = out.column("ord").to_numpy()
    times = out.column("t").to_numpy()
    order = np.argsort(ords)
    ords, times = ords[order], times[order]
    spark_results = out.column("r").to_numpy()[order]
    data_times = set(np.unique(times).tolist())
    # a batch whose timers fired (event mode) has its exact time too, in the handler's rows
    fired_times = {int(t) for t, _ in result.fired}
    batches, index_of = spark_batches(progress, sorted(data_times | fired_times))
    index_of = {t: i for t, i in index_of.items() if t in data_times}
    end_of = {t: batches[i].commit_ms for t, i in index_of.items()}
    carried = set(index_of.values())
    busy_ms = processing_ms(durations, [i in carried for i in range(len(durations))])

    add(rep, NO_TIME, "records", n, "count")
    add(rep, NO_TIME, "records_per_s", n / (busy_ms / 1000.0) if busy_ms else 0.0,
        "records/s")
    span_s = (result.last_release_ms - t0) / 1000.0
    if not event_mode:
        add(rep, NO_TIME, "released_records_per_s", n / span_s if span_s > 0 else 0.0,
            "records/s")
    ends = np.array([end_of.get(int(t), int(t)) for t in times], dtype=np.int64)
    lat_us = (ends - (t0 + release_ms[ords])) * 1000.0
    if len(lat_us) and not event_mode:
        for metric, q in (("latency_p50_us", 50), ("latency_p99_us", 99),
                          ("latency_p999_us", 99.9)):
            add(rep, NO_TIME, metric, float(np.percentile(lat_us, q)), "us")
        add(rep, NO_TIME, "latency_max_us", float(lat_us.max()), "us")
    if durations:
        arr = np.array(durations, dtype=np.float64)
        add(rep, NO_TIME, "batch_duration_p50_ms", float(np.percentile(arr, 50)), "ms")
        add(rep, NO_TIME, "batch_duration_p99_ms", float(np.percentile(arr, 99)), "ms")
        add(rep, NO_TIME, "batch_duration_max_ms", float(arr.max()), "ms")
    add(rep, NO_TIME, "spark_batches", len(progress), "count")
    add(rep, NO_TIME, "spark_query_s", result.wall_s, "s")
    add(rep, NO_TIME, "spark_start_s", result.start_s, "s")

    whole = [*result.warm_up, *progress]  # every batch the query ran, from its listener

    def summed(key: str, custom: bool = True) -> float:
        pick = custom_metric if custom else operator_metric
        return float(sum(pick(p, key) for p in whole))

    add(rep, NO_TIME, "ttl_removed_values", summed("numValuesRemovedDueToTTLExpiry"), "count")
    add(rep, NO_TIME, "timers_registered", summed("numRegisteredTimers"), "count")
    add(rep, NO_TIME, "state_commit_total_ms", summed("commitTimeMs", custom=False), "ms")
    add(rep, NO_TIME, "state_updates_total_ms", summed("allUpdatesTimeMs", custom=False), "ms")
    add(rep, NO_TIME, "rocksdb_puts_total", summed("rocksdbPutCount"), "count")
    add(rep, NO_TIME, "rocksdb_bytes_written_total", summed("rocksdbTotalBytesWritten"), "bytes")
    for metric, key in SOMETIMES_ZERO_SUMS:  # 0 until a flush or compaction ran: no row then
        if summed(key):
            add(rep, NO_TIME, metric, summed(key), "bytes")
    add(rep, NO_TIME, "spark_min_deltas_for_snapshot", result.min_deltas_for_snapshot,
        "versions")
    add(rep, NO_TIME, "checkpoint_written_bytes",
        sum(new for _, new in result.checkpoint_sizes.values()), "bytes")
    add(rep, NO_TIME, "checkpoint_dir_final_bytes", result.checkpoint_end_bytes, "bytes")
    expiry_ms = processor.ttl_ms or processor.timer_ms
    if event_mode:
        # expiry on the records' time: the batches' lag cannot change it; the run is the
        # spec's when the watermark dropped none of its records and every event was processed
        dropped = summed("numRowsDroppedByWatermark", custom=False)
        add(rep, NO_TIME, "late_rows_dropped", dropped, "count")
        add(rep, NO_TIME, "ttl_run_valid", int(dropped == 0 and len(ords) == n), "flag")
    elif expiry_ms:
        data = [durations[i] for i in sorted(set(index_of.values()))]
        data_p50 = float(np.percentile(data, 50)) if data else 0.0
        lat_p50_ms = float(np.percentile(lat_us, 50)) / 1000.0 if len(lat_us) else 0.0
        add(rep, NO_TIME, "ttl_wall_ms", expiry_ms, "ms")
        add(rep, NO_TIME, "data_batch_duration_p50_ms", data_p50, "ms")
        add(rep, NO_TIME, "ttl_run_valid", ttl_run_valid(data_p50, lat_p50_ms, expiry_ms), "flag")

    # the model, on the batch times Spark ran with
    op_codes = dict(processor.op_codes)
    cols = [events.column(c).to_pylist() for c in ("ord", "key", "op", "v", "mk")]
    seq = list(zip(*cols))
    batch_of = dict(zip(ords.tolist(), times.tolist()))
    if event_mode:  # every batch's eviction watermark, as Spark reported it
        from dataclasses import replace

        from backends.spark.tws import watermark_ms

        batches = [replace(b, watermark_ms=watermark_ms(p)) for b, p in zip(batches, progress)]
        spec_ttl = cfg.ttl_ms  # the records' ms
    else:
        spec_ttl = None if cfg.ttl_ms is None else max(1, round(cfg.ttl_ms / speedup))
    shift = result.time_shift_ms  # the query's time is ts moved by it (run_event_query)
    event_ts = ([t + shift for t in events.column("ts").to_pylist()] if event_mode
                else None)
    model = replay(seq, batch_of, batches, op_codes, processor.ttl_ms, processor.timer_ms,
                   spec_ttl, event_timer_ms=processor.event_timer_ms, event_ts=event_ts)
    expected = np.array([model.results[o] for o in ords.tolist()], dtype=np.int64)
    add(rep, NO_TIME, "expired_returned", model.expired_returned, "count")
    # Spark's numExpiredTimers stayed 0 for this Python processor while its timers fired (the
    # store's rows fell, reads matched the model's): the model counts them
    mismatches = int((spark_results != expected).sum())
    if event_mode:  # Spark's own record of its timers (the handler's rows), checked too
        spark_fired = Counter((int(t), int(k)) for t, k in result.fired)
        model_fired = Counter(model.fired)
        add(rep, NO_TIME, "timers_fired", len(result.fired), "count")
        mismatches += sum(((spark_fired - model_fired) + (model_fired - spark_fired)).values())
    else:
        add(rep, NO_TIME, "timers_fired", model.timers_fired, "count")
    add(rep, NO_TIME, "spark_model_mismatches", mismatches, "count")
    if (expiry_ms is not None or event_mode) and reads:
        reference = replay(seq, batch_of, batches, op_codes, None, None, None)
        ref = np.array([reference.results[o] for o in ords.tolist()], dtype=np.int64)
        is_read = ref != 0
        changed = int(((spark_results != ref) & is_read).sum())
        compared = int(is_read.sum())
        add(rep, NO_TIME, "ttl_changed_outputs", changed, "count")
        add(rep, NO_TIME, "ttl_compared_outputs", compared, "count")
        add(rep, NO_TIME, "ttl_changed_results", changed / compared if compared else 0.0,
            "share")

    # per micro-batch
    counts = {c.time_ms: c for c in model.batches}
    sst_seen = any(custom_metric(p, "rocksdbSstFileSize") for p in progress)
    for i, p in enumerate(progress):
        batch = int(p["batchId"])
        t_wall = batches[i].time_ms
        mark = batches[i].watermark_ms  # event mode: the batch's time is the records'
        t = (max(facts.start_ms, mark - result.time_shift_ms) if event_mode and mark is not None
             else clock(t_wall))
        total, new = result.checkpoint_sizes.get(batch, (0, 0))
        add(batch, t, "checkpoint_dir_bytes", total, "bytes")
        add(batch, t, "checkpoint_uploaded_bytes", new, "bytes")
        if not cfg.emit_series:
            continue
        op = _operator(p)
        custom = op.get("customMetrics") or {}
        if op:
            add(batch, t, "state_rows", op.get("numRowsTotal", 0), "rows")
            # what numRowsTotal leaves out: the TTL's $ttl_/$min_ index and the lists' $count_
            # column families, which Spark counts apart
            add(batch, t, "state_internal_rows",
                custom.get("rocksdbNumInternalColFamiliesKeys", 0), "rows")
            add(batch, t, "state_commit_ms", op.get("commitTimeMs", 0), "ms")
            add(batch, t, "state_updates_ms", op.get("allUpdatesTimeMs", 0), "ms")
            add(batch, t, "rocksdb_puts", custom.get("rocksdbPutCount", 0), "count")
            add(batch, t, "rocksdb_bytes_written", custom.get("rocksdbTotalBytesWritten", 0),
                "bytes")
            add(batch, t, "ttl_removed_values_batch",
                custom.get("numValuesRemovedDueToTTLExpiry", 0), "count")
            if sst_seen:  # with the changelog on, 0 until a snapshot flushed the memtable
                add(batch, t, "rocksdb_sst_bytes", custom.get("rocksdbSstFileSize", 0), "bytes")
        add(batch, t, "batch_duration_ms", durations[i], "ms")
        if event_mode:
            add(batch, t, "timers_fired_batch",
                sum(1 for fired_t, _ in result.fired if fired_t == t_wall), "count")
        c = counts.get(t_wall)
        if c is not None:
            add(batch, t, "live_entries", c.live, "entries")
            add(batch, t, "expired_present_entries", c.expired_present, "entries")
    return rows
