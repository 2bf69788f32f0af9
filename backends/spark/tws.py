"""A key-value spec's operations as a real Structured Streaming query: ``transformWithState``
on Spark's RocksDB state store, fed micro-batches on a paced clock.

What runs: the events (one row each: ``key``, ``ord`` = position in time order, ``op`` code,
``v`` = the value to write, ``mk`` = map key) are cut into slices of ``slice_ms`` wall ms by
their release time, each slice one Parquet file written a bounded stretch ahead into a staging
folder; a feeder thread renames each file into the query's input folder when the wall clock
reaches its slice (a rename is atomic, so Spark's file source never lists half a file) and
deletes the files the query has read (``backends.spark.slices``). The query
(``groupBy(key).transformWithState(SpecProcessor, ..., "ProcessingTime")``, a processing-time
trigger every ``trigger_ms``, a memory sink) picks up whatever was released since its last
batch. :class:`SpecProcessor` keeps one state variable per spec state type (value, list, map)
and applies each event's operation to it, in ``ord`` order within a key (Spark's grouping sort
does not keep the input's order), and emits one output row per event: its ``ord``, the batch's
timestamp and a hash of what a read returned (:func:`result_hash`; 0 for writes).

WHY one output row per event: the batch timestamp of every event is the clock Spark's TTL ran
on, so the driver can replay Spark's expiry rules exactly (``backends.spark.tws_model``) to
count what the store held against what the spec's TTL says is live, and the oracle can run
statebench's backends on the same clock.

Spark's TTL, from Spark's source (sql/core/.../transformwithstate/ttl/TTLState.scala,
ValueStateImplWithTTL.scala, ListStateImplWithTTL.scala, MapStateImplWithTTL.scala,
statefulprocessor/StatefulProcessorHandleImpl.scala, TransformWithStateExecBase.scala and the
Python operator's TransformWithStateInPySparkExec.scala):

* the clock is the micro-batch's timestamp (``batchTimestampMs``), fixed for the whole batch;
  a write (``update``, ``appendValue``, ``updateValue``) sets the unit's expiration to
  ``batchTimestampMs + ttlDurationMs``; a read never changes it (update on write only:
  Flink's OnCreateAndWrite; there is no OnReadAndWrite);
* a unit is expired when ``batchTimestampMs >= expiration`` (``StateTTL.isExpired``), the
  same rule as Flink's ``lastWrite + ttl <= now``;
* reads never return an expired unit (``get`` returns null, list ``get`` and map iterators
  filter them; Flink's NeverReturnExpired; there is no ReturnExpiredIfNotCleanedUp) and never
  delete it (no read-time cleanup);
* expired units are removed only by ``doTtlCleanup``, which runs once per partition at the end
  of every batch, after the data and the timers, before the store commits (its time is inside
  ``commitTimeMs`` in the Python operator): it range-scans a ``$ttl_<state>`` secondary index
  ordered by expiration (list state indexes each key's minimum expiration and rewrites the
  list) and deletes every unit whose expiration is <= the batch timestamp; the count is
  ``numValuesRemovedDueToTTLExpiry``;
* in processing-time mode the operator asks for a batch even when no data arrived
  (``shouldRunAnotherBatch`` is always true), so cleanup and timers run at every trigger;
* ``MapStateImplWithTTL.removeKey`` deletes the entry's row but not its ``$ttl_`` index
  entry; when that orphan expires the sweep deletes whatever row the map key has then - an
  entry put again since, live by its own TTL, included - and counts a removal either way
  (``backends.spark.tws_model`` replays it; tests/spark/test_spark_tws_oracle.py runs it).

So between two batches expired units stay in the store (and its checkpoints) but are never
returned: the expired-present state of a Spark TTL lasts at most one trigger interval plus a
batch's duration.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from backends.spark.files import StateUploads
from backends.spark.listener import ProgressRecorder
from backends.spark.session_setup import end_query, restore_confs, set_confs, spark_ddl
from backends.spark.slices import Feeder, SliceWriter, plan_slices

try:  # the processor's base class: a plain object where pyspark is missing (the lane's
    # check() then says so), so that importing this module never fails
    from pyspark.sql.streaming import StatefulProcessor
except ImportError:  # pragma: no cover - pyspark is a core dependency
    StatefulProcessor = object  # type: ignore[assignment,misc]

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
CHANGELOG_CONF = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
#: How many changelog versions RocksDB's store writes before it takes a snapshot (Spark's
#: default 10); set explicitly and reported, since a short query never reaches it.
SNAPSHOT_CONF = "spark.sql.streaming.stateStore.minDeltasForSnapshot"
DEFAULT_MIN_DELTAS_FOR_SNAPSHOT = 10
#: The three state types Spark's transformWithState has (value, list and map state).
SPARK_STATE_TYPES = ("value", "list", "map")
#: Spark column types of the spec's value types.
VALUE_DDL = {"long": "bigint", "string": "string", "bytes": "binary"}
#: The query's output: one row per event (see the module docstring).
OUTPUT_DDL = "ord bigint, t bigint, r bigint"
#: Written values' hash of "nothing" (a read of a missing value), and of a write event.
WRITE_RESULT = 0
#: ``ord`` of the row an event-time timer's handler emits (``r`` is the key): no event's.
FIRED_ORD = -1
#: Op code of the closing record of an event-time query: it moves the watermark past the last
#: write's timer and touches no state.
CLOSING_OP = -1


def result_hash(result: Any) -> int:
    """A stable 63-bit hash of what a read returned (Python's ``hash`` of a str differs from
    process to process; Spark's workers are other processes)."""
    digest = hashlib.blake2b(repr(result).encode(), digest_size=8).digest()
    return (int.from_bytes(digest, "big") >> 1) or 1


def plain(value: Any) -> Any:
    """A state value as the spec wrote it (Spark returns binary values as ``bytearray``)."""
    return bytes(value) if isinstance(value, bytearray) else value


@dataclass(frozen=True)
class ProcessorSettings:
    """What :class:`SpecProcessor` needs (pickled to Spark's Python workers)."""

    state_types: tuple[str, ...]
    value_type: str
    #: op name -> wire code (``workloads.ops.Op``; passed in, as backends never import workloads)
    op_codes: tuple[tuple[str, int], ...]
    #: Spark's ``ttlDurationMs`` on every state variable (spark_ttl); None: no TTL
    ttl_ms: int | None = None
    #: spark_timer: a processing-time timer this many ms after a key's last write clears it
    timer_ms: int | None = None
    #: spark_event_timer: an event-time timer this many ms after the time (``ts``) of a key's
    #: last write clears it once the watermark reaches it; the query runs in EventTime
    event_timer_ms: int | None = None


class SpecProcessor(StatefulProcessor):  # type: ignore[misc]
    """Applies a spec's operations to one value, one list and one map state per key.

    ``spark_timer``: what Spark users wrote before state TTL: each batch that writes a key
    deletes the key's timer and registers one at ``batch time + timer_ms``; when it fires
    (after the batch's data, ``handleExpiredTimer``) the key's states are cleared. A key read
    but not written keeps its timer; a key written again before it fires keeps all its units,
    however old (the timer is per key, TTL per unit).

    ``spark_event_timer``: the same on the records' time (``TimeMode.EventTime``): a batch
    that writes a key deletes its timer and registers one at its last write's ``ts`` plus
    ``event_timer_ms``; the timer fires in the first batch whose eviction watermark reaches
    it, and its handler clears the key and emits one row (``ord`` :data:`FIRED_ORD`, the
    batch's timestamp, the key) so that what fired, and when, is Spark's own record. Rows of
    op :data:`CLOSING_OP` (the closing record, ``backends.spark.tws.run_event_query``) only
    move the watermark: no state, no output."""

    def __init__(self, settings: ProcessorSettings) -> None:
        self.settings = settings
        self.handle: Any = None
        self.value: Any = None
        self.list: Any = None
        self.map: Any = None
        self._apply: dict[int, Callable[[Any], tuple[int, bool]]] = {}

    def init(self, handle: Any) -> None:
        s = self.settings
        ddl = f"v {VALUE_DDL[s.value_type]}"
        self.handle = handle
        if "value" in s.state_types:
            self.value = handle.getValueState("value", ddl, s.ttl_ms)
        if "list" in s.state_types:
            self.list = handle.getListState("list", ddl, s.ttl_ms)
        if "map" in s.state_types:
            self.map = handle.getMapState("map", "mk int", ddl, s.ttl_ms)
        self._apply = self._dispatch(dict(s.op_codes))

    def _dispatch(self, c: dict[str, int]) -> dict[int, Callable[[Any], tuple[int, bool]]]:
        """op code -> fn(row) -> (result hash, wrote)."""
        value, lst, mp = self.value, self.list, self.map

        def v_get(r: Any) -> tuple[int, bool]:
            got = value.get()
            return result_hash(None if got is None else plain(got[0])), False

        def v_update(r: Any) -> tuple[int, bool]:
            value.update((r.v,))
            return WRITE_RESULT, True

        def v_clear(r: Any) -> tuple[int, bool]:
            value.clear()
            return WRITE_RESULT, False

        def v_rmw(r: Any) -> tuple[int, bool]:
            got = value.get()
            value.update((r.v,))
            return result_hash(None if got is None else plain(got[0])), True

        def l_add(r: Any) -> tuple[int, bool]:
            lst.appendValue((r.v,))
            return WRITE_RESULT, True

        def l_get(r: Any) -> tuple[int, bool]:
            return result_hash([plain(t[0]) for t in lst.get()]), False

        def m_put(r: Any) -> tuple[int, bool]:
            mp.updateValue((r.mk,), (r.v,))
            return WRITE_RESULT, True

        def m_get(r: Any) -> tuple[int, bool]:
            got = mp.getValue((r.mk,))
            return result_hash(None if got is None else plain(got[0])), False

        def m_iterate(r: Any) -> tuple[int, bool]:
            return result_hash(sorted((k[0], plain(v[0])) for k, v in mp.iterator())), False

        def m_remove(r: Any) -> tuple[int, bool]:
            mp.removeKey((r.mk,))
            return WRITE_RESULT, False

        table = {"value_get": v_get, "value_update": v_update, "value_clear": v_clear,
                 "value_rmw": v_rmw, "list_add": l_add, "list_get": l_get, "map_put": m_put,
                 "map_get": m_get, "map_iterate": m_iterate, "map_remove": m_remove}
        return {code: table[name] for name, code in c.items() if name in table}

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        from pyspark.sql import Row

        now = timerValues.getCurrentProcessingTimeInMs()
        apply = self._apply
        out = []
        wrote = False
        last_write_ts = None
        for r in sorted(rows, key=lambda row: row.ord):
            if r.op == CLOSING_OP:
                continue
            fn = apply.get(r.op)
            if fn is None:
                raise ValueError(f"op code {r.op} has no transformWithState operation")
            h, w = fn(r)
            if w:
                wrote = True
                last_write_ts = getattr(r, "ts", None)
            out.append(Row(ord=r.ord, t=now, r=h))
        s = self.settings
        if wrote and (s.timer_ms is not None or s.event_timer_ms is not None):
            for old in list(self.handle.listTimers()):
                self.handle.deleteTimer(old)
            if s.event_timer_ms is not None:
                self.handle.registerTimer(int(last_write_ts) + s.event_timer_ms)
            else:
                self.handle.registerTimer(now + s.timer_ms)
        return iter(out)

    def handleExpiredTimer(self, key: Any, timerValues: Any,
                           expiredTimerInfo: Any) -> Iterator[Any]:
        from pyspark.sql import Row

        for state in (self.value, self.list, self.map):
            if state is not None:
                state.clear()
        if self.settings.event_timer_ms is None:
            return iter([])
        now = timerValues.getCurrentProcessingTimeInMs()
        return iter([Row(ord=FIRED_ORD, t=now, r=int(key[0]))])

    def close(self) -> None:
        pass


# ------------------------------------------------------------------------------------------------
# The query
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuerySettings:
    """How one query runs."""

    processor: ProcessorSettings
    #: RocksDB changelog checkpointing (Spark's recommended setting) on or off
    changelog: bool = True
    #: shuffle partitions of the stateful operator (the run's parallelism)
    partitions: int = 2
    #: wall ms of input per released file
    slice_ms: int = 200
    #: the processing-time trigger's interval (wall ms)
    trigger_ms: int = 200
    #: give up after this many seconds beyond the last release
    timeout_s: float = 300.0
    #: seconds the query keeps running once it has processed every event, so that what Spark
    #: does after the last output (the TTL's end-of-batch sweep of what expired since, timers
    #: firing) is in its progress: stopping at the last output row cut a spark_ttl query's last
    #: sweep (thousands of values removed) out of its numbers
    drain_s: float = 0.0
    #: ``spark.sql.streaming.stateStore.minDeltasForSnapshot``: changelog versions between two
    #: snapshots of the store (Spark's default)
    min_deltas_for_snapshot: int = DEFAULT_MIN_DELTAS_FOR_SNAPSHOT
    #: spark_event_timer (:func:`run_event_query`): ms of the records' time per micro-batch,
    #: and the watermark's delay (``withWatermark``: the spec's out-of-orderness)
    event_slice_ms: int = 200
    watermark_delay_ms: int = 0


@dataclass
class QueryResult:
    """What one query reported."""

    #: one row per event: ord, t (batch timestamp, epoch ms), r (result hash)
    outputs: pa.Table
    #: every micro-batch's progress after the warm-up (``StreamingQueryProgress`` as a
    #: dict, from the query's listener), in batch order
    progress: list[dict[str, Any]]
    #: batch id -> (bytes of the checkpoint's ``state/**`` after it, bytes of its files new or
    #: changed since the previous batch: ``backends.spark.files.StateUploads``), warm-up
    #: batches left out
    checkpoint_sizes: dict[int, tuple[int, int]]
    #: epoch ms of the first release (slice 0's release time)
    t0_ms: int
    #: epoch ms of the last release
    last_release_ms: int
    #: seconds from the first release to the query's stop
    wall_s: float
    #: bytes of the checkpoint's ``state/**`` at the end
    checkpoint_end_bytes: int = 0
    events: int = 0
    #: seconds from the query's start to the end of its warm-up batch (the clock's start)
    start_s: float = 0.0
    #: the warm-up batches' progress (over an empty file, before the clock started)
    warm_up: list[dict[str, Any]] = field(default_factory=list)
    #: the snapshot interval the query ran with (``QuerySettings.min_deltas_for_snapshot``)
    min_deltas_for_snapshot: int = DEFAULT_MIN_DELTAS_FOR_SNAPSHOT
    #: spark_event_timer: (batch timestamp, key) of every timer that fired, as its handler
    #: reported it
    fired: list[tuple[int, int]] = field(default_factory=list)
    #: spark_event_timer: ms added to every event's ``ts`` in the query (its watermarks are in
    #: that time; :func:`run_event_query`)
    time_shift_ms: int = 0


def state_store_confs(settings: QuerySettings) -> dict[str, str]:
    """The session configurations a spark-tws query runs with: RocksDB's state store, its
    changelog checkpointing and snapshot interval, the run's partitions."""
    return {PROVIDER_CONF: ROCKSDB_PROVIDER, CHANGELOG_CONF: str(settings.changelog).lower(),
            SNAPSHOT_CONF: str(settings.min_deltas_for_snapshot),
            "spark.sql.shuffle.partitions": str(settings.partitions)}


class _Progress:
    """Every batch of the query as its listener recorded it, and the state store's files
    measured after each (``backends.spark.files.StateUploads``)."""

    def __init__(self, query: Any, recorder: ProgressRecorder, checkpoint_dir: Path) -> None:
        self.query, self.recorder = query, recorder
        self.run_id = str(query.runId)
        self.by_batch: dict[int, dict[str, Any]] = {}
        self.sizes: dict[int, tuple[int, int]] = {}
        self.uploads = StateUploads(checkpoint_dir)
        #: epoch s of the latest reported batch's trigger start: the query has read every
        #: file released before it (``backends.spark.slices.Feeder.prune``)
        self.latest_start_s = 0.0

    def poll(self) -> bool:
        """Take the batches reported since the last poll; True when there was one. A failed
        query raises its root cause."""
        error = self.query.exception()
        if error is not None:
            raise SparkQueryError(root_cause(str(error))) from error  # --verbose: Spark's
        if self.recorder.count(self.run_id) == len(self.by_batch):
            return False
        fresh = False
        for p in self.recorder.batches(self.run_id):
            batch = int(p["batchId"])
            if batch in self.by_batch:
                continue
            self.by_batch[batch] = p
            fresh = True
            with suppress(KeyError, TypeError, ValueError):
                self.latest_start_s = max(self.latest_start_s, _epoch_s(p["timestamp"]))
            self.sizes[batch] = self.uploads.measure()
        return fresh


def _stop(query: Any, recorder: ProgressRecorder, progress: _Progress) -> float:
    """Stop ``query`` and take every batch it reported (the listener's events arrive after
    ``stop`` returns: its termination event is the last); the time of the stop."""
    stopped = time.time()
    query.stop()
    if not recorder.wait_terminated(progress.run_id):
        raise SparkQueryError("the transformWithState query's termination event did "
                              "not reach its listener within 30 s of its stop")
    progress.poll()  # the batches that ended while the query stopped
    return stopped


def run_query(spark: Any, events: pa.Table, release_ms: np.ndarray, settings: QuerySettings,
              work_dir: Path, checkpoint_dir: Path, name: str = "statebench_tws") -> QueryResult:
    """Run the events through a transformWithState query on the paced clock (module
    docstring); the query is stopped, its listener removed and the session's settings
    restored in every case.

    The clock starts once the query has run one batch over an empty file (its Python workers
    and the processor's state schemas are made in the first batch that has a file: 20-30 s
    under load here), so the events' release is not swallowed by the query's start. Every
    batch is read from a ``StreamingQueryListener`` (``backends.spark.listener``), up to the
    query's termination event. Once every event is processed the query runs on
    (:func:`_drain`) until a batch has started at or after the last data batch's time plus
    the processor's TTL or timer: that batch's end-of-batch sweep (or its timers) removed the
    last of what the query kept, so it is in the numbers."""
    from backends.spark.listener import recording

    staging, input_dir = work_dir / "staging", work_dir / "input"
    input_dir.mkdir(parents=True, exist_ok=True)
    staging.mkdir(parents=True, exist_ok=True)
    plan = plan_slices(release_ms, settings.slice_ms)
    warm = staging / "warm-up.parquet"
    pq.write_table(events.slice(0, 0), warm)
    n = events.num_rows
    from pyspark.sql.types import StructType

    spark_schema = StructType.fromDDL(spark_ddl(events.schema))
    old = set_confs(spark, state_store_confs(settings))
    query = None
    writer = SliceWriter(events, plan, staging)  # fills its stretch ahead during the warm-up
    feeder: Feeder | None = None
    started = time.time()
    try:
        with recording(spark, name) as recorder:
            writer.start()
            stream = (spark.readStream.schema(spark_schema).parquet(str(input_dir))
                      .groupBy("key")
                      .transformWithState(SpecProcessor(settings.processor), OUTPUT_DDL,
                                          "Append", "ProcessingTime"))
            os.rename(warm, input_dir / warm.name)
            query = (stream.writeStream.format("memory").queryName(name).outputMode("append")
                     .option("checkpointLocation", str(checkpoint_dir))
                     .trigger(processingTime=f"{settings.trigger_ms} milliseconds").start())
            progress = _Progress(query, recorder, checkpoint_dir)
            deadline = started + settings.timeout_s
            while not progress.poll():
                if time.time() > deadline:
                    raise SparkQueryError(f"the transformWithState query ran no batch within "
                                          f"{settings.timeout_s:g} s of its start")
                time.sleep(0.05)
            warm_up = set(progress.by_batch)
            progress.uploads.baseline()  # the warm-up's files are not the run's uploads
            t0 = time.time()
            feeder = Feeder(writer, input_dir, t0)
            feeder.start()
            last_due = int(plan.due_ms[-1]) / 1000.0 if len(plan) else 0.0
            deadline = t0 + last_due + settings.timeout_s
            consumed = 0
            while True:
                time.sleep(0.05)
                fresh = progress.poll()
                if feeder.error is not None:
                    raise feeder.error
                if fresh:  # what the query has read is not needed again (disk, a fast Ctrl-C)
                    feeder.prune(progress.latest_start_s)
                # Spark's numInputRows missed a first batch's rows here (0 for a batch that
                # read a file): the sink's rows, one per event, say how far the query got
                if (fresh or not n) and feeder.released == len(plan):
                    consumed = int(spark.sql(f"SELECT count(*) FROM {name}").collect()[0][0])
                    if consumed >= n:
                        last_t = spark.sql(f"SELECT max(t) FROM {name}").collect()[0][0]
                        _drain(progress, settings, None if last_t is None else int(last_t))
                        break
                if time.time() > deadline:
                    raise SparkQueryError(
                        f"the transformWithState query processed {consumed:,} of {n:,} events "
                        f"within {settings.timeout_s:g} s after the last release")
            stopped = _stop(query, recorder, progress)
            out = spark.table(name).toArrow()
            batches = [b for b in sorted(progress.by_batch) if b not in warm_up]
            return QueryResult(
                outputs=out, progress=[progress.by_batch[b] for b in batches],
                checkpoint_sizes={b: progress.sizes[b] for b in batches if b in progress.sizes},
                t0_ms=int(t0 * 1000),
                last_release_ms=int((t0 + last_due) * 1000), wall_s=stopped - t0,
                checkpoint_end_bytes=progress.uploads.measure()[0], events=n,
                start_s=t0 - started,
                warm_up=[progress.by_batch[b] for b in sorted(warm_up)],
                min_deltas_for_snapshot=settings.min_deltas_for_snapshot)
    finally:
        writer.stop()
        if feeder is not None:
            feeder.stop()
            feeder.join(5)
        if writer.ident is not None:  # started
            writer.join(5)
        end_query(spark, query, name)
        restore_confs(spark, old)


def run_event_query(spark: Any, events: pa.Table, settings: QuerySettings, work_dir: Path,
                    checkpoint_dir: Path, name: str = "statebench_tws") -> QueryResult:
    """Run the events (with their time ``ts``, epoch ms) through a transformWithState query in
    ``TimeMode.EventTime`` (spark_event_timer), unpaced; the query is stopped, its listener
    removed and the session's settings restored in every case.

    Every batch is one file of ``settings.event_slice_ms`` of the records' time, all written
    before the query starts, each with a later modification time than the one before, read
    one file a batch (``maxFilesPerTrigger`` 1: the file source takes the oldest first): the
    batches, their watermarks (the largest ``ts`` read so far less the delay) and so every
    timer's batch are the same in every run, whatever the machine's speed. Data is always
    waiting, so Spark runs no batch without data between them. The query's time is ``ts``
    moved forward where needed so that the first event is after 0 (``QueryResult
    .time_shift_ms``: Spark's first watermark is 0, and a row at or below it is dropped as
    late). A closing record (key
    :data:`CLOSING_OP`'s row, op :data:`CLOSING_OP`) at the last ``ts`` plus the timer and the
    delay, one ms more, moves the watermark past every timer: Spark then runs one batch
    without data whose timers clear what is left (an event-time query's state waits for later
    records to move its clock; here the run's end is such a record). The query is stopped once
    that batch is reported."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    from backends.spark.listener import recording

    timer_ms = settings.processor.event_timer_ms
    if timer_ms is None:
        raise ValueError("run_event_query runs spark_event_timer's processor: its "
                         "event_timer_ms is None")
    n = events.num_rows
    input_dir = work_dir / "input"
    input_dir.mkdir(parents=True, exist_ok=True)
    ts = events.column("ts").to_numpy() if n else np.zeros(0, dtype=np.int64)
    # Spark drops a row at or below the watermark as late, and the first batch's watermark is
    # 0: an event at time 0 or before would be lost, so the query's time starts at 1 ms
    shift = max(0, 1 - int(ts.min())) if n else 0
    if shift:
        ts = ts + shift
        events = events.set_column(events.column_names.index("ts"), "ts",
                                   pa.array(ts, pa.int64()))
    start_ms = int(ts[0]) if n else 0
    closing_ts = (int(ts.max()) if n else 0) + timer_ms + settings.watermark_delay_ms + 1
    closing = pa.table({c: pa.array([_closing_value(c, n, closing_ts)],
                                    events.schema.field(c).type) for c in events.column_names},
                       schema=events.schema)
    table = pa.concat_tables([events, closing])
    offsets = np.maximum(0, table.column("ts").to_numpy() - start_ms)
    offsets = np.maximum.accumulate(offsets)  # in ts order already: only guards the closing
    plan = plan_slices(offsets, settings.event_slice_ms)
    past = time.time() - 10.0 - len(plan) * 0.01
    for i in range(len(plan)):  # strictly later times, in order: the source reads by them
        path = plan.write(table, i, input_dir)
        stamp = past + i * 0.01
        os.utime(path, (stamp, stamp))
    final_watermark_ms = closing_ts - settings.watermark_delay_ms
    spark_schema = StructType.fromDDL(spark_ddl(table.schema))
    old = set_confs(spark, state_store_confs(settings))
    query = None
    started = time.time()
    try:
        with recording(spark, name) as recorder:
            stream = (spark.readStream.schema(spark_schema).option("maxFilesPerTrigger", 1)
                      .parquet(str(input_dir))
                      .withColumn("et", F.timestamp_millis("ts"))
                      .withWatermark("et", f"{settings.watermark_delay_ms} milliseconds")
                      .groupBy("key")
                      .transformWithState(SpecProcessor(settings.processor), OUTPUT_DDL,
                                          "Append", "EventTime"))
            query = (stream.writeStream.format("memory").queryName(name).outputMode("append")
                     .option("checkpointLocation", str(checkpoint_dir)).start())
            progress = _Progress(query, recorder, checkpoint_dir)
            deadline = started + settings.timeout_s
            while True:
                time.sleep(0.05)
                progress.poll()
                if any(watermark_ms(p) >= final_watermark_ms
                       for p in progress.by_batch.values()):  # the batch after the closing one
                    break
                if time.time() > deadline:
                    done = int(spark.sql(f"SELECT count(*) FROM {name} WHERE ord >= 0")
                               .collect()[0][0])
                    raise SparkQueryError(
                        f"the event-time transformWithState query processed {done:,} of "
                        f"{n:,} events and ran no batch at its closing watermark within "
                        f"{settings.timeout_s:g} s")
            stopped = _stop(query, recorder, progress)
            out = spark.table(name).toArrow()
            is_event = pc.greater_equal(out.column("ord"), 0)
            timers = out.filter(pc.invert(is_event))
            batches = sorted(progress.by_batch)
            return QueryResult(
                outputs=out.filter(is_event), progress=[progress.by_batch[b] for b in batches],
                checkpoint_sizes={b: progress.sizes[b] for b in batches if b in progress.sizes},
                t0_ms=int(started * 1000), last_release_ms=int(started * 1000),
                wall_s=stopped - started, checkpoint_end_bytes=progress.uploads.measure()[0],
                events=n, start_s=0.0, min_deltas_for_snapshot=settings.min_deltas_for_snapshot,
                time_shift_ms=shift,
                fired=list(zip(timers.column("t").to_pylist(), timers.column("r").to_pylist())))
    finally:
        end_query(spark, query, name)
        restore_confs(spark, old)


def _closing_value(column: str, n: int, closing_ts: int) -> Any:
    """The closing record's value in ``column``: an ``ord`` after every event's, op and key
    :data:`CLOSING_OP`, its time, nothing else."""
    return {"key": CLOSING_OP, "ord": n, "op": CLOSING_OP, "ts": closing_ts}.get(column)


def watermark_ms(progress: dict[str, Any]) -> int:
    """A batch's event-time watermark as Spark reported it (its ``eventTime.watermark``, the
    eviction watermark its timers fired at), epoch ms; -1 where it reported none."""
    iso = (progress.get("eventTime") or {}).get("watermark")
    return -1 if iso is None else round(_epoch_s(iso) * 1000)


def _drain(progress: _Progress, settings: QuerySettings, last_batch_ms: int | None) -> None:
    """Keep taking the query's batches after it processed its last event: with a TTL or a
    timer until a batch has started at or after ``last_batch_ms`` (the last data batch's
    timestamp) plus it - that batch's timestamp is at least its trigger's start, so every unit
    or timer the query kept had expired by it and its sweep (or timers) removed them - and
    has been reported; without either, for ``settings.drain_s``. Gives up (an error naming
    the wait) after ``settings.timeout_s``."""
    p = settings.processor
    expiry = p.ttl_ms or p.timer_ms
    if not expiry or last_batch_ms is None:
        until = time.time() + settings.drain_s
        while time.time() < until:
            progress.poll()
            time.sleep(0.05)
        return
    due_s = (last_batch_ms + expiry) / 1000.0
    deadline = time.time() + settings.timeout_s
    while progress.latest_start_s < due_s:
        progress.poll()
        if time.time() > deadline:
            raise SparkQueryError(
                f"the transformWithState query ran no batch after its last event's batch plus "
                f"its TTL or timer ({expiry} ms) within {settings.timeout_s:g} s")
        time.sleep(0.05)


def _epoch_s(iso: str) -> float:
    """A progress ``timestamp`` (ISO 8601, UTC, ``Z``) as epoch seconds."""
    from datetime import datetime

    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


class SparkQueryError(RuntimeError):
    """The streaming query failed; the message is its root cause in one line."""


def root_cause(text: str) -> str:
    """The last ``Caused by``/exception line of a Spark error, in one line."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    causes = [ln for ln in lines if ln.startswith("Caused by:")]
    if causes:
        return causes[-1].removeprefix("Caused by:").strip()[:400]
    return (lines[0] if lines else "unknown error")[:400]
