"""The in-process engine: the same plan and operator as on Spark, without Spark.

Events are generated with the same source partitioning, tagged and sorted exactly as the Spark
stages do (``workloads.run.source``), and each job runs every task's operator in this process,
one task after the other, each task's backend closed before the next one opens. Used by fast
tests, asv, and as the baseline that Spark's overhead is measured against. Throughput is
measured per task, so running tasks one after the other on one core measures the same per-core
rate as P parallel Spark tasks on P cores.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from workloads.run.config import OperatorConfig
from workloads.run.engines.schedule import check_schedule
from workloads.run.metrics import METRIC_SCHEMA
from workloads.run.plan import DataFacts, RunConfig, RunOutcome, spec_time_frame
from workloads.run.runner import JobCallback, run
from workloads.run.source import keyed_table
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


class InProcessEngine:
    """Runs a job's tasks one after the other in this process (see the module docstring)."""

    name = "in-process"

    def __init__(self) -> None:
        self._task_tables: list[pa.Table] = []
        self._batch_size = 0

    def prepare(self, cfg: RunConfig) -> DataFacts:
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

    def run_job(self, op_cfg: OperatorConfig) -> pa.Table:
        out = [
            batch
            for task_table in self._task_tables
            for batch in run_operator_batches(
                op_cfg, task_table.to_batches(max_chunksize=self._batch_size))
        ]
        return pa.Table.from_batches(out, schema=METRIC_SCHEMA)

    def release(self) -> None:
        self._task_tables = []


def run_in_process(cfg: RunConfig, on_job: JobCallback | None = None) -> RunOutcome:
    """Run every applicable scenario x repetition in this process."""
    return run(cfg, InProcessEngine(), on_job)
