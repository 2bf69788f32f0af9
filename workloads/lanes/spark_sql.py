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
``max_out_of_orderness_ms`` (a dedup's: the scenario's ``ttl_ms``, the retention it asks for),
a regular join is bounded as a Spark user bounds q20 - a bid joins its auction between the
auction's time and its ``expires`` - and windows are evicted when the watermark passes their
end. group_agg (q4) is never evicted (its key carries no event time: the rows say so,
``state_evicted_by_watermark`` 0); q18 runs keep-first (the lane's measured query) and
keep-last (``max_by`` in update mode: ``keep_last_outputs``, ``keep_last_keys``) beside it.
statebench's strategies (none, full_snapshot, incremental, compaction_filter, timer)
configure the cleanup of a TTL'd keyed backend, which these operators do not have; Spark's TTL
strategies (``spark_ttl``, ``spark_timer``, ``spark_no_ttl``) are ``transformWithState``'s
(the ``spark-tws`` lane).

Rows (task = -1; names of ``workloads.run.metrics`` where they mean the same):

* summary (``step`` = repetition, no time): ``records`` (the operator's input: the bids, and
  a join's auctions of its category, as the emulation's records), ``records_per_s`` (those
  records over the query's processing time, ``backends.spark.listener.processing_ms``, as
  spark-tws's: the driver's feeding between batches not in it), ``job_records_per_s``
  (every event over the query's wall time, start to stop), ``spark_query_s`` (s),
  ``spark_batches`` (count: batches that ran, data and no-data), ``batch_duration_p50_ms`` and
  ``batch_duration_max_ms`` (ms: Spark's per-batch latency, ``triggerExecution``),
  ``rows_dropped_by_watermark`` (count: ``numRowsDroppedByWatermark`` summed: late rows the
  state operators ignored), ``operator_outputs`` (count: rows the sink received),
  ``checkpoint_dir_final_bytes`` (bytes: the checkpoint's ``state/**`` after the last
  batch), and
  where a reference is run (:data:`REFERENCE_KINDS`) ``ttl_changed_outputs``,
  ``ttl_compared_outputs`` and ``ttl_changed_results``: the outputs against the same query
  keeping its state (``QuerySettings.reference``), as multisets of rows, as the emulation
  compares its TTL run with its reference; ``emulation_changed_outputs``,
  ``emulation_compared_outputs`` and ``emulation_changed_share`` (:func:`emulation_agreement`:
  the query keeping its state against the emulated operator without TTL over the same
  events); ``state_evicted_by_watermark`` (0 for group_agg); for dedup ``keep_last_outputs``,
  ``keep_last_keys`` and ``keep_last_changed_keys``/``_compared_keys``/``_changed_share``;
  Spark's own ``rocksdb_puts_total``, ``rocksdb_bytes_written_total`` (and, only when not
  0, ``rocksdb_flush_bytes_written_total``, ``rocksdb_compaction_bytes_written_total``) and
  ``checkpoint_written_bytes`` (the uploads summed);
* series (``step`` = batch id, ``logical_time_ms`` = the end of the event-time span the batch
  followed; repetition 0): ``state_rows`` (``numRowsTotal`` summed over the state operators:
  rows the state store holds after the batch), ``state_rows_updated``, ``state_rows_removed``
  (rows), ``watermark_ms`` (ms of event time: the watermark the batch ran with),
  ``batch_duration_ms`` and ``state_commit_ms`` (ms), ``rocksdb_puts``, ``rocksdb_bytes_written``
  and ``rocksdb_sst_bytes`` (bytes: ``rocksdbSstFileSize``, only in a query where some batch
  had SST files; ``memoryUsedBytes`` is left out: constant, not the state);
* per fed file (``step`` = its last batch's id, same time, every repetition):
  ``checkpoint_dir_bytes`` (bytes: the state store's files of the checkpoint after the batch,
  ``state/**``: changelogs, snapshots and schemas of the versions Spark retains; not the
  offsets, commits and source log) and ``checkpoint_uploaded_bytes`` (bytes: those files new
  or changed since the previous measurement, ``backends.spark.files.StateUploads``, the one
  definition of both Spark lanes).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from backends.spark.listener import processing_ms
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
#: Kinds whose state the watermark never evicts (the key has no event time): labelled in the
#: rows (``state_evicted_by_watermark`` 0), since Flink's beside them is TTL'd.
UNBOUNDED_KINDS = frozenset({"group_agg"})
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
#: Events a second the emulated operator replays at in the job (:func:`emulated_outputs`:
#: 200,000 events of q18 and q20 in 1.9-2.3 s here).
EMULATION_RECORDS_PER_S = 80_000.0


@dataclass(frozen=True)
class JobReports:
    """One job's query report, its reference's (None: not run), the operator's input rows and
    the events read."""

    report: QueryReport
    reference: QueryReport | None
    records: int
    events: int
    #: dedup only: the keep-last query's report (outputs only; its state is never evicted)
    keep_last: QueryReport | None = None
    #: the emulated operator's outputs over the same events, no TTL (:func:`emulated_outputs`)
    emulated: list[tuple] | None = None


def query_settings(spec: WorkloadSpec, cfg: OperatorConfig,
                   keep_last: bool = False) -> QuerySettings:
    """The query of one scenario (module docstring: delay, join bound; a dedup's delay is the
    scenario's TTL, the retention it asks for, and never under the out-of-orderness)."""
    op = spec.operator
    assert op is not None
    delay = cfg.out_of_orderness_ms
    if op.kind == "dedup" and cfg.ttl_ms:
        delay = max(delay, cfg.ttl_ms)
    return QuerySettings(
        kind=op.kind, delay_ms=delay, keep_last=keep_last, window_ms=op.window_ms,
        slide_ms=op.slide_ms, gap_ms=op.gap_ms, lower_ms=op.lower_ms, upper_ms=op.upper_ms,
        category=op.category, agg=op.agg, group_by=op.group_by,
        join_bound_ms=longest_auction_ms(spec) if op.kind == "regular_join" else None)


def longest_auction_ms(spec: WorkloadSpec) -> int:
    """The longest auction the spec's Nexmark generator makes (``expires - ts``): the
    constant bound of q20's ``bid BETWEEN auction.time AND auction.expires``."""
    from workloads.operators.input import nexmark_config

    return nexmark_config(spec).max_duration_ms()


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


def last_per_key(rows: Iterable[tuple[int, ...]]) -> dict[tuple[int, int], tuple[int, ...]]:
    """q18's outputs as each (auction, bidder) key's latest row (the last one by ts, the
    later one of equal ts): what a keep-last deduplication leaves, whether its output is
    Flink's changelog (``+I``/``+U``; ``-U`` rows are skipped) or Spark's update-mode rows
    ``(auction, bidder, price, ts)``."""
    last: dict[tuple[int, int], tuple[int, ...]] = {}
    for row in rows:
        if isinstance(row[0], str):
            if row[0] == "-U":
                continue
            row = row[1:]
        key = (row[0], row[1])
        if key not in last or row[3] >= last[key][3]:
            last[key] = tuple(row)
    return last


def keep_last_agreement(spark_rows: Iterable[tuple[int, ...]],
                        reference: Iterable[tuple[int, ...]]) -> tuple[int, int]:
    """(keys whose latest row differs, keys in either) of a keep-last query's outputs against
    a reference's (:func:`last_per_key`)."""
    a, b = last_per_key(spark_rows), last_per_key(reference)
    keys = set(a) | set(b)
    return sum(1 for k in keys if a.get(k) != b.get(k)), len(keys)


#: The emulated operator's input columns (``workloads.operators.rows``: a Nexmark row).
EMULATION_COLUMNS = ("event_type", "ts", "person_id", "auction_id", "price", "category",
                     "expires_ms")


def emulated_outputs(spec: WorkloadSpec, events: pa.Table) -> list[tuple]:
    """The emulated operator's outputs (``workloads.operators``, no TTL) over ``events`` in one
    task - one watermark, as Spark's query has - with their changelog kind first."""
    from backends.keygroups import KeyGroupRange
    from workloads.operators.results import reference_outputs

    assert spec.operator is not None and spec.time is not None
    table = events.combine_chunks()
    batch = table.to_batches()[0] if table.num_rows else pa.RecordBatch.from_pylist(
        [], schema=table.schema)
    rows, keys = select(spec.operator, batch)
    cols = [rows.column(c).to_pylist() for c in EMULATION_COLUMNS]
    return reference_outputs(spec.operator, spec.time.max_out_of_orderness_ms,
                             [(keys.tolist(), cols[1], list(zip(*cols)))], 128,
                             KeyGroupRange.of_operator(0, 1, 128), spec.time.start_ms)


def _final_per_key(rows: Iterable[tuple[int, ...]]) -> Counter:
    """group_agg's outputs as each key's final value: Spark's update-mode rows (the largest:
    max, sum and count of positive prices only grow) or the emulation's last ``+I``/``+U``."""
    final: dict[int, int] = {}
    for row in rows:
        if isinstance(row[0], str):
            if row[0] in ("+I", "+U"):
                final[row[1]] = row[2]
        else:
            final[row[0]] = max(row[1], final.get(row[0], row[1]))
    return Counter(final.items())


def emulation_agreement(kind: str, spark: Counter, emulated: list[tuple]) -> tuple[int, int]:
    """(changed, compared) of Spark's outputs keeping their state (the reference query, or
    the query itself where the watermark evicts nothing) against the emulation's without
    TTL, as multisets (``compare_outputs``), in the form the two engines share: a dedup's
    first rows (the emulation's ``+I``), group_agg's final value per key, every other kind's
    rows as they are. The verdict on the share (agree or differ) is the report's
    (``workloads.report.cross_engine.agreement_verdict``)."""
    if kind == "group_agg":
        ours, theirs = _final_per_key(spark.elements()), _final_per_key(emulated)
    elif kind == "dedup":
        ours, theirs = spark, Counter(o[1:] for o in emulated if o[0] == "+I")
    else:
        ours, theirs = spark, Counter(o[1:] for o in emulated)
    return compare_outputs(ours.elements(), theirs.elements())


def operator_records(spec: WorkloadSpec, events: pa.Table) -> int:
    """Rows of ``events`` that reach the operator (``workloads.operators.input.select``)."""
    assert spec.operator is not None
    return sum(select(spec.operator, batch)[0].num_rows for batch in events.to_batches())


def report_rows(cfg: OperatorConfig, report: QueryReport, records: int, events: int,
                reference: QueryReport | None,
                keep_last: QueryReport | None = None, kind: str = "",
                emulated: list[tuple] | None = None) -> MetricRows:
    """One query's report as metric rows (module docstring)."""
    rows = MetricRows(cfg.scenario)
    rep = cfg.repetition

    def summary(metric: str, value: float, unit: str) -> None:
        rows.add(TOTAL_TASK, rep, NO_TIME, metric, value, unit)

    busy_s = processing_ms([b.duration_ms for b in report.batches],
                           [b.input_rows > 0 for b in report.batches]) / 1000.0
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
    summary("rocksdb_puts_total", sum(b.custom.get("rocksdbPutCount", 0)
                                      for b in report.batches), "count")
    summary("rocksdb_bytes_written_total", sum(b.custom.get("rocksdbTotalBytesWritten", 0)
                                               for b in report.batches), "bytes")
    for metric, key in (("rocksdb_flush_bytes_written_total", "rocksdbTotalBytesWrittenByFlush"),
                        ("rocksdb_compaction_bytes_written_total",
                         "rocksdbTotalBytesWrittenByCompaction")):
        total = sum(b.custom.get(key, 0) for b in report.batches)
        if total:  # 0 until RocksDB flushed (a snapshot) or compacted: no row then
            summary(metric, total, "bytes")
    if keep_last is not None:  # q18 as keep-last: its rows and the keys it holds at the end
        summary("keep_last_outputs", keep_last.output_count, "count")
        summary("keep_last_keys", len(last_per_key(keep_last.outputs)), "keys")
    if emulated is not None:  # agreement with the emulation, state kept on both sides
        kept = reference if reference is not None else report
        changed, compared = emulation_agreement(kind, kept.outputs, emulated)
        summary("emulation_changed_outputs", changed, "count")
        summary("emulation_compared_outputs", compared, "count")
        summary("emulation_changed_share", changed_share(changed, compared), "share")
        if keep_last is not None:
            differ, keys = keep_last_agreement(keep_last.outputs.elements(), emulated)
            summary("keep_last_changed_keys", differ, "keys")
            summary("keep_last_compared_keys", keys, "keys")
            summary("keep_last_changed_share", changed_share(differ, keys), "share")
    # whether the watermark evicts this query's state at all: not group_agg's (q4: its key
    # carries no event time, so its state grows with its keys, beside Flink's TTL'd state)
    summary("state_evicted_by_watermark", 0 if kind in UNBOUNDED_KINDS else 1, "flag")
    sst_seen = any(b.custom.get("rocksdbSstFileSize") for b in report.batches)
    if cfg.emit_series:
        for b in report.batches:
            series = [("state_rows", b.state_rows, "rows"),
                      ("state_rows_updated", b.rows_updated, "rows"),
                      ("state_rows_removed", b.rows_removed, "rows"),
                      ("batch_duration_ms", b.duration_ms, "ms"),
                      ("state_commit_ms", b.commit_ms, "ms"),
                      ("rocksdb_puts", b.custom.get("rocksdbPutCount", 0), "count"),
                      ("rocksdb_bytes_written", b.custom.get("rocksdbTotalBytesWritten", 0),
                       "bytes")]
            if b.watermark_ms is not None and b.watermark_ms < END_AHEAD_MS // 2:  # not the
                # end marker's, past the run by END_AHEAD_MS
                series.append(("watermark_ms", b.watermark_ms, "ms"))
            if sst_seen:  # changelog on: 0 until a snapshot flushed the memtable
                series.append(("rocksdb_sst_bytes", b.custom.get("rocksdbSstFileSize", 0),
                               "bytes"))
            for metric, value, unit in series:
                rows.add(TOTAL_TASK, b.batch_id, b.time_ms, metric, value, unit)
    for b in measured:
        rows.add(TOTAL_TASK, b.batch_id, b.time_ms, "checkpoint_dir_bytes",
                 b.checkpoint_bytes or 0, "bytes")
        rows.add(TOTAL_TASK, b.batch_id, b.time_ms, "checkpoint_uploaded_bytes",
                 b.checkpoint_uploaded or 0, "bytes")
    summary("checkpoint_written_bytes", sum(b.checkpoint_uploaded or 0 for b in measured),
            "bytes")
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
        "watermark_ms": "exact", "state_evicted_by_watermark": "exact",
        "keep_last_outputs": "exact", "keep_last_keys": "exact",
        "emulation_changed_outputs": "exact", "emulation_compared_outputs": "exact",
        "emulation_changed_share": "exact", "keep_last_changed_keys": "exact",
        "keep_last_compared_keys": "exact", "keep_last_changed_share": "exact",
        # RocksDB's files and memory move with its background flushes and Spark's
        # maintenance thread (snapshot uploads, cleanup of old versions)
        "rocksdb_sst_bytes": "timing-dependent", "rocksdb_puts": "timing-dependent",
        "rocksdb_bytes_written": "timing-dependent",
        "rocksdb_puts_total": "timing-dependent", "rocksdb_bytes_written_total": "timing-dependent",
        "rocksdb_flush_bytes_written_total": "timing-dependent",
        "rocksdb_compaction_bytes_written_total": "timing-dependent",
        "checkpoint_written_bytes": "timing-dependent",
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
        parsed = parse_strategy(self.cleanup_of(run, label))
        if parsed.name == STRATEGY:  # a regular join's bound: the spec's longest auction
            op = run.spec.operator
            bound = (longest_auction_ms(run.spec) if op is not None
                     and op.kind == "regular_join" else None)
            problem = None if bound is None else spark_range_problem(run.spec, bound)
            return None if problem is None else f"{LANE}: {problem}"
        foreign = foreign_strategy_reason(self.engine, parsed.name)
        if parsed.kind.engine is not None and foreign is None:
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
        kind = op.kind if op is not None else ""
        # the reference, and a dedup's keep-last query: outputs only, each a share of one
        extra = (kind in REFERENCE_KINDS) + (kind == "dedup")
        queries = 1 + REFERENCE_SHARE * extra
        disk = files * FILE_BYTES + load.events * ROW_BYTES
        emulation = load.events / EMULATION_RECORDS_PER_S
        return JobCost(one * queries + emulation, disk_bytes=disk * (1 + extra))

    def run_job(self, run: RunView, cfg: OperatorConfig, facts: DataFacts) -> pa.Table:
        job = self.run_reports(run, cfg, facts)
        op = run.spec.operator
        rows = report_rows(cfg, job.report, job.records, job.events, job.reference,
                           job.keep_last, kind=op.kind if op is not None else "",
                           emulated=job.emulated)
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
            keep_last = None
            if settings.kind == "dedup":
                keep_last = run_query(spark, query_settings(spec, cfg, keep_last=True),
                                      batches, work, work / "keep-last-checkpoint",
                                      measure=False, parallelism=run.parallelism)
        return JobReports(report, reference, records, events.num_rows, keep_last,
                          emulated_outputs(spec, events))


SPARK_SQL_LANES: tuple[Lane, ...] = (SparkSqlLane(),)
