"""The in-process engine: the same plan and operator as on Spark, without Spark.

Events are generated with the same source partitioning, tagged and sorted exactly as the Spark
stages do (``workloads.run.source``), and each job runs every task's operator in this process,
one task after the other, each task's backend closed before the next one opens. Used by fast
tests, asv, and as the baseline that Spark's overhead is measured against. Throughput is
measured per task, so running tasks one after the other on one core measures the same per-core
rate as P parallel Spark tasks on P cores.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from backends.storage.rocksdb import rocksdb_io_error
from workloads.errors import InfrastructureError
from workloads.run.config import OperatorConfig
from workloads.run.engines.schedule import check_schedule
from workloads.run.metrics import METRIC_SCHEMA
from workloads.run.plan import DataFacts, RunConfig, RunOutcome, spec_time_frame
from workloads.run.runner import JobCallback, run
from workloads.run.source import keyed_table, source_schema
from workloads.run.tasks import run_operator_batches


def data_facts(table: pa.Table, cfg: RunConfig) -> DataFacts:
    """Events per task and the run's time frame (the spec's, or the data's for traces)."""
    tasks = table.column("task").to_numpy()
    counts = np.bincount(tasks, minlength=cfg.parallelism) if len(tasks) else np.zeros(0)
    task_counts = tuple((int(t), int(c)) for t, c in enumerate(counts) if c)
    frame = spec_time_frame(cfg.spec)
    if frame is None:
        ts = table.column("ts").to_numpy()
        frame = (int(ts.min()), int(ts.max()) + 1) if len(ts) else (0, 0)
    return DataFacts(task_counts, frame[0], frame[1])


#: Peak bytes of memory per byte of a keyed input row while ``prepare`` builds the input: the
#: generated batches, the sorted table and the per-task tables are alive at once (measured:
#: 141 bytes per 45-byte ycsb-a row at 6 M events).
PREPARE_PEAK_FACTOR = 3.2
#: Share of the memory available that the input may take (the backends need the rest).
MEMORY_SHARE = 0.8


def available_memory() -> int:
    """Bytes this process may still allocate: the system's available memory, or less under a
    soft address-space limit (``ulimit -v``)."""
    import resource

    import psutil

    free = int(psutil.virtual_memory().available)
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        free = min(free, max(0, soft - psutil.Process().memory_info().vms))
    return free


def row_bytes(schema: pa.Schema) -> int:
    """Bytes of one row of fixed-width columns (16 for any other column)."""
    return sum(f.type.bit_width // 8 if pa.types.is_primitive(f.type) else 16 for f in schema)


def memory_problem(cfg: RunConfig) -> str | None:
    """Why the in-process engine cannot hold ``cfg``'s input, else None. It builds the whole
    keyed input in memory before the first job (Spark streams it per partition): at 3*10^8
    events it grew to 18 GB with no output. Refused up front with the numbers instead."""
    from workloads.generator import total_events

    events = total_events(cfg.spec)
    per_event = row_bytes(source_schema(cfg.spec)) * PREPARE_PEAK_FACTOR
    need = events * per_event
    free = available_memory()
    if need <= free * MEMORY_SHARE:
        return None
    fits = int(free * MEMORY_SHARE / per_event)
    return (f"--in-process builds the whole input in memory: {events:,} events need about "
            f"{need / 1e9:.3g} GB ({per_event:.0f} bytes each), but {free / 1e9:.3g} GB are "
            f"available; lower --events (at most about {fits:,} fit here) or run on Spark "
            "(without --in-process), whose tasks generate their own partitions")


class InProcessEngine:
    """Runs a job's tasks one after the other in this process (see the module docstring)."""

    name = "in-process"

    def __init__(self) -> None:
        self._task_tables: list[pa.Table] = []
        self._batch_size = 0
        #: ``on_progress(records read, records of the job)`` within each job (progress lines)
        self.on_progress: Callable[[int, int], None] | None = None

    def prepare(self, cfg: RunConfig) -> DataFacts:
        problem = memory_problem(cfg)
        if problem is not None:  # before a byte of input is made
            raise InfrastructureError(problem)
        table = keyed_table(cfg.spec, cfg.partitions, cfg.parallelism, cfg.max_parallelism,
                            cfg.batch_size)
        facts = data_facts(table, cfg)
        check_schedule(cfg, facts)  # before any job
        # one table per task, run one after the other with each backend closed before the next
        # opens, as Spark's tasks each have their executor to themselves
        self._task_tables = [table.filter(pc.equal(table.column("task"), task))
                             for task, _ in facts.task_counts]
        self._batch_size = cfg.batch_size
        return facts

    def run_tasks(self, op_cfg: OperatorConfig) -> pa.Table:
        total = sum(t.num_rows for t in self._task_tables)
        done = 0

        def counted(task_table: pa.Table) -> Iterator[pa.RecordBatch]:
            """The task's input, telling ``on_progress`` how far the job has read."""
            nonlocal done
            for batch in task_table.to_batches(max_chunksize=self._batch_size):
                yield batch
                done += batch.num_rows
                if self.on_progress is not None:
                    self.on_progress(done, total)

        try:
            out = [
                batch
                for task_table in self._task_tables
                for batch in run_operator_batches(op_cfg, counted(task_table))
            ]
        except Exception as exc:  # rocksdict's I/O errors (a full disk) as the OSError they are
            io_error = rocksdb_io_error(exc)
            if io_error is None:
                raise
            raise io_error from exc
        return pa.Table.from_batches(out, schema=METRIC_SCHEMA)

    def release(self) -> None:
        self._task_tables = []


def run_in_process(cfg: RunConfig, on_job: JobCallback | None = None) -> RunOutcome:
    """Run every applicable scenario x repetition in this process."""
    return run(cfg, InProcessEngine(), on_job)
