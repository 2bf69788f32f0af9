"""The ``[operator]`` kinds as Spark Structured Streaming queries (the ``spark-sql`` lane), and
running one over Nexmark events in micro-batches with its numbers per batch.

Why a query per kind and not an emulation: Spark's built-in stateful operators (streaming
aggregation, stream-stream join, deduplication, time and session windows) keep and evict their
own state, by watermark; the lane measures what they keep, what their eviction changes in the
outputs and what it costs, on the events the emulation and the flink-sql job read.

The queries (:func:`build_query`; docs/spark-sql-lane.md has the mapping in full):

* ``regular_join`` (q20): bids ``JOIN`` auctions (``category >= 0``: that category only) on
  the auction id, a stream-stream inner join of two filters of the one source; with
  ``join_bound_ms`` (the spec's longest auction) also what a Spark user writes to bound it,
  a bid within its auction's life: ``bid.event_time BETWEEN auction.event_time AND
  auction.expires``, with ``auction.event_time + join_bound_ms`` as the constant upper bound
  Spark needs to evict join state by watermark (``expires`` is a column, not a bound it can
  plan with);
* ``interval_join``: the same join with ``bid.event_time BETWEEN auction.event_time +
  lower_ms AND auction.event_time + upper_ms`` (Flink's ``RowTimeIntervalJoin`` condition);
* ``tumbling_window``, ``sliding_window`` (q7, q5): ``agg(price)`` per ``group_by`` per
  ``window(event_time, window_ms[, slide_ms])``, append mode: a window is emitted once the
  watermark passes its end, and its state goes then;
* ``session_window`` (q11): ``agg(price)`` per ``group_by`` per ``session_window(event_time,
  gap_ms)``, append mode;
* ``group_agg`` (q4): ``agg(price)`` per ``group_by``, update mode (one row per key a batch
  changed; the key carries no event time, so the watermark evicts nothing);
* ``dedup`` (q18), keep-first: ``dropDuplicatesWithinWatermark(bidder, auction)``: the FIRST
  bid per key, its state kept until the watermark passes its event time + the delay (the
  lane sets the delay from the spec's TTL: Spark keeps a key "at least as long as the
  watermark delay", the retention the spec asks for); keep-last (``keep_last``): what a
  Spark user writes for Flink's ``rn = 1`` over ``ORDER BY ts DESC``:
  ``groupBy(bidder, auction).agg(max_by(struct(price, ts), ts))`` in update mode - one row
  per key a batch changed, carrying the key's latest bid (no ``-U`` retractions: an update-mode
  sink overwrites by key), its state never evicted (the key carries no event time).
* ``topn`` is not applicable (:data:`NOT_APPLICABLE`).

The reference (``keep_state``): the same query keeping its state for the whole run - the join
without its time bound, ``dropDuplicates`` without the watermark, windows and the interval join
with a delay no event reaches (:data:`REFERENCE_DELAY_MS`) - against which
``ttl_changed_outputs`` counts what the eviction changed.

Input and clock: the events are Parquet files of a file source, one file per micro-batch, fed
one at a time in event-time order (:func:`run_query`), so the watermark (Spark's: the previous
batch's maximum event time - the delay) advances batch by batch with the events' time. Spark
has no end-of-input watermark (Flink's bounded sources end with +inf, which fires every
window): the last file is one *end marker* event (event type -1, :data:`END_AHEAD_MS` past the
last event) that advances the watermark past every window and join bound and is filtered out
before any operator. The filters read the event type through the event-time column
(:func:`_of_type`) so that the optimizer cannot push them below the watermark node, where the
marker would never reach it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from backends.spark.files import StateUploads

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

#: The event columns the queries read, as the file source's schema (Spark reads a streaming
#: file source only with a given schema).
EVENT_COLUMNS = (("event_type", pa.int32(), "int"), ("ts", pa.int64(), "bigint"),
                 ("person_id", pa.int64(), "bigint"), ("auction_id", pa.int64(), "bigint"),
                 ("price", pa.int64(), "bigint"), ("category", pa.int32(), "int"),
                 ("expires_ms", pa.int64(), "bigint"))
EVENT_DDL = ", ".join(f"{name} {ddl}" for name, _, ddl in EVENT_COLUMNS)
BID, AUCTION = 2, 1
#: The end marker's event type: no Nexmark event has it, no query's filter lets it through.
END_MARKER_TYPE = -1
#: How far past the last event the end marker lies: beyond any window, session gap, join
#: bound or watermark delay of a spec, and below :data:`REFERENCE_DELAY_MS` plus the run.
END_AHEAD_MS = 10**12
#: Added to every ts to make the query's event time (its outputs give the events' ts back).
#: Spark's watermark starts at 0 (the epoch) and a stateful operator drops a row whose event
#: time is at or below it as late, so the events at ts 0 (a spec starting at 0 clamps its
#: first out-of-order events there) were dropped in the first batch; Flink's watermark starts
#: at Long.MIN_VALUE. About 11.6 days.
TIME_OFFSET_MS = 10**9
#: The reference's watermark delay: no event, only the end marker, moves the watermark past a
#: window (``END_AHEAD_MS`` > this > any run's span).
REFERENCE_DELAY_MS = 10**11
#: Spark's RocksDB state store (what Spark recommends for large state, and what the flink-sql
#: lane's RocksDB backend is beside), with changelog checkpointing: a batch commits its changes
#: as a changelog file, not a snapshot of the store.
SESSION_SETTINGS = {
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    "spark.sql.streaming.noDataMicroBatches.enabled": "true",
}
#: The kinds Spark's built-in operators cannot express, with why (one line each).
NOT_APPLICABLE = {
    "topn": ("Spark Structured Streaming has no streaming Top-N: rank/row_number window "
             "functions are not supported on streaming DataFrames and sorting needs complete "
             "mode over an aggregate; a per-auction top-N needs transformWithState"),
}
KINDS = ("regular_join", "interval_join", "tumbling_window", "sliding_window",
         "session_window", "group_agg", "dedup")
#: Seconds to wait for one micro-batch's file to be read before giving up.
BATCH_TIMEOUT_S = 600.0
#: Spark's timestamp range (TimestampType: years 1 to 9999, UTC; epoch ms). Past it Spark
#: fails the query (a 2**50 ms window: ``[DATETIME_OVERFLOW]``, microseconds beyond int64) or
#: reports a watermark Python cannot read (``+11476-08-15T05:19:59.908Z``: year 11476).
SPARK_MIN_MS = -62_135_596_800_000
SPARK_MAX_MS = 253_402_300_799_999
#: Windows one row of a sliding window may fall into (``window_ms / slide_ms``) on Spark: its
#: window expands each row into one row per window, one projection each (the analyzer's
#: ``Expand``), and the query's plan grows with them. Measured with 200 events (local[*],
#: default driver heap): 300 windows ran in 22 s, 1,000 in 98 s, 3,000 killed the JVM and
#: 10,000 (the spec's own bound) failed with "Java heap space".
MAX_SLIDING_WINDOWS = 1_000


class SparkQueryError(RuntimeError):
    """A streaming query that failed: its root cause in one line (the Spark error is the
    ``__cause__``)."""


@dataclass(frozen=True)
class QuerySettings:
    """What one query runs: the spec's ``[operator]`` fields it reads, the watermark delay and
    the join's time bound, and whether it keeps its state (the reference)."""

    kind: str
    delay_ms: int
    window_ms: int = 10_000
    slide_ms: int = 2_000
    gap_ms: int = 1_000
    lower_ms: int = 0
    upper_ms: int = 10_000
    category: int = -1
    agg: str = "max"
    group_by: str = "auction"
    #: regular_join only: the longest auction (ms): a bid joins its auction between the
    #: auction's time and its ``expires`` (None: no bound, the join keeps every row)
    join_bound_ms: int | None = None
    keep_state: bool = False
    #: dedup only: keep the last bid per key (``max_by``, update mode) instead of the first
    keep_last: bool = False

    @property
    def offset_ms(self) -> int:
        """How far the query's event time lies past the events' ts (:data:`TIME_OFFSET_MS`,
        rounded up to a multiple of the window, and of the slide for a sliding window, so
        windows stay aligned). Not of a slide a tumbling window does not have: the default
        ``slide_ms`` (2,000) made a 2**50 ms window's offset 125 times the window, whose
        timestamps overflowed Spark's (``[DATETIME_OVERFLOW]``)."""
        step = {"tumbling_window": self.window_ms,
                "sliding_window": math.lcm(self.window_ms, self.slide_ms)}.get(self.kind, 1)
        return -(-TIME_OFFSET_MS // step) * step

    @property
    def output_mode(self) -> str:
        return "update" if self.kind == "group_agg" or self.keeps_last else "append"

    @property
    def keeps_last(self) -> bool:
        return self.kind == "dedup" and self.keep_last

    def reference(self) -> QuerySettings:
        """The same query keeping its state for the whole run (module docstring); a
        keep-last dedup keeps it anyway (its key carries no event time): itself."""
        if self.keeps_last:
            return self
        evicts_by_delay = self.kind.endswith("window") or self.kind == "interval_join"
        return replace(self, keep_state=True, join_bound_ms=None,
                       delay_ms=REFERENCE_DELAY_MS if evicts_by_delay else self.delay_ms)


def range_problem(q: QuerySettings, start_ms: int, end_ms: int) -> str | None:
    """Why Spark cannot run ``q`` over events of ts ``start_ms``..``end_ms``, in one line
    (None: it can): a sliding window with more windows per row than :data:`MAX_SLIDING_WINDOWS`,
    or a timestamp the query makes outside Spark's range (:data:`SPARK_MIN_MS`..
    :data:`SPARK_MAX_MS`): the events' ts plus the query's offset, its end marker
    :data:`END_AHEAD_MS` past them, and how far a window, a session gap or a join bound reaches
    beyond or before an event. Known before any work, so a lane says it up front."""
    if q.kind == "sliding_window" and -(-q.window_ms // q.slide_ms) > MAX_SLIDING_WINDOWS:
        return (f"a sliding window of {q.window_ms} ms by {q.slide_ms} ms puts each row in "
                f"{-(-q.window_ms // q.slide_ms)} windows; Spark expands every row into one "
                f"row per window, one projection each, and past {MAX_SLIDING_WINDOWS:,} windows "
                "the query does not fit the JVM's heap")
    after = {"tumbling_window": ("window_ms", q.window_ms),
             "sliding_window": ("window_ms", q.window_ms),
             "session_window": ("gap_ms", q.gap_ms),
             "interval_join": ("upper_ms", max(q.upper_ms, 0)),
             "regular_join": ("the longest auction", q.join_bound_ms or 0)}
    name, reach = after.get(q.kind, ("", 0))
    top = end_ms + q.offset_ms + END_AHEAD_MS + reach
    if top > SPARK_MAX_MS:
        return (f"the query's timestamps would reach {top} ms (about year {_year(top)}), past "
                f"Spark's timestamp range (years 1 to 9999, up to {SPARK_MAX_MS} ms): the "
                f"events' ts reach {end_ms} ms, and the query adds {q.offset_ms} ms (its "
                f"offset, aligned to its windows), {END_AHEAD_MS} ms to its end marker"
                + (f" and {name} {reach} ms" if reach else ""))
    before = {"interval_join": ("lower_ms", min(q.lower_ms, 0))}
    name, reach = before.get(q.kind, ("", 0))
    bottom = start_ms + q.offset_ms + reach
    if bottom < SPARK_MIN_MS:
        return (f"the query's timestamps would reach {bottom} ms (about year {_year(bottom)}), "
                f"before Spark's timestamp range (years 1 to 9999, from {SPARK_MIN_MS} ms): the "
                f"events' ts start at {start_ms} ms, the query adds {q.offset_ms} ms (its "
                f"offset) and {name} {-reach} ms before it")
    return None


def _year(epoch_ms: int) -> int:
    """The (proleptic Gregorian, about) year of an epoch ms, also outside datetime's range."""
    return 1970 + math.floor(epoch_ms / 31_556_952_000)


# ------------------------------------------------------------------------------------------------
# Queries
# ------------------------------------------------------------------------------------------------


def read_events(spark: SparkSession, folder: str, delay_ms: int, offset_ms: int) -> DataFrame:
    """The events of ``folder``'s Parquet files, one file per micro-batch, with ``event_time``
    (ts + ``offset_ms`` as a timestamp: :data:`TIME_OFFSET_MS`) and the watermark ``delay_ms``
    behind it."""
    from pyspark.sql import functions as F

    return (spark.readStream.schema(EVENT_DDL).option("maxFilesPerTrigger", 1).parquet(folder)
            .withColumn("event_time", F.timestamp_millis(F.col("ts") + F.lit(offset_ms)))
            .withWatermark("event_time", f"{int(delay_ms)} milliseconds"))


def _of_type(event_type: int) -> Column:
    """``event_type = t``, read through ``event_time`` (module docstring: a filter that does
    not reference the event-time column is pushed below the watermark node)."""
    from pyspark.sql import functions as F

    return F.when(F.col("event_time").isNotNull(), F.col("event_type")) == F.lit(event_type)


def _aggregate(agg: str) -> Column:
    from pyspark.sql import functions as F

    if agg == "max":
        return F.max("price")
    if agg == "sum":
        return F.sum("price")
    if agg == "count":
        return F.count("price")
    raise ValueError(f"unknown aggregate {agg!r}; expected max, sum or count")


_KEY_COLUMN = {"auction": "auction_id", "bidder": "person_id", "category": "category"}


def build_query(spark: SparkSession, folder: str, q: QuerySettings) -> DataFrame:
    """The streaming DataFrame of ``q`` over ``folder``'s events (module docstring); its rows
    are the outputs, every column a long."""
    from pyspark.sql import functions as F

    if q.kind in NOT_APPLICABLE:
        raise ValueError(f"spark-sql: {NOT_APPLICABLE[q.kind]}")
    events = read_events(spark, folder, q.delay_ms, q.offset_ms)

    def event_ms(column: str) -> Column:  # a window bound as the events' ts
        return F.unix_millis(F.col(column)) - F.lit(q.offset_ms)

    if q.kind in ("regular_join", "interval_join"):
        bids = events.filter(_of_type(BID)).select(
            F.col("auction_id").alias("b_auction"), F.col("person_id").alias("bidder"),
            "price", F.col("ts").alias("b_ts"), F.col("event_time").alias("b_time"))
        # the same source on both sides (one source: both sides read each file in the same
        # batch; two reads of the folder listed it apart and split a file over two batches)
        auctions = events.filter(_of_type(AUCTION))
        if q.category >= 0:
            auctions = auctions.filter(F.col("category") == q.category)
        auctions = auctions.select(
            F.col("auction_id").alias("a_id"), F.col("person_id").alias("seller"),
            F.col("category").cast("bigint").alias("a_category"), F.col("ts").alias("a_ts"),
            F.col("event_time").alias("a_time"),
            F.timestamp_millis(F.col("expires_ms") + F.lit(q.offset_ms)).alias("a_expires"))
        cond = F.col("b_auction") == F.col("a_id")
        if q.kind == "interval_join":
            cond = cond & F.col("b_time").between(
                F.col("a_time") + F.expr(f"INTERVAL {q.lower_ms} MILLISECONDS"),
                F.col("a_time") + F.expr(f"INTERVAL {q.upper_ms} MILLISECONDS"))
            columns = ["b_auction", "bidder", "price", "b_ts", "seller", "a_ts"]
        else:
            if q.join_bound_ms is not None and not q.keep_state:
                longest = F.expr(f"INTERVAL {q.join_bound_ms} MILLISECONDS")
                cond = (cond & F.col("b_time").between(F.col("a_time"), F.col("a_expires"))
                        & (F.col("b_time") <= F.col("a_time") + longest))
            columns = ["b_auction", "bidder", "price", "b_ts", "seller", "a_category", "a_ts"]
        return bids.join(auctions, cond, "inner").select(*columns)
    if q.kind == "dedup":
        bids = events.filter(_of_type(BID))
        keys = ["person_id", "auction_id"]
        if q.keep_last:
            last = F.max_by(F.struct("price", "ts"), F.col("ts")).alias("last")
            return bids.groupBy(*keys).agg(last).select(
                "auction_id", "person_id", F.col("last.price"), F.col("last.ts"))
        kept = bids.dropDuplicates(keys) if q.keep_state else \
            bids.dropDuplicatesWithinWatermark(keys)
        return kept.select("auction_id", "person_id", "price", "ts")
    key = _KEY_COLUMN[q.group_by]
    rows = events.filter(_of_type(AUCTION if q.group_by == "category" else BID))
    value = _aggregate(q.agg).cast("bigint").alias("value")
    if q.kind == "group_agg":
        return rows.groupBy(key).agg(value).select(F.col(key).cast("bigint"), "value")
    if q.kind == "session_window":
        session = F.session_window("event_time", f"{q.gap_ms} milliseconds")
        return rows.groupBy(session, key).agg(value).select(
            F.col(key).cast("bigint"), event_ms("session_window.start"),
            event_ms("session_window.end"), "value")
    if q.kind == "tumbling_window":
        window = F.window("event_time", f"{q.window_ms} milliseconds")
    elif q.kind == "sliding_window":
        window = F.window("event_time", f"{q.window_ms} milliseconds",
                          f"{q.slide_ms} milliseconds")
    else:
        raise ValueError(f"spark-sql: no query for [operator] kind '{q.kind}'")
    return rows.groupBy(window, key).agg(value).select(
        F.col(key).cast("bigint"), event_ms("window.end"), "value")


# ------------------------------------------------------------------------------------------------
# Micro-batches
# ------------------------------------------------------------------------------------------------


def _events_table(events: pa.Table) -> pa.Table:
    return pa.table({name: events.column(name).cast(arrow) for name, arrow, _ in EVENT_COLUMNS})


def micro_batches(events: pa.Table, start_ms: int, batch_ms: int) -> list[tuple[pa.Table, int]]:
    """``events`` (in ts order) cut into one table per ``batch_ms`` of event time from
    ``start_ms`` (empty spans skipped), each with its span's end; then the end marker
    (module docstring), whose time is the last span's end."""
    if batch_ms < 1:
        raise ValueError(f"micro-batch span must be >= 1 ms, got {batch_ms}")
    table = _events_table(events)
    ts = table.column("ts").to_numpy()
    out: list[tuple[pa.Table, int]] = []
    if len(ts):
        if np.any(np.diff(ts) < 0):
            raise ValueError("events must be in ts order (events_in_time_order)")
        spans = (ts - start_ms) // batch_ms
        cuts = np.flatnonzero(np.diff(spans)) + 1
        bounds = [0, *cuts.tolist(), len(ts)]
        for lo, hi in pairwise(bounds):
            out.append((table.slice(lo, hi - lo), int(start_ms + (spans[lo] + 1) * batch_ms)))
    last_ts = int(ts[-1]) if len(ts) else start_ms
    marker = pa.table({name: pa.array([0], arrow) for name, arrow, _ in EVENT_COLUMNS})
    marker = marker.set_column(0, "event_type", pa.array([END_MARKER_TYPE], pa.int32()))
    marker = marker.set_column(1, "ts", pa.array([last_ts + END_AHEAD_MS], pa.int64()))
    out.append((marker, out[-1][1] if out else start_ms))
    return out


def write_batch_file(folder: Path, index: int, table: pa.Table, staging: Path) -> None:
    """Batch ``index`` as ``folder``'s next Parquet file: written aside, its modification time
    set to ``index`` seconds past a fixed base (the file source takes files in modification
    time order), then renamed in, so the source never lists a half-written file."""
    tmp = staging / f"part-{index:06d}.parquet"
    pq.write_table(table, tmp)
    stamp = 1_000_000_000 + index
    os.utime(tmp, (stamp, stamp))
    os.replace(tmp, folder / tmp.name)


# ------------------------------------------------------------------------------------------------
# Running a query
# ------------------------------------------------------------------------------------------------


@dataclass
class BatchStats:
    """One micro-batch's numbers (``StreamingQueryProgress``), summed over the query's state
    operators and sources; ``checkpoint_bytes`` is the checkpoint folder's size after the
    batches of one fed file ran (None on the others): its ``state/**`` files, and
    ``checkpoint_uploaded`` their bytes new or changed since the previous measurement
    (``backends.spark.files.StateUploads``, the one definition both Spark lanes use)."""

    batch_id: int
    time_ms: int
    input_rows: int
    duration_ms: int
    state_rows: int
    rows_updated: int
    rows_removed: int
    rows_dropped_by_watermark: int
    memory_bytes: int
    commit_ms: int
    custom: dict[str, int]
    watermark_ms: int | None
    checkpoint_bytes: int | None = None
    checkpoint_uploaded: int | None = None


@dataclass
class QueryReport:
    """What one run of a query gave: its batches, its outputs as a multiset, and its wall time
    (start to stop, feeding and measuring included)."""

    batches: list[BatchStats] = field(default_factory=list)
    outputs: Counter = field(default_factory=Counter)
    wall_s: float = 0.0

    @property
    def busy_ms(self) -> int:
        """Spark's own time for every batch (``durationMs.triggerExecution`` summed): what the
        query spent, without the driver's feeding and folder measuring between batches."""
        return sum(b.duration_ms for b in self.batches)

    @property
    def output_count(self) -> int:
        return sum(self.outputs.values())

    def digest(self) -> str:
        """A sha256 of the outputs as a sorted multiset: equal digests, equal outputs."""
        text = json.dumps(sorted((list(k), v) for k, v in self.outputs.items()))
        return hashlib.sha256(text.encode()).hexdigest()


@contextmanager
def session_settings(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """``settings`` on the shared session while a query is started, the old values back after
    (the session is the process's one; other lanes' jobs must not inherit them)."""
    conf = spark.conf
    old = {key: conf.get(key, None) for key in settings}
    try:
        for key, value in settings.items():
            conf.set(key, value)
        yield
    finally:
        for key, value in old.items():
            if value is None:
                conf.unset(key)
            else:
                conf.set(key, value)


def _timestamp_ms(text: str | None) -> int | None:
    if not text:
        return None
    from datetime import datetime

    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def _batch_stats(progress: dict[str, Any], time_ms: int, offset_ms: int) -> BatchStats:
    """One batch's progress as :class:`BatchStats`; the watermark as the events' ts (None
    while it is Spark's initial 0: no watermark yet)."""
    ops = progress.get("stateOperators") or []
    watermark = _timestamp_ms((progress.get("eventTime") or {}).get("watermark"))
    custom: Counter = Counter()
    for op in ops:
        for name, value in (op.get("customMetrics") or {}).items():
            if isinstance(value, (int, float)) and "." not in name:
                custom[name] += int(value)

    def total(name: str) -> int:
        return sum(int(op.get(name) or 0) for op in ops)

    return BatchStats(
        batch_id=int(progress["batchId"]), time_ms=time_ms,
        input_rows=int(progress.get("numInputRows") or 0),
        duration_ms=int((progress.get("durationMs") or {}).get("triggerExecution") or 0),
        state_rows=total("numRowsTotal"), rows_updated=total("numRowsUpdated"),
        rows_removed=total("numRowsRemoved"),
        rows_dropped_by_watermark=total("numRowsDroppedByWatermark"),
        memory_bytes=total("memoryUsedBytes"), commit_ms=total("commitTimeMs"),
        custom=dict(custom),
        watermark_ms=None if not watermark else watermark - offset_ms)


def _ran(progress: dict[str, Any]) -> bool:
    """Whether a progress entry is a batch that ran (an idle trigger reports one too, with the
    next batch's id and no ``addBatch`` time)."""
    return "addBatch" in (progress.get("durationMs") or {})


def _one_line(exc: BaseException) -> str:
    text = str(getattr(exc, "desc", None) or exc).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    caused = [line for line in lines if line.startswith("Caused by:")]
    return (caused[-1] if caused else lines[0] if lines else type(exc).__name__)[:500]


def run_query(spark: SparkSession, q: QuerySettings, batches: Sequence[tuple[pa.Table, int]],
              work: Path, checkpoint: Path, measure: bool = True,
              parallelism: int = 2) -> QueryReport:
    """Run ``q`` over ``batches`` (:func:`micro_batches`) into a memory sink; its report.

    ``measure``: feed one file at a time and wait for it (and the batch without data Spark
    runs after it when the watermark moved) before the next, reading each batch's progress and
    the checkpoint folder's size after it; otherwise (the reference, whose outputs only are
    used) write every file first and let the source take one a batch. ``work`` holds the
    source folder and its staging folder; the query is stopped and its sink's table dropped in
    ``finally``. ``parallelism`` is the query's shuffle partitions, its state store instances
    per operator (fixed in the checkpoint once the query started)."""
    source = work / f"source-{uuid.uuid4().hex[:8]}"
    staging = work / f"staging-{source.name}"
    source.mkdir(parents=True)
    staging.mkdir()
    name = f"statebench_spark_sql_{uuid.uuid4().hex}"
    report = QueryReport()
    query = None
    started = time.perf_counter()
    try:
        if not measure:
            for i, (table, _) in enumerate(batches):
                write_batch_file(source, i, table, staging)
        settings = {**SESSION_SETTINGS, "spark.sql.shuffle.partitions": str(parallelism)}
        with session_settings(spark, settings):
            df = build_query(spark, str(source), q)
            query = (df.writeStream.format("memory").queryName(name).outputMode(q.output_mode)
                     .option("checkpointLocation", str(checkpoint))
                     .trigger(processingTime="0 seconds").start())
        seen = -1
        uploads = StateUploads(checkpoint)
        for i, (table, time_ms) in enumerate(batches):
            if not measure:
                break
            write_batch_file(source, i, table, staging)
            new = _await_rows(query, table.num_rows, seen)
            stats = [_batch_stats(p, time_ms, q.offset_ms) for p in new]
            if stats:
                seen = stats[-1].batch_id
                stats[-1].checkpoint_bytes, stats[-1].checkpoint_uploaded = uploads.measure()
            report.batches.extend(stats)
        if not measure:
            query.processAllAvailable()
            _raise_if_failed(query)
        rows = spark.table(name).collect()
        report.outputs = Counter(tuple(int(v) for v in row) for row in rows)
    except SparkQueryError:
        raise
    except Exception as exc:
        if type(exc).__module__.startswith(("pyspark", "py4j")):
            raise SparkQueryError(f"spark-sql query ({q.kind}) failed: {_one_line(exc)}") from exc
        raise
    finally:
        if query is not None:
            with suppress(Exception):
                query.stop()
            unload_state_stores(spark)
        with suppress(Exception):
            spark.catalog.dropTempView(name)
        report.wall_s = time.perf_counter() - started
    return report


def unload_state_stores(spark: SparkSession) -> None:
    """Unload the state store providers of this JVM's executor once no query runs (Spark's
    ``StateStore.stop()``: stops the maintenance task and closes every loaded provider).

    Why: a stopped query's providers stay loaded, and Spark's maintenance thread goes on
    uploading their RocksDB snapshots into the checkpoint folder - after the job removed it,
    which made the folder again and left it behind. Local mode only: on a cluster the providers
    live in the executors' JVMs (where a local checkpoint folder would not work anyway)."""
    with suppress(Exception):
        if spark.streams.active:
            return  # another query's providers: its maintenance must go on
        jvm = spark.sparkContext._jvm
        jvm.org.apache.spark.sql.execution.streaming.state.StateStore.stop()


def _raise_if_failed(query: Any) -> None:
    error = query.exception()
    if error is not None:
        raise SparkQueryError(f"spark-sql query failed: {_one_line(error)}")


def _await_rows(query: Any, rows: int, seen: int) -> list[dict[str, Any]]:
    """Wait until the query has read the ``rows`` rows of the file just fed (from its first
    source) and run every batch that follows from them; the progress of the batches after
    ``seen`` that ran.

    ``processAllAvailable`` alone can return before a file written just before the call was
    listed (a trigger that listed the folder just before it finds nothing and reports no new
    data), so the rows read are checked and the wait repeated."""
    deadline = time.monotonic() + BATCH_TIMEOUT_S
    while True:
        query.processAllAvailable()
        _raise_if_failed(query)
        ran: dict[int, dict[str, Any]] = {}
        for p in (json.loads(p.json) for p in query.recentProgress):
            if _ran(p) and int(p["batchId"]) > seen:
                ran[int(p["batchId"])] = p
        read = sum(_first_source_rows(p) for p in ran.values())
        if read >= rows:
            return [ran[b] for b in sorted(ran)]
        if time.monotonic() > deadline:
            raise SparkQueryError(f"spark-sql query read {read} of a micro-batch's {rows} "
                                  f"rows within {BATCH_TIMEOUT_S:.0f} s")
        time.sleep(0.05)


def _first_source_rows(progress: dict[str, Any]) -> int:
    """Rows a batch read from its first source (a join reads every file twice, once per
    side: ``numInputRows`` counts both)."""
    sources = progress.get("sources") or []
    return int(sources[0].get("numInputRows") or 0) if sources else 0
