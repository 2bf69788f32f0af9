"""The in-process runner: the same plan and operator as the Spark runner, without Spark.

Events are generated with the same source partitioning, tagged and sorted exactly as the Spark
stages do (``workloads.run.source``), and each scenario runs every task's operator in this process,
one task after the other, each task's backend closed before the next one opens. Used by fast
tests, asv, and as the baseline that Spark's overhead is measured against. Throughput is
measured per task, so running tasks one after the other on one core measures the same per-core
rate as P parallel Spark tasks on P cores.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from workloads.run.metrics import (
    METRIC_SCHEMA,
    attempts,
    finalize_rows,
    job_rows,
    not_applicable_rows,
)
from workloads.run.operator import run_operator_batches
from workloads.run.plan import (
    DataFacts,
    RunConfig,
    RunOutcome,
    Scenario,
    operator_config,
    plan_scenarios,
    spec_time_frame,
)
from workloads.run.source import keyed_table

JobCallback = Callable[[Scenario, int], None]


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


def run_in_process(cfg: RunConfig, on_job: JobCallback | None = None) -> RunOutcome:
    """Run every applicable scenario x repetition in this process."""
    started = time.perf_counter()
    runnable, skipped = plan_scenarios(cfg)
    table = keyed_table(cfg.spec, cfg.partitions, cfg.parallelism, cfg.max_parallelism,
                        cfg.batch_size)
    facts = data_facts(table, cfg)
    # one task after the other, each closed before the next opens: like Spark's tasks, each
    # backend has the process to itself (heap physical bytes are an RSS share, see metrics.py)
    task_tables = [table.filter(pc.equal(table.column("task"), task))
                   for task, _ in facts.task_counts]
    parts: list[pa.Table] = []
    job_seconds: dict[str, list[float]] = {}
    for scenario in runnable:
        for rep in range(cfg.repetitions):
            op_cfg = operator_config(cfg, scenario, rep, facts)
            t0 = time.perf_counter()
            out = [
                batch
                for task_table in task_tables
                for batch in run_operator_batches(
                    op_cfg, task_table.to_batches(max_chunksize=cfg.batch_size))
            ]
            seconds = time.perf_counter() - t0
            job_seconds.setdefault(op_cfg.scenario.label, []).append(seconds)
            parts.append(pa.Table.from_batches(out, schema=METRIC_SCHEMA))
            parts.append(job_rows(op_cfg.scenario, rep, facts.events, seconds))
            if on_job is not None:
                on_job(scenario, rep)
    parts.append(not_applicable_rows(cfg.run_id, cfg.spec.name,
                                     [(n.backend, n.strategy) for n in skipped]))
    raw = pa.concat_tables(parts)
    return RunOutcome(
        config=cfg,
        rows=finalize_rows(raw),
        not_applicable=skipped,
        facts=facts,
        engine="in-process",
        duration_s=time.perf_counter() - started,
        retried_attempts={k: v for k, v in attempts(raw).items() if v},
        job_seconds=job_seconds,
    )
