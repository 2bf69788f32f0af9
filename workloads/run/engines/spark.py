"""The Spark engine: generated keyed workloads measured inside Spark executors.

Stages (architecture.md, "The path of one run")::

    spark.range(S, numPartitions=S).mapInArrow(generate)        source: S generator partitions,
                                                                each event tagged with its task
    .repartition(P, "pkey")                                     task t -> Spark partition t
    .sortWithinPartitions("task", "ts", "seq")                  time order per task (total order)
    .persist()                                                  shared by every scenario's job
    .mapInArrow(run_operator, METRIC_DDL)                       one backend per task; metric rows
    .toArrow()                                                  collected on the driver

Exact partitioning: ``repartition(P, col)`` sends a row to ``pmod(murmur3(col, 42), P)``; the
source stage writes, per task ``t``, a ``pkey`` chosen so that this formula gives exactly ``t``
(:func:`partition_keys`, a port of Spark's ``Murmur3_x86_32.hashLong``, checked against Spark in
the tests). Every Spark task then owns one contiguous key-group range. Correctness does not rely
on it: the operator stage runs one backend per task id it sees, whatever the partitioner did.

Networking: one SparkSession per process, driver and block manager bound to 127.0.0.1, no UI,
``SPARK_LOCAL_IP=127.0.0.1`` for everything Spark starts; nothing listens beyond loopback. The
default master is ``local[*]``; any cluster via ``master`` (or ``spark-submit``'s session).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from workloads.run.config import OperatorConfig
from workloads.run.engines.schedule import check_schedule
from workloads.run.engines.spark_progress import tracked
from workloads.run.engines.spark_session import (
    get_session,
)
from workloads.run.metrics import METRIC_DDL, METRIC_SCHEMA
from workloads.run.plan import DataFacts, RunConfig, RunOutcome, spec_time_frame
from workloads.run.runner import JobCallback, run
from workloads.run.source import keyed_partition, source_ddl, source_schema
from workloads.run.tasks import run_operator_batches
from workloads.spec import WorkloadSpec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SPARK_HASH_SEED = 42
PREFETCH_BYTES = 256 << 20  # input read ahead per Spark task (see prefetch)


class InjectedTaskFailure(RuntimeError):
    """Raised on purpose by a task's first attempt (tests of Spark's retry)."""


# ------------------------------------------------------------------------------------------------
# Errors raised inside tasks
# ------------------------------------------------------------------------------------------------
#
# Why: an error raised in a Spark task reaches the driver as a PythonException (or a
# Py4JJavaError around one) of 100-140 lines: the task's Python traceback inside Spark's own
# text. A task therefore wraps what it raises in one tagged line (the error's type and its
# message as JSON), and the driver finds that line and raises a driver-side error the CLI prints
# in one line: statebench's own errors as themselves (a bad trace is a TraceError, exit 2), an
# unexpected one as a TaskError naming its type. The whole Spark error stays the ``__cause__``
# (``--verbose`` prints it).

_TAG_OPEN, _TAG_CLOSE = "<<statebench-task-error>>", "<<end-statebench-task-error>>"


class TaskError(RuntimeError):
    """An error raised inside a Spark task, as one line. ``kind`` is its qualified type name;
    ``own`` whether it is one of statebench's (its message is then meant for the user)."""

    def __init__(self, kind: str, message: str, own: bool) -> None:
        self.kind, self.message, self.own = kind, message, own
        first = (message.strip().splitlines() or [""])[0]
        short = kind.rsplit(".", 1)[-1]
        super().__init__(first if own else f"a Spark task failed: {short}: {first}")


def _tag(exc: BaseException) -> str:
    import json

    kind = f"{type(exc).__module__}.{type(exc).__qualname__}"
    record: dict[str, Any] = {"kind": kind, "message": str(exc)}
    if isinstance(exc, OSError):
        record.update(errno=exc.errno, strerror=exc.strerror,
                      filename=None if exc.filename is None else str(exc.filename))
    return _TAG_OPEN + json.dumps(record) + _TAG_CLOSE


