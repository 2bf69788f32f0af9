"""Spark's own throughput of the spark-tws processor: pre-staged input in fixed batch sizes, each
batch's duration from Spark's progress, fitted against its rows
(``workloads.spark_throughput``).

Why: the paced lane (``backends.spark.tws``) divides events by the time of whatever batches the
clock happened to make, so its records/s mixes Spark's fixed per-batch cost (planning, the state
store's load and commit, the checkpoint) with the per-record cost, in proportions set by the
machine's speed that day. Here the spec's events are written up front into Parquet files of
chosen sizes (in time order: file ``i`` holds the next ``plan[i]`` events), every file is in
the input folder before the query starts, and the file source reads one file per micro-batch
(``maxFilesPerTrigger`` = 1, files ordered by their modification times), so batch ``i`` carries
exactly ``plan[i]`` rows. Each batch's ``durationMs`` (``triggerExecution``: the whole batch;
``addBatch``: its execution in the sink, the stateful operator included) comes from Spark's
``StreamingQueryListener``; the rows each batch carried are counted from the sink (every output
row carries its batch's timestamp and its event's position) and checked against the plan and
against Spark's ``numInputRows``. The batches after the warm-up are fitted by least squares as
``duration = per_batch + per_row * rows``: the per-batch cost is the intercept, the per-row
cost the slope, each with a t interval (``workloads.spark_throughput.fit_line``).

Sizes are interleaved (each round holds every size once, in a seeded random order), so a drift
over the query (the store growing, the machine's load changing) lands on all sizes alike instead
of on the slope.

Variants measure what the Python worker costs: ``python`` is the lane's own processor
(:class:`backends.spark.tws.SpecProcessor`); ``python-nostate`` moves the same rows through the
same Python worker and emits the same output but touches no state; ``python-reads`` is the
lane's processor plus ``extra_reads`` state reads per record (each one protobuf round trip
between the Python worker and the JVM's state server); ``jvm`` and ``jvm-reads`` are the same
operations in a JVM ``StatefulProcessor`` (``backends/spark/jvm_processor``), which runs inside
the executor with no Python worker at all.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from backends.spark.listener import ProgressRecorder
from backends.spark.session_setup import end_query, session_confs, spark_ddl
from backends.spark.tws import (
    CHANGELOG_CONF,
    OUTPUT_DDL,
    PROVIDER_CONF,
    ROCKSDB_PROVIDER,
    WRITE_RESULT,
    ProcessorSettings,
    SparkQueryError,
    SpecProcessor,
    root_cause,
)

#: Rows per micro-batch, one query's sizes.
DEFAULT_BATCH_ROWS = (1000, 4000, 16000)
#: Measured batches per size.
DEFAULT_BATCHES = 4
#: Batches dropped at each query's start: two rounds of the sizes, largest first. The first
#: batch starts the Python workers and creates the state store's column families; the next
#: ones still run Spark's generated code and the processor's JVM code before the JIT has
#: compiled them (docs/spark-lanes.md, "Throughput mode", shows what they cost).
DEFAULT_WARM_UP = 6
#: The processor variants (module docstring).
VARIANTS = ("python", "python-nostate", "python-reads", "jvm", "jvm-reads")
DEFAULT_EXTRA_READS = 2


# ------------------------------------------------------------------------------------------------
# The plan and the files
# ------------------------------------------------------------------------------------------------


def batch_plan(batch_rows: Sequence[int], batches: int, warm_up: int,
               seed: int = 0) -> list[int]:
    """Rows of every micro-batch in order: ``warm_up`` batches (the sizes cycled, largest
    first), then ``batches`` rounds, each holding every size once in a seeded random order."""
    sizes = sorted({int(r) for r in batch_rows}, reverse=True)
    if not sizes or sizes[-1] < 1:
        raise ValueError("batch sizes must be positive row counts")
    rng = random.Random(seed)
    plan = [sizes[i % len(sizes)] for i in range(warm_up)]
    for _ in range(batches):
        round_ = list(sizes)
        rng.shuffle(round_)
        plan.extend(round_)
    return plan


def stage_files(events: pa.Table, plan: Sequence[int], folder: Path) -> list[Path]:
    """File ``i`` holds the next ``plan[i]`` events; modification times one second apart in
    plan order, the order Spark's file source reads them in."""
    folder.mkdir(parents=True, exist_ok=True)
    if sum(plan) > events.num_rows:
        raise ValueError(f"the plan needs {sum(plan):,} events, the table has "
                         f"{events.num_rows:,}")
    paths = []
    start = 0
    base = time.time() - len(plan) - 10
    for i, rows in enumerate(plan):
        path = folder / f"batch-{i:05d}.parquet"
        pq.write_table(events.slice(start, rows), path)
        os.utime(path, (base + i, base + i))
        paths.append(path)
        start += rows
    return paths


