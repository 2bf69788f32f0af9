"""Driving any number of tasks from one stream of record batches.

:func:`run_operator_batches` is the body of the Spark engine's operator stage (``mapInArrow``)
and of the in-process engine alike, so both measure the same code. Which operator runs a task
is the task's lane's (``workloads.lanes``: ``Lane.task_operator``), never the engine's."""

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from workloads.lanes import lane
from workloads.lanes.base import TaskOperator
from workloads.run.config import OperatorConfig
from workloads.run.keying import tasks_for_keys
from workloads.run.metrics import (
    MetricRows,
    Row,
)


def task_operator(
    cfg: OperatorConfig, task: int, attempt: int = 0, attempt_id: int | None = None
) -> TaskOperator:
    """The operator for ``task`` of ``cfg``'s scenario: its lane's."""
    return lane(cfg.backend).task_operator(cfg, task, attempt, attempt_id)


# ------------------------------------------------------------------------------------------------
# Driving several tasks from one batch stream
# ------------------------------------------------------------------------------------------------


def _task_runs(batch: pa.RecordBatch, cfg: OperatorConfig) -> Iterator[tuple[int, int, int]]:
    """(task, offset, length) of each run of equal task ids in ``batch``."""
    if "task" in batch.schema.names:
        tasks = batch.column("task").to_numpy(zero_copy_only=False)
    else:
        keys = batch.column("key").to_numpy(zero_copy_only=False)
        tasks = tasks_for_keys(keys, cfg.parallelism, cfg.max_parallelism)
    if len(tasks) == 0:
        return
    cuts = np.flatnonzero(tasks[1:] != tasks[:-1]) + 1
    starts = np.concatenate(([0], cuts))
    ends = np.concatenate((cuts, [len(tasks)]))
    for s, e in zip(starts.tolist(), ends.tolist()):
        yield int(tasks[s]), s, e - s


@dataclass
class TaskRunner:
    """Runs one KeyedOperator per task id seen in a stream of batches.

    Batches may mix tasks and tasks may interleave: correctness never depends on how a
    partitioner grouped them, only on each task's events arriving in time order.
    """

    cfg: OperatorConfig
    attempt: int = 0
    attempt_id: int | None = None
    operators: dict[int, TaskOperator] = field(default_factory=dict)

    def process(self, batch: pa.RecordBatch) -> None:
        for task, offset, length in _task_runs(batch, self.cfg):
            op = self.operators.get(task)
            if op is None:
                op = self.operators[task] = task_operator(
                    self.cfg, task, self.attempt, self.attempt_id
                )
            op.process(batch.slice(offset, length))

    def finish(self) -> pa.RecordBatch:
        rows: list[Row] = []
        try:
            for task in sorted(self.operators):
                rows.extend(self.operators[task].finish())
        finally:
            self.close()
        return MetricRows(self.cfg.scenario).to_batch() if not rows else _batch(self.cfg, rows)

    def close(self) -> None:
        for op in self.operators.values():
            op.close()


def _batch(cfg: OperatorConfig, rows: list[Row]) -> pa.RecordBatch:
    out = MetricRows(cfg.scenario)
    out.extend(rows)
    return out.to_batch()


def run_operator_batches(
    cfg: OperatorConfig,
    batches: Iterable[pa.RecordBatch],
    attempt: int = 0,
    attempt_id: int | None = None,
    after_batch: Callable[[int], None] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Apply every batch to its task's operator, then yield the metric rows (METRIC_SCHEMA).

    ``attempt`` is the Spark attempt number (reported), ``attempt_id`` a number that grows with
    every attempt (names checkpoint folders; default: ``attempt``). ``after_batch(i)`` runs
    after the i-th input batch (fault injection in tests)."""
    runner = TaskRunner(cfg, attempt, attempt_id)
    try:
        for i, batch in enumerate(batches):
            runner.process(batch)
            if after_batch is not None:
                after_batch(i)
    except BaseException:
        runner.close()
        raise
    yield runner.finish()