def _reported(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A task's output, with what it raises tagged for :func:`driver_error` (module notes)."""
    try:
        yield from batches
    except InjectedTaskFailure:
        raise  # Spark's retry is what is tested; its message stays as it is
    except Exception as exc:
        from backends.storage.rocksdb import rocksdb_io_error

        raise RuntimeError(_tag(rocksdb_io_error(exc) or exc)) from exc  # a full disk: OSError


def driver_error(exc: BaseException) -> BaseException | None:
    """The one-line error a failed Spark job's ``exc`` stands for, or None if no task of
    statebench's raised it (a Spark or JVM error of its own)."""
    import json

    texts = [str(exc), str(getattr(exc, "desc", "") or "")]
    found = None
    for text in texts:
        found = re.search(re.escape(_TAG_OPEN) + r"(.*?)" + re.escape(_TAG_CLOSE), text)
        if found is not None:
            break
    if found is None:
        return _untagged(texts)
    try:
        record = json.loads(found.group(1))
        kind, message = str(record["kind"]), str(record["message"])
    except (ValueError, KeyError, TypeError):
        return None
    return _rebuilt(kind, message, record)


_PYTHON_ERROR = re.compile(r"^(?P<kind>[A-Za-z_][\w.]*(?:Error|Exception|Exit)): (?P<msg>.*)$")


def _untagged(texts: list[str]) -> BaseException | None:
    """A task that failed before statebench's code ran (its function did not import, a worker
    crashed): the last Python exception line of Spark's text, as a TaskError; None when the
    text holds no Python traceback (a JVM error of Spark's own is left as it is)."""
    for text in texts:
        if "Traceback (most recent call last)" not in text:
            continue
        lines = text.split("Traceback (most recent call last)", 1)[1].splitlines()
        found = [m for m in (_PYTHON_ERROR.match(line) for line in lines) if m is not None]
        if found:
            return TaskError(found[-1]["kind"], found[-1]["msg"], own=False)
    return None


def _rebuilt(kind: str, message: str, record: dict[str, Any]) -> BaseException:
    from backends.flink.errors import FlinkUnavailableError, FlinkWorkerError
    from workloads.errors import InfrastructureError
    from workloads.generator import TraceError
    from workloads.run.plan import PlanError

    if record.get("errno") is not None:  # an OSError (a full disk, a folder made read-only)
        return OSError(record["errno"], record.get("strerror") or message, record.get("filename"))
    short = kind.rsplit(".", 1)[-1]
    if kind in ("workloads.generator.TraceError",):
        return TraceError(message)
    if kind in ("workloads.spec.SpecError", "workloads.run.plan.PlanError"):
        return PlanError(message)
    if kind == "workloads.errors.InfrastructureError":
        return InfrastructureError(message)
    if short == FlinkUnavailableError.__name__:
        return InfrastructureError(message)
    if kind.startswith("backends.flink.errors."):
        return FlinkWorkerError(message)
    own = kind.startswith(("workloads.", "backends."))
    return TaskError(kind, message, own)


def _unwrapped(action: Callable[[], Any]) -> Any:
    """``action()``, with a failed task's error raised as its one-line driver error."""
    try:
        return action()
    except Exception as exc:
        error = driver_error(exc)
        if error is None:
            raise
        raise error from exc


# ------------------------------------------------------------------------------------------------
# Exact hash partitioning
# ------------------------------------------------------------------------------------------------

_M32 = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _mix_k1(k1: int) -> int:
    k1 = (k1 * 0xCC9E2D51) & _M32
    k1 = _rotl32(k1, 15)
    return (k1 * 0x1B873593) & _M32


def _mix_h1(h1: int, k1: int) -> int:
    h1 ^= k1
    h1 = _rotl32(h1, 13)
    return (h1 * 5 + 0xE6546B64) & _M32


def spark_hash_long(value: int, seed: int = SPARK_HASH_SEED) -> int:
    """Spark's ``hash(<bigint>)`` (Murmur3_x86_32.hashLong), as a signed 32-bit int."""
    v = value & 0xFFFFFFFFFFFFFFFF
    h1 = _mix_h1(seed & _M32, _mix_k1(v & _M32))
    h1 = _mix_h1(h1, _mix_k1(v >> 32))
    h1 ^= 8
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _M32
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _M32
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def partition_keys(num_partitions: int) -> list[int]:
    """For each partition p, the smallest bigint k >= 0 with pmod(hash(k), n) == p."""
    found: dict[int, int] = {}
    k = 0
    while len(found) < num_partitions:
        found.setdefault(spark_hash_long(k) % num_partitions, k)
        k += 1
    return [found[p] for p in range(num_partitions)]


# ------------------------------------------------------------------------------------------------
# Stages
# ------------------------------------------------------------------------------------------------


def _source_fn(
    spec: WorkloadSpec, num_partitions: int, parallelism: int, max_parallelism: int,
    batch_size: int,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    pkeys = np.asarray(partition_keys(parallelism), dtype=np.int64)
    schema = source_schema(spec).append(pa.field("pkey", pa.int64()))

    def generate(ids: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for id_batch in ids:
            for p in id_batch.column(0).to_pylist():
                for batch in _reported(keyed_partition(spec, p, num_partitions, parallelism,
                                                       max_parallelism, batch_size)):
                    task = batch.column("task").to_numpy(zero_copy_only=False)
                    yield pa.RecordBatch.from_arrays(
                        [*batch.columns, pa.array(pkeys[task], pa.int64())], schema=schema
                    )

    return generate


def keyed_events(spark: SparkSession, cfg: RunConfig) -> DataFrame:
    """The source stage, exactly partitioned by task and sorted by (task, ts, seq)."""
    n = cfg.partitions
    source = spark.range(n, numPartitions=n).mapInArrow(
        _source_fn(cfg.spec, n, cfg.parallelism, cfg.max_parallelism, cfg.batch_size),
        source_ddl(source_schema(cfg.spec).append(pa.field("pkey", pa.int64()))),
    )
    return (
        source.repartition(cfg.parallelism, "pkey")
        .sortWithinPartitions("task", "ts", "seq")
        .drop("pkey")
    )


def prefetch(batches: Iterator[pa.RecordBatch], max_bytes: int) -> Iterator[pa.RecordBatch]:
    """Read input batches ahead, up to ``max_bytes``, before handing out the first one.

    While the operator runs, the JVM would otherwise be converting and sending the next batches
    on the same cores, and that work would be measured as state-backend time. Draining the input
    first (bounded: beyond ``max_bytes`` the rest streams) keeps Spark's own work out of the
    measured loop; the wait is input time, which records/s excludes anyway.
    """
    ahead: list[pa.RecordBatch] = []
    size = 0
    for batch in batches:
        ahead.append(batch)
        size += batch.nbytes
        if size >= max_bytes:
            break
    yield from ahead
    del ahead
    yield from batches


def _operator_fn(
    cfg: OperatorConfig, fail_partition: int | None
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run_operator(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        partition = ctx.partitionId() if ctx is not None else 0
        attempt = ctx.attemptNumber() if ctx is not None else 0
        # unique in the application and growing with every retry (stage retries included):
        # orders the checkpoint folders of a task's attempts
        attempt_id = ctx.taskAttemptId() if ctx is not None else 0
        after_batch = None
        if fail_partition == partition and attempt == 0:

            def after_batch(i: int) -> None:
                raise InjectedTaskFailure(
                    f"injected failure in partition {partition} after input batch {i}"
                )

        yield from _reported(run_operator_batches(
            cfg, prefetch(batches, PREFETCH_BYTES), attempt=attempt, attempt_id=attempt_id,
            after_batch=after_batch,
        ))

    return run_operator


def data_facts(keyed: DataFrame, cfg: RunConfig) -> DataFacts:
    """Events per task (for the warm-up cut) and the time frame, in one small job."""
    from pyspark.sql import functions as F

    rows = keyed.groupBy("task").agg(
        F.count("*").alias("n"), F.min("ts").alias("lo"), F.max("ts").alias("hi")
    ).collect()
    counts = tuple(sorted((int(r["task"]), int(r["n"])) for r in rows))
    frame = spec_time_frame(cfg.spec)
    if frame is None:
        if rows:
            frame = (min(int(r["lo"]) for r in rows), max(int(r["hi"]) for r in rows) + 1)
        else:
            frame = (0, 0)
    return DataFacts(counts, frame[0], frame[1])


class SparkEngine:
    """One Spark job per scenario x repetition over the persisted keyed events (see the module
    docstring); each Spark task runs its operator task(s) with :func:`run_operator_batches`."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._keyed: DataFrame | None = None
        self._fail_task_once: int | None = None
        self._records = 0
        #: ``on_progress(records read, records of the job)`` within each job, from Spark's
        #: status tracker (``spark_progress``: completed tasks' share)
        self.on_progress: Callable[[int, int], None] | None = None

    @property
    def name(self) -> str:
        return str(self.spark.sparkContext.master)

    def prepare(self, cfg: RunConfig) -> DataFacts:
        from pyspark import StorageLevel

        conf = self.spark.conf
        conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(cfg.batch_size))
        conf.set("spark.sql.shuffle.partitions", str(cfg.parallelism))
        self._fail_task_once = cfg.fail_task_once
        self._keyed = keyed_events(self.spark, cfg).persist(StorageLevel.MEMORY_AND_DISK)
        keyed = self._keyed
        facts = _unwrapped(lambda: data_facts(keyed, cfg))
        check_schedule(cfg, facts)  # before any job
        self._records = facts.events
        return facts

    def run_tasks(self, op_cfg: OperatorConfig) -> pa.Table:
        assert self._keyed is not None, "prepare() first"
        fn = _operator_fn(op_cfg, self._fail_task_once)
        job = self._keyed.mapInArrow(fn, METRIC_DDL)
        with tracked(self.spark.sparkContext, self._records, self.on_progress):
            return _normalise(_unwrapped(job.toArrow))

    def release(self) -> None:
        if self._keyed is not None:
            self._keyed.unpersist()
            self._keyed = None


def run_spark(
    cfg: RunConfig,
    spark: SparkSession | None = None,
    master: str | None = None,
    on_job: JobCallback | None = None,
) -> RunOutcome:
    """Run every applicable scenario x repetition as one Spark job each (on ``spark``, or on
    this process's session for ``master``, see :func:`get_session`)."""
    spark = spark if spark is not None else get_session(master)
    return run(cfg, SparkEngine(spark), on_job)


def _normalise(table: pa.Table) -> pa.Table:
    """Spark's Arrow output with exactly METRIC_SCHEMA's types (nullability may differ)."""
    return pa.Table.from_arrays(
        [table.column(f.name).cast(f.type) for f in METRIC_SCHEMA], schema=METRIC_SCHEMA
    )