# ------------------------------------------------------------------------------------------------
# Processors of the variants
# ------------------------------------------------------------------------------------------------


class NoStateProcessor(SpecProcessor):
    """The lane's processor without its state: the same rows in, sorted the same way, the same
    output rows out, no state variable and no state call."""

    def init(self, handle: Any) -> None:
        self.handle = handle

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        from pyspark.sql import Row

        now = timerValues.getCurrentProcessingTimeInMs()
        return iter([Row(ord=r.ord, t=now, r=WRITE_RESULT)
                     for r in sorted(rows, key=lambda row: row.ord)])


class ExtraReadsProcessor(SpecProcessor):
    """The lane's processor plus ``extra_reads`` reads of the key's value (else map entry,
    else list) state per record: each read one more round trip to the JVM's state server."""

    def __init__(self, settings: ProcessorSettings, extra_reads: int) -> None:
        super().__init__(settings)
        self.extra_reads = extra_reads

    def init(self, handle: Any) -> None:
        super().init(handle)
        k = self.extra_reads
        value, mp, lst = self.value, self.map, self.list
        reads: Callable[[Any], Any]
        if value is not None:
            def reads(r: Any) -> Any:
                for _ in range(k):
                    value.get()
        elif mp is not None:
            def reads(r: Any) -> Any:
                for _ in range(k):
                    mp.getValue((r.mk,))
        else:
            def reads(r: Any) -> Any:
                for _ in range(k):
                    lst.exists()
        for code, fn in list(self._apply.items()):
            self._apply[code] = _then(fn, reads)


def _then(fn: Callable[[Any], tuple[int, bool]],
          extra: Callable[[Any], Any]) -> Callable[[Any], tuple[int, bool]]:
    def both(r: Any) -> tuple[int, bool]:
        out = fn(r)
        extra(r)
        return out

    return both


# ------------------------------------------------------------------------------------------------
# One query
# ------------------------------------------------------------------------------------------------

@dataclass
class BatchFigure:
    """One micro-batch as Spark reported it and as the sink counted it."""

    batch_id: int
    #: rows the batch carried, counted from the sink's rows
    rows: int
    #: Spark's ``numInputRows`` of the batch
    input_rows: int
    trigger_ms: float
    add_batch_ms: float
    commit_ms: float
    warm_up: bool


@dataclass
class QueryFigures:
    """One variant's query: every batch and the rows it output."""

    variant: str
    strategy: str
    batches: list[BatchFigure]
    output_rows: int
    events: int
    wall_s: float = 0.0
    load_average: tuple[float, float, float] = (0.0, 0.0, 0.0)
    notes: list[str] = field(default_factory=list)

    def steady(self) -> list[BatchFigure]:
        return [b for b in self.batches if not b.warm_up]

    def to_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant, "strategy": self.strategy, "events": self.events,
            "output_rows": self.output_rows, "wall_s": self.wall_s,
            "load_average": list(self.load_average), "notes": self.notes,
            "batches": [asdict(b) for b in self.batches],
        }


def _wait(query: Any, listener: ProgressRecorder, batches: int, timeout_s: float) -> None:
    """Until the listener has the progress of batches 0 .. ``batches`` - 1."""
    deadline = time.time() + timeout_s
    run_id = str(query.runId)
    while True:
        error = query.exception()
        if error is not None:
            raise SparkQueryError(root_cause(str(error))) from error
        seen = {int(p["batchId"]) for p in listener.batches(run_id)}
        if all(b in seen for b in range(batches)):
            return
        if time.time() > deadline:
            raise SparkQueryError(f"the throughput query ran {len(seen)} of {batches} batches "
                                  f"within {timeout_s:g} s")
        time.sleep(0.1)


