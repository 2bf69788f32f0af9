"""The ``spark-sql`` lane: an ``[operator]`` spec's query as a Spark Structured Streaming query
over the spec's Nexmark events (``backends.spark.sql_queries``), one query per scenario x
repetition, on this process's SparkSession.

Why a job lane: the query reads its own source and plans its own shuffle and state, as the
flink-sql job does; the run's engine only prepares the other lanes' data.

Input and clock: exactly the events the emulation and the flink-sql job read
(``events_in_time_order``: the spec's Nexmark events in (ts, arrival) order, the order each
emulated task reads its input in), cut into one micro-batch per :data:`BATCH_MS` of event time
from the run's start and fed one file at a time, then an end marker that moves the watermark
past everything (Spark has no end-of-input watermark; ``sql_queries``). Spark's watermark is
event time only: the lane runs no paced clock, and an EventTime spec's numbers are the same
from run to run where Spark computes them from the events alone.

Strategies: Spark's built-in operators have no state TTL; they evict by watermark, which the
lane runs as ``spark_watermark`` (its own, and the only one): the watermark delay is the spec's
``max_out_of_orderness_ms``, a regular join's time bound is the scenario's ``ttl_ms`` (the
retention the spec asks for: a row is kept while a row within ``ttl_ms`` of it may still come,
what an event-time TTL on write keeps), windows are evicted when the watermark passes their
end. statebench's strategies (none, full_snapshot, incremental, compaction_filter, timer)
configure the cleanup of a TTL'd keyed backend, which these operators do not have; Spark's TTL
strategies (``spark_ttl``, ``spark_timer``, ``spark_no_ttl``) are ``transformWithState``'s
(the ``spark-tws`` lane).

Rows (task = -1; names of ``workloads.run.metrics`` where they mean the same):

* summary (``step`` = repetition, no time): ``records`` (the operator's input: the bids, and
  a join's auctions of its category, as the emulation's records), ``records_per_s`` (those
  records over the query's busy time: Spark's ``triggerExecution`` of every batch summed,
  no-data batches included, the driver's feeding between batches not), ``job_records_per_s``
  (every event over the query's wall time, start to stop), ``spark_query_s`` (s),
  ``spark_batches`` (count: batches that ran, data and no-data), ``batch_duration_p50_ms`` and
  ``batch_duration_max_ms`` (ms: Spark's per-batch latency, ``triggerExecution``),
  ``rows_dropped_by_watermark`` (count: ``numRowsDroppedByWatermark`` summed: late rows the
  state operators ignored), ``operator_outputs`` (count: rows the sink received),
  ``checkpoint_dir_final_bytes`` (bytes: the checkpoint folder after the last batch), and
  where a reference is run (:data:`REFERENCE_KINDS`) ``ttl_changed_outputs``,
  ``ttl_compared_outputs`` and ``ttl_changed_results``: the outputs against the same query
  keeping its state (``QuerySettings.reference``), as multisets of rows, as the emulation
  compares its TTL run with its reference;
* series (``step`` = batch id, ``logical_time_ms`` = the end of the event-time span the batch
  followed; repetition 0): ``state_rows`` (``numRowsTotal`` summed over the state operators:
  rows the state store holds after the batch), ``state_rows_updated``, ``state_rows_removed``
  (rows), ``watermark_ms`` (ms of event time: the watermark the batch ran with),
  ``batch_duration_ms`` and ``state_commit_ms`` (ms), ``state_memory_bytes`` (bytes:
  ``memoryUsedBytes``) and ``rocksdb_sst_bytes`` (bytes: ``rocksdbSstFileSize``);
* per fed file (``step`` = its last batch's id, same time, every repetition):
  ``checkpoint_dir_bytes`` (bytes: the checkpoint folder's files after the batch: offsets,
  commits, the file source's log and the state store's changelogs and snapshots, the versions
  Spark retains included) and ``checkpoint_uploaded_bytes`` (bytes: its growth over the batch,
  what the batch wrote net of what Spark's maintenance deleted; 0 when it shrank).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from backends.spark.sql_queries import (
    END_AHEAD_MS,
    KINDS,
    NOT_APPLICABLE,
    QueryReport,
    QuerySettings,
    micro_batches,
    range_problem,
    run_query,
)
from backends.strategies import parse_strategy
from workloads.lanes.base import Lane, RunView, foreign_strategy_reason
from workloads.lanes.cost import JobCost, JobLoad, values_s
from workloads.lanes.flink_sql_job import events_in_time_order
from workloads.operators.input import select
from workloads.operators.results import changed_share, compare_outputs
from workloads.run import run_tempdirs
from workloads.run.checkpoints import job_checkpoint_dir
from workloads.run.config import DataFacts, OperatorConfig
from workloads.run.metrics import NO_TIME, MetricRows
from workloads.spec import WorkloadSpec

TOTAL_TASK = -1
LANE = "spark-sql"
STRATEGY = "spark_watermark"
#: Event time per micro-batch (ms). Spark commits its state every batch (its checkpoint) and
#: moves the watermark once a batch, so the span is both the lane's checkpoint interval and the
#: step of its watermark: finer than the specs' 4 s checkpoints, so windows close within half
#: a second of event time of the emulation's, coarse enough that Spark's fixed cost a batch
#: keeps a 10 s spec's query to a few dozen batches (docs/spark-sql-lane.md has the times).
BATCH_MS = 500
#: Kinds whose outputs eviction can change, so a reference run keeping the state is compared:
#: not group_agg, whose key carries no event time, so the watermark evicts nothing and a
#: reference would be the same query.
REFERENCE_KINDS = frozenset(KINDS) - {"group_agg"}
#: What a job costs (docs/guide.md, "The estimate's rates"): a query's
#: start, a second per fed file (Spark's fixed cost of its batch and the batch without data
#: after it) and its records at 4,000 a second (busy-time rates 1,675-7,211); the reference
#: adds :data:`REFERENCE_SHARE` of that. Each file is a Parquet file of
#: :data:`FILE_BYTES` plus :data:`ROW_BYTES` an event, in the job's temporary folder until the
#: job ends, the reference's as many again.
QUERY_START_S = 20.0
FILE_S = 1.0
QUERY_RECORDS_PER_S = 4_000.0
REFERENCE_SHARE = 0.4
FILE_BYTES = 2_000
ROW_BYTES = 56


@dataclass(frozen=True)
class JobReports:
    """One job's query report, its reference's (None: not run), the operator's input rows and
    the events read."""

    report: QueryReport
    reference: QueryReport | None
    records: int
    events: int


def query_settings(spec: WorkloadSpec, cfg: OperatorConfig) -> QuerySettings:
    """The query of one scenario (module docstring: delay, join bound)."""
    op = spec.operator
    assert op is not None
    return QuerySettings(
        kind=op.kind, delay_ms=cfg.out_of_orderness_ms, window_ms=op.window_ms,
        slide_ms=op.slide_ms, gap_ms=op.gap_ms, lower_ms=op.lower_ms, upper_ms=op.upper_ms,
        category=op.category, agg=op.agg, group_by=op.group_by,
        join_bound_ms=cfg.ttl_ms if op.kind == "regular_join" else None)


def spark_range_problem(spec: WorkloadSpec, join_bound_ms: int | None) -> str | None:
    """What of ``spec`` Spark cannot take (``sql_queries.range_problem``: timestamps past
    Spark's range, too many sliding windows per row), known from the spec alone: a lane that
    cannot run a spec says so before any work, and its scenarios are not applicable (the
    query failed after the other lanes' jobs, with two chained tracebacks)."""
    from workloads.generator import Timeline

    op = spec.operator
    assert op is not None and spec.time is not None
    timeline = Timeline(spec.time)
    q = QuerySettings(kind=op.kind, delay_ms=spec.time.max_out_of_orderness_ms,
                      window_ms=op.window_ms, slide_ms=op.slide_ms, gap_ms=op.gap_ms,
                      lower_ms=op.lower_ms, upper_ms=op.upper_ms, join_bound_ms=join_bound_ms)
    return range_problem(q, timeline.start_ms, timeline.start_ms + timeline.duration_ms)


def operator_records(spec: WorkloadSpec, events: pa.Table) -> int:
    """Rows of ``events`` that reach the operator (``workloads.operators.input.select``)."""
    assert spec.operator is not None
    return sum(select(spec.operator, batch)[0].num_rows for batch in events.to_batches())


def report_rows(cfg: OperatorConfig, report: QueryReport, records: int, events: int,
                reference: QueryReport | None) -> MetricRows:
    """One query's report as metric rows (module docstring)."""
    rows = MetricRows(cfg.scenario)
    rep = cfg.repetition

    def summary(metric: str, value: float, unit: str) -> None:
        rows.add(TOTAL_TASK, rep, NO_TIME, metric, value, unit)

    busy_s = report.busy_ms / 1000.0
    durations = [b.duration_ms for b in report.batches]
    summary("records", records, "count")
    summary("records_per_s", records / busy_s if busy_s > 0 else 0.0, "records/s")
    summary("job_records_per_s", events / report.wall_s if report.wall_s > 0 else 0.0,
            "records/s")
    summary("spark_query_s", report.wall_s, "s")
    summary("spark_batches", len(report.batches), "count")
    if durations:
        summary("batch_duration_p50_ms", statistics.median(durations), "ms")
        summary("batch_duration_max_ms", max(durations), "ms")
    summary("rows_dropped_by_watermark",
            sum(b.rows_dropped_by_watermark for b in report.batches), "count")
    summary("operator_outputs", report.output_count, "count")
    measured = [b for b in report.batches if b.checkpoint_bytes is not None]
    if measured:
        summary("checkpoint_dir_final_bytes", measured[-1].checkpoint_bytes or 0, "bytes")
    if reference is not None:
        changed, compared = compare_outputs(report.outputs.elements(),
                                            reference.outputs.elements())
        summary("ttl_changed_outputs", changed, "count")
        summary("ttl_compared_outputs", compared, "count")
        summary("ttl_changed_results", changed_share(changed, compared), "share")
    if cfg.emit_series:
        for b in report.batches:
            series = [("state_rows", b.state_rows, "rows"),
                      ("state_rows_updated", b.rows_updated, "rows"),
                      ("state_rows_removed", b.rows_removed, "rows"),
                      ("batch_duration_ms", b.duration_ms, "ms"),
                      ("state_commit_ms", b.commit_ms, "ms"),
                      ("state_memory_bytes", b.memory_bytes, "bytes")]
            if b.watermark_ms is not None and b.watermark_ms < END_AHEAD_MS // 2:  # not the
                # end marker's, past the run by END_AHEAD_MS
                series.append(("watermark_ms", b.watermark_ms, "ms"))
            if "rocksdbSstFileSize" in b.custom:
                series.append(("rocksdb_sst_bytes", b.custom["rocksdbSstFileSize"], "bytes"))
            for metric, value, unit in series:
                rows.add(TOTAL_TASK, b.batch_id, b.time_ms, metric, value, unit)
    before = 0
    for b in measured:
        size = b.checkpoint_bytes or 0
        rows.add(TOTAL_TASK, b.batch_id, b.time_ms, "checkpoint_dir_bytes", size, "bytes")
        rows.add(TOTAL_TASK, b.batch_id, b.time_ms, "checkpoint_uploaded_bytes",
                 max(0, size - before), "bytes")
        before = size
    return rows


class SparkSqlLane(Lane):
    """Spark Structured Streaming's built-in stateful operators, one query per job."""

    name = LANE
    engine = "spark"
    summary = ("the [operator]'s query as a Spark Structured Streaming query (Spark's own "
               "join, windows, aggregation and deduplication; state evicted by watermark)")
    runs_tasks = False
    #: the session's JVM is kept from job to job and its JIT warms up: a comparison runs an
    #: unmeasured round first, as for Flink's lanes
    keeps_state = True
    own_strategies = (STRATEGY,)
    metric_classes = {
        # computed by Spark from the events and the fixed micro-batches alone
        "records": "exact", "operator_outputs": "exact", "spark_batches": "exact",
        "rows_dropped_by_watermark": "exact", "ttl_changed_outputs": "exact",
        "ttl_compared_outputs": "exact", "ttl_changed_results": "exact",
        "state_rows": "exact", "state_rows_updated": "exact", "state_rows_removed": "exact",
        "watermark_ms": "exact",
        # RocksDB's files and memory move with its background flushes and Spark's
        # maintenance thread (snapshot uploads, cleanup of old versions)
        "state_memory_bytes": "timing-dependent", "rocksdb_sst_bytes": "timing-dependent",
        "checkpoint_dir_bytes": "timing-dependent",
        "checkpoint_uploaded_bytes": "timing-dependent",
        "checkpoint_dir_final_bytes": "timing-dependent",
        # wall and busy time
        "records_per_s": "timed", "job_records_per_s": "timed", "spark_query_s": "timed",
        "batch_duration_p50_ms": "timed", "batch_duration_max_ms": "timed",
        "batch_duration_ms": "timed", "state_commit_ms": "timed",
    }

    def __init__(self, batch_ms: int = BATCH_MS) -> None:
        if batch_ms < 1:
            raise ValueError(f"{LANE}: micro-batch span must be >= 1 ms, got {batch_ms}")
        self.batch_ms = batch_ms

    def spec_reason(self, run: RunView) -> str | None:
        op = run.spec.operator
        if op is None or run.spec.time is None:
            return (f"backend '{LANE}' runs an [operator] spec's query as a Spark Structured "
                    "Streaming query; this spec is raw key-value traffic (no [operator] "
                    "table), which has no query - run it on spark-tws")
        if op.kind in NOT_APPLICABLE:
            return f"backend '{LANE}': {NOT_APPLICABLE[op.kind]}"
        if op.kind not in KINDS:
            return (f"backend '{LANE}' has no query for [operator] kind '{op.kind}' (it runs "
                    f"{', '.join(KINDS)})")
        problem = spark_range_problem(run.spec, None)
        return None if problem is None else f"backend '{LANE}': {problem}"

    def strategy_reason(self, run: RunView, label: str) -> str | None:
        parsed = parse_strategy(run.cleanup_of(label))
        if parsed.name == STRATEGY:  # a regular join's time bound is the scenario's TTL
            op = run.spec.operator
            bound = run.ttl_of(label) if op is not None and op.kind == "regular_join" else None
            problem = None if bound is None else spark_range_problem(run.spec, bound)
            return None if problem is None else f"{LANE}: {problem}"
        foreign = foreign_strategy_reason(self.engine, parsed.name)
        if parsed.name.startswith("spark_") and foreign is None:
            return (f"'{parsed.name}' is transformWithState's (spark-tws); Spark's built-in "
                    f"operators on {LANE} evict by watermark only: run '{STRATEGY}'")
        return foreign or (
            f"'{parsed.label}' configures TTL cleanup of a keyed backend; Spark's built-in "
            f"stateful operators have no state TTL and evict by watermark only: run "
            f"'{STRATEGY}'")

    def check(self, run: RunView) -> str | None:
        if self.spec_reason(run) is not None:
            return None
        try:
            import pyspark  # noqa: F401
        except ImportError:
            return f"backend '{LANE}' needs pyspark (pip install the project's spark extra)"
        root = run.checkpoint_root
        if root is not None and "://" in root and not root.startswith("file://"):
            return (f"backend '{LANE}' measures its checkpoint folder on local disk; give a "
                    f"local --checkpoint-root or a file:// URI, not {root}")
        return None

    def paces(self, run: RunView) -> bool:
        """Never: Spark's watermark is event time, the lane runs no paced clock."""
        return False

    def job_cost(self, run: RunView, load: JobLoad, label: str) -> JobCost:
        """The query's start, its fed files and records; its reference's share (module
        constants). No pacing: the events go in as fast as the query takes them."""
        files = 1 + (min(load.events, -(-load.span_ms // self.batch_ms)) if load.span_ms
                     else load.events)
        one = QUERY_START_S + files * FILE_S + load.events / QUERY_RECORDS_PER_S + values_s(load)
        op = run.spec.operator
        queries = 1 + (REFERENCE_SHARE if op is not None and op.kind in REFERENCE_KINDS else 0)
        disk = files * FILE_BYTES + load.events * ROW_BYTES
        return JobCost(one * queries, disk_bytes=disk * (2 if queries > 1 else 1))

    def run_job(self, run: RunView, cfg: OperatorConfig, facts: DataFacts) -> pa.Table:
        job = self.run_reports(run, cfg, facts)
        rows = report_rows(cfg, job.report, job.records, job.events, job.reference)
        return pa.Table.from_batches([rows.to_batch()])

    def run_reports(self, run: RunView, cfg: OperatorConfig, facts: DataFacts) -> JobReports:
        """Run one scenario x repetition's query (and its reference, :data:`REFERENCE_KINDS`):
        the reports :meth:`run_job` makes rows of. A spec or strategy the lane cannot run is
        refused first, in one line naming the lane."""
        problem = self.spec_reason(run) or self.strategy_reason(run, cfg.strategy)
        if problem is not None:
            raise ValueError(problem if problem.startswith("backend") else f"{LANE}: {problem}")
        from workloads.run.engines.spark_session import get_session

        spark = get_session()
        spec = run.spec
        events = events_in_time_order(spec)
        records = operator_records(spec, events)
        settings = query_settings(spec, cfg)
        batches = micro_batches(events, facts.start_ms, self.batch_ms)
        reference = None
        with run_tempdirs.temp_dir("statebench-spark-sql-", dir=run.local_dir) as tmp:
            work = Path(tmp)
            checkpoint = job_checkpoint_dir(cfg, run.checkpoint_root, work, LANE)
            if checkpoint.exists() and any(checkpoint.iterdir()):  # Spark would resume it
                raise ValueError(f"{LANE}: checkpoint folder {checkpoint} is not empty; a "
                                 "query would resume from it instead of starting over")
            report = run_query(spark, settings, batches, work, checkpoint,
                               parallelism=run.parallelism)
            if settings.kind in REFERENCE_KINDS and settings.reference() != settings:
                reference = run_query(spark, settings.reference(), batches, work,
                                      work / "reference-checkpoint", measure=False,
                                      parallelism=run.parallelism)
        return JobReports(report, reference, records, events.num_rows)


SPARK_SQL_LANES: tuple[Lane, ...] = (SparkSqlLane(),)
