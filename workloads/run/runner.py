"""The one loop of a run: every runnable scenario x repetition as one job on an :class:`Engine`.

An engine is where a job's tasks execute. It prepares the keyed data once per run (and learns
the :class:`~workloads.run.plan.DataFacts`: events per task, the logical time frame), runs one
job (one scenario x repetition) and hands back that job's metric rows, and releases what it
holds. Planning, job totals, ``job_records_per_s``, progress callbacks and the outcome are the
same for every engine, so they live here, once:

* :class:`workloads.run.engines.inprocess.InProcessEngine`: the tasks one after the other in
  this process (fast tests, asv, the per-core baseline);
* :class:`workloads.run.engines.spark.SparkEngine`: one Spark job per scenario x repetition,
  one Spark task per operator task.

Two seams keep new lanes small. An engine decides only *where* tasks run and how their input
batches reach them; *what* runs per task is chosen by backend kind in
:func:`workloads.run.tasks.task_operator`, independent of the engine. The Flink lane
(backends ``flink-heap`` / ``flink-rocksdb``: a JVM worker per task fed record batches,
``workloads.run.flink_lane``) is one ``TaskOperator`` in that factory (``process(batch)``,
``finish() -> rows``, ``close()``), and both engines above drive it unchanged; a different way
of running tasks (a cluster of JVMs of its own) would be a new ``Engine``, driven by this loop.
The ``flink-sql`` lanes are the one exception: a scenario is one real Flink SQL job that reads
its own source (``workloads.run.sql_lane``), run here whatever the engine.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import pyarrow as pa

from backends.flink.sql_lanes import is_sql_lane
from workloads.run.config import OperatorConfig
from workloads.run.metrics import attempts, finalize_rows, job_rows, not_applicable_rows
from workloads.run.plan import (
    DataFacts,
    RunConfig,
    RunOutcome,
    Scenario,
    operator_config,
    plan_scenarios,
)
from workloads.run.sql_lane import run_sql_scenario

JobCallback = Callable[[Scenario, int], None]


class Engine(Protocol):
    """Where a run's tasks execute (see the module docstring)."""

    @property
    def name(self) -> str:
        """What run.json records as the engine: "in-process" or the Spark master URL."""
        ...

    def prepare(self, cfg: RunConfig) -> DataFacts:
        """Make the run's keyed events ready for every job and say what they hold."""
        ...

    def run_job(self, op_cfg: OperatorConfig) -> pa.Table:
        """Run one scenario x repetition over every task; its rows (METRIC_SCHEMA), per task."""
        ...

    def release(self) -> None:
        """Free what :meth:`prepare` holds (cached data); called once, also after a failure."""
        ...


def job_order(scenarios: list[Any], repetitions: int) -> list[tuple[int, Any]]:
    """(repetition, scenario) in the order the jobs run: repetition by repetition, each pass
    over the scenarios starting one further along (rep r starts at scenario r mod n).

    Why: a JVM's JIT keeps speeding up a Flink lane over its first million or so records, and a
    shared machine drifts. Run scenario by scenario, whichever strategy ran first on a fresh JVM
    came out 2-2.5x slower than the next on flink-heap (sessions-churn, value ops only: none
    3.5 M vs full_snapshot 8.2 M records/s, and 6.5 M vs 3.8 M with the order swapped), which is
    an artifact of order, not of the strategies. Interleaved and rotated, a slow start lands on
    one repetition of one scenario, and the medians over repetitions compare like with like.
    """
    n = len(scenarios)
    return [(rep, scenarios[(rep + i) % n]) for rep in range(repetitions) for i in range(n)]


def run(cfg: RunConfig, engine: Engine, on_job: JobCallback | None = None) -> RunOutcome:
    """Run every applicable scenario x repetition of ``cfg`` on ``engine``, one job each.

    ``on_job(scenario, repetition)`` is called after each job (progress bars)."""
    started = time.perf_counter()
    runnable, skipped = plan_scenarios(cfg)
    parts: list[pa.Table] = []
    job_seconds: dict[str, list[float]] = {}
    try:
        facts = engine.prepare(cfg)
        for rep, scenario in job_order(runnable, cfg.repetitions):
            op_cfg = operator_config(cfg, scenario, rep, facts)
            t0 = time.perf_counter()
            if is_sql_lane(scenario.backend):  # a whole SQL job of its own, on any engine
                parts.append(run_sql_scenario(cfg, op_cfg, facts))
            else:
                parts.append(engine.run_job(op_cfg))
            seconds = time.perf_counter() - t0
            job_seconds.setdefault(op_cfg.scenario.label, []).append(seconds)
            parts.append(job_rows(op_cfg.scenario, rep, facts.events, seconds))
            if on_job is not None:
                on_job(scenario, rep)
    finally:
        engine.release()
    parts.append(not_applicable_rows(cfg.run_id, cfg.spec.name,
                                     [(n.backend, n.strategy) for n in skipped]))
    raw = pa.concat_tables(parts)
    return RunOutcome(
        config=cfg,
        rows=finalize_rows(raw),
        not_applicable=skipped,
        facts=facts,
        engine=engine.name,
        duration_s=time.perf_counter() - started,
        retried_attempts={k: v for k, v in attempts(raw).items() if v},
        job_seconds=job_seconds,
    )