def run_variant(spark: Any, listener: ProgressRecorder, input_dir: Path, schema: pa.Schema,
                plan: Sequence[int], warm_up: int, variant: str, strategy: str,
                processor: ProcessorSettings, checkpoint: Path, *, changelog: bool = True,
                partitions: int = 2, extra_reads: int = DEFAULT_EXTRA_READS,
                jvm: Any = None, timeout_s: float = 900.0,
                name: str = "statebench_throughput") -> QueryFigures:
    """Run one variant's query over the staged files (one file per batch) until every file is
    read; its batches' figures. The query is stopped, its sink's view dropped and the
    session's settings restored in every case."""
    confs = {PROVIDER_CONF: ROCKSDB_PROVIDER, CHANGELOG_CONF: str(changelog).lower(),
             "spark.sql.shuffle.partitions": str(partitions)}
    query = None
    started = time.time()
    with session_confs(spark, confs):
        try:
            if variant.startswith("jvm"):
                if jvm is None:
                    raise ValueError(f"variant {variant} needs the JVM processor's build")
                query = jvm.start(spark, input_dir, schema, checkpoint, name, processor,
                                  extra_reads if variant == "jvm-reads" else 0)
            else:
                from pyspark.sql.types import StructType

                proc: SpecProcessor
                if variant == "python":
                    proc = SpecProcessor(processor)
                elif variant == "python-nostate":
                    proc = NoStateProcessor(processor)
                elif variant == "python-reads":
                    proc = ExtraReadsProcessor(processor, extra_reads)
                else:
                    raise ValueError(f"unknown variant {variant!r}; known: "
                                     f"{', '.join(VARIANTS)}")
                stream = (spark.readStream.schema(StructType.fromDDL(spark_ddl(schema)))
                          .option("maxFilesPerTrigger", 1).parquet(str(input_dir))
                          .groupBy("key")
                          .transformWithState(proc, OUTPUT_DDL, "Append", "ProcessingTime"))
                query = (stream.writeStream.format("memory").queryName(name)
                         .outputMode("append")
                         .option("checkpointLocation", str(checkpoint)).start())
            _wait(query, listener, len(plan), timeout_s)
            progress = {int(p["batchId"]): p for p in listener.batches(str(query.runId))}
            query.stop()
            wall = time.time() - started
            out = spark.table(name).toArrow()
        finally:
            end_query(spark, query, name)
    figures = batch_figures(progress, out, plan, warm_up)
    result = QueryFigures(variant=variant, strategy=strategy, batches=figures,
                          output_rows=out.num_rows, events=int(sum(plan)), wall_s=wall,
                          load_average=os.getloadavg())
    off = [b.batch_id for b in figures if b.input_rows != b.rows]
    if off:
        result.notes.append(f"Spark's numInputRows differs from the rows counted in batch(es) "
                            f"{', '.join(map(str, off))}")
    return result


def batch_figures(progress: dict[int, dict[str, Any]], outputs: pa.Table,
                  plan: Sequence[int], warm_up: int) -> list[BatchFigure]:
    """Batch ``i`` of the plan as Spark reported it, its rows counted from the sink: the sink's
    ``i``-th batch timestamp (every output row carries its batch's) and, on each, the events'
    positions, which must be exactly file ``i``'s. Raises ``SparkQueryError`` when they are
    not (the file source read the files in another order or more than one at a time)."""
    t = outputs.column("t").to_numpy()
    ords = outputs.column("ord").to_numpy()
    times, counts = np.unique(t, return_counts=True)
    if len(times) != len(plan):
        raise SparkQueryError(f"the sink's rows carry {len(times)} batch timestamps; the plan "
                              f"has {len(plan)} batches (one file each)")
    bounds = np.concatenate([[0], np.cumsum(plan)])
    order = np.argsort(t, kind="stable")
    t_sorted, o_sorted = t[order], ords[order]
    starts = np.concatenate([[0], np.cumsum(counts)])
    out = []
    for i, rows in enumerate(plan):
        batch_ords = o_sorted[starts[i]:starts[i + 1]]
        if (int(counts[i]) != rows or int(batch_ords.min()) != bounds[i]
                or int(batch_ords.max()) != bounds[i + 1] - 1):
            raise SparkQueryError(
                f"batch {i} output {int(counts[i])} rows at {int(t_sorted[starts[i]])}; the "
                f"plan's file {i} has {rows} (events {bounds[i]}..{bounds[i + 1] - 1})")
        p = progress[i]
        d = p.get("durationMs") or {}
        ops = p.get("stateOperators") or [{}]
        out.append(BatchFigure(
            batch_id=i, rows=rows, input_rows=int(p.get("numInputRows", 0) or 0),
            trigger_ms=float(d.get("triggerExecution", 0)),
            add_batch_ms=float(d.get("addBatch", 0)),
            commit_ms=float(ops[0].get("commitTimeMs", 0) or 0), warm_up=i < warm_up))
    return out
