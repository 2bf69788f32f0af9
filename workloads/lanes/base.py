"""What a lane is: one way of running a scenario (statebench's own backends, one of Flink's
backends driven op by op, a real Flink SQL job, a Spark Structured Streaming query), behind one
small interface, so that the planner, the runner and the report ask every lane the same
questions and adding a lane is adding a module (registered in ``workloads.lanes``).

Why one object per lane: whether a lane can run a scenario used to be decided in five places
(the planner, the task factory, the Flink lanes' and the SQL lanes' modules, the operator
package), and a reader following one comparison visited all of them. A lane now answers, in one
place, whether it runs a spec and each strategy of it (and why not), what must be true before
any work, and how it runs one job.

Two ways to run a job:

* a *task lane* (``runs_tasks``) is fed each task's keyed events batch by batch by whichever
  engine the run uses (in-process or Spark executors): :meth:`Lane.task_operator` makes the
  operator of one task;
* a *job lane* runs a whole scenario x repetition itself (a Flink SQL job reading its own
  source, a Spark streaming query): :meth:`Lane.run_job` returns the job's metric rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from backends.strategies import strategy
from workloads.lanes.cost import (
    DEFAULT_RECORDS_PER_S,
    JobCost,
    JobLoad,
    paced_span_s,
    task_job_cost,
)
from workloads.run.config import DataFacts, OperatorConfig, paced
from workloads.spec import WorkloadSpec

#: The engines lanes belong to. The report's decision table treats each engine's lanes apart.
ENGINES = ("statebench", "flink", "flink-sql", "spark")
STATEBENCH, FLINK, FLINK_SQL, SPARK = ENGINES
#: The engines whose lanes run on Flink's jars in a JVM (the flink extra and a JDK 17), and
#: write their checkpoints as local files (Flink's FsCheckpointStreamFactory on a folder).
FLINK_ENGINES = frozenset({FLINK, FLINK_SQL})


@dataclass(frozen=True)
class EngineTitle:
    """How the report and the CLI name an engine (``title``: "Spark's lanes") and what its
    lanes are, in a few words (``lanes``: why its numbers are not ranked against another
    engine's)."""

    title: str
    lanes: str
    #: why every counted number of its lanes is timing-dependent ("" when nothing about the
    #: engine makes it so): a real engine job's TTL and checkpoints run on the wall clock
    timing: str = ""
    #: whether its lanes count what each cleanup mechanism removed (``cleanup_removed_*``)
    counts_removals: bool = True
    #: why the report leaves its lanes out of the cleanup-lag table ("": it measures the lag;
    #: None: a generic sentence)
    lag_note: str | None = None


_FLINK_LAG_NOTE = ("Flink's lanes are left out: Flink's backends count neither removals nor "
                   "their lag.")
#: Every engine of :data:`ENGINES` by name: the one place a sentence takes an engine's name
#: from (never from a lane's name).
ENGINE_TITLES: Mapping[str, EngineTitle] = {
    "statebench": EngineTitle("statebench", "Python lanes", lag_note=""),
    "flink": EngineTitle("Flink", "JVM keyed-state backends", counts_removals=False,
                         lag_note=_FLINK_LAG_NOTE),
    "flink-sql": EngineTitle("Flink SQL", "real jobs",
                             "a real Flink SQL job: its TTL, watermarks and checkpoints run on "
                             "the paced wall clock", counts_removals=False,
                             lag_note=_FLINK_LAG_NOTE),
    "spark": EngineTitle("Spark", "Structured Streaming queries",
                         "a real Spark streaming query: its micro-batches, state store "
                         "maintenance and TTL run on the wall clock",
                         lag_note="Spark's lanes are left out: Spark reports what its TTL "
                                  "removed per micro-batch (its own rows), not each removal's "
                                  "lag."),
}


class RunView(Protocol):
    """What a lane reads of a run (``workloads.run.plan.RunConfig`` is one): lanes never import
    the planner, which imports them."""

    spec: WorkloadSpec
    backends: tuple[str, ...]
    parallelism: int
    batch_size: int
    run_id: str
    checkpoint_root: str | None
    local_dir: str | None
    measure_latency: bool

    @property
    def strategy_labels(self) -> tuple[str, ...]: ...

    @property
    def speedup(self) -> float: ...

    @property
    def partitions(self) -> int: ...

    @property
    def planned_rocksdb_options(self) -> dict[str, Any]: ...

    def cleanup_of(self, label: str) -> str: ...

    def ttl_of(self, label: str) -> int | None: ...

    def ttl_sweep_of(self, label: str) -> int | None: ...


class TaskOperator(Protocol):
    """What runs one task's events: fed its batches in time order, then asked for its rows."""

    def process(self, batch: pa.RecordBatch) -> None: ...

    def finish(self) -> list[Any]: ...

    def close(self) -> None: ...


class Lane:
    """One lane. Subclasses set the class attributes and override what their lane does."""

    #: the backend name a run gives (``--backend``)
    name: str = ""
    #: one of :data:`ENGINES`
    engine: str = ""
    #: one line for the docs and ``--help``: what this lane runs
    summary: str = ""
    #: whether the engine feeds it tasks (:meth:`task_operator`) or it runs whole jobs
    #: (:meth:`run_job`)
    runs_tasks: bool = True
    #: whether its jobs run in a process kept from one job to the next whose speed depends on
    #: what ran before (a kept JVM's JIT): a comparison runs one unmeasured warm-up round first
    keeps_state: bool = False
    #: strategies this lane adds to a run that names none (its own, beside the spec's)
    own_strategies: tuple[str, ...] = ()
    #: metric -> its class ("exact", "timing-dependent" or "timed") where this lane's class
    #: differs from the report's default for that metric
    metric_classes: Mapping[str, str] = {}
    #: what the report may assume of this lane's numbers (``workloads.report.metrics``): its
    #: files move with background flushes and compactions (RocksDB's), its physical sizes with
    #: copy-on-write during asynchronous snapshots (statebench's heap), its checkpoints follow
    #: its file layout in full mode too (Flink's RocksDB)
    background_compactions: bool = False
    copy_on_write_sizes: bool = False
    layout_checkpoints: bool = False
    #: whether, under an EventTime spec, its per-record latency (``latency_*_us``) measures how
    #: far its job fell behind its paced clock rather than the engine: a job run in lockstep so
    #: that its TTL clock follows the records' time (the Flink SQL job's ``SqlJob.Lockstep``,
    #: docs/operators.md "What it costs") queues every record behind the one before, so a job
    #: that cannot keep up falls further behind and its percentiles grow with that. The report
    #: marks such numbers and ranks them against no other lane's (``workloads.report.metrics``)
    event_time_lockstep: bool = False

    def cleanup_of(self, run: RunView, label: str) -> str:
        """The cleanup scenario ``label`` configures on this lane: the run's (a TTL sweep's
        ``timer``), unless :meth:`ttl_sweep_cleanup` names the lane's own for a TTL sweep."""
        if run.ttl_sweep_of(label) is not None:
            own = self.ttl_sweep_cleanup()
            if own is not None:
                return own
        return run.cleanup_of(label)

    def ttl_sweep_cleanup(self) -> str | None:
        """The cleanup a TTL sweep's scenarios run on this lane when not the run's ``timer``
        (an engine without timer cleanup runs its default; None: the run's)."""
        return None

    def spec_reason(self, run: RunView) -> str | None:
        """Why this lane cannot run ``run``'s spec at all (None: it can)."""
        return None

    def strategy_reason(self, run: RunView, label: str) -> str | None:
        """Why this lane cannot run scenario ``label`` of ``run`` (None: it can). Called only
        when :meth:`spec_reason` is None."""
        return None

    def check(self, run: RunView) -> str | None:
        """What must be true before any work and is not (the extra's jars, a JDK, settings,
        numbers the lane cannot carry), in one line; None when the run may start."""
        return None

    def task_operator(self, cfg: OperatorConfig, task: int, attempt: int,
                      attempt_id: int | None) -> TaskOperator:
        """The operator of one task (task lanes)."""
        raise NotImplementedError(f"lane '{self.name}' runs whole jobs, not tasks")

    def run_job(self, run: RunView, cfg: OperatorConfig, facts: DataFacts) -> pa.Table:
        """One scenario x repetition, run whole (job lanes): its rows (METRIC_SCHEMA)."""
        raise NotImplementedError(f"lane '{self.name}' is fed tasks by the run's engine")

    def rocksdb_options(self, run: RunView) -> tuple[tuple[str, Any], ...]:
        """The RocksDB options (sorted name, value pairs) a job of this lane runs with; () for
        a lane that reads no [rocksdb] table."""
        return ()

    def engine_configuration(self, run: RunView) -> dict[str, Any]:
        """What run.json records of this lane's engine configuration (its key -> the
        settings), e.g. Flink's RocksDB keys; {} when nothing beyond the spec."""
        return {}

    def release(self) -> None:
        """Free what this lane holds across a run's jobs (a session, a JVM); called once when
        the run ends, also after a failure."""

    # ---------------------------------------------------------------- what a job costs
    #: records a job gets through per wall second and task slot, for key-value specs and for
    #: ``[operator]`` specs (conservative; ``workloads.lanes.cost`` says how they were measured)
    records_per_s: float = DEFAULT_RECORDS_PER_S
    operator_records_per_s: float = DEFAULT_RECORDS_PER_S
    #: wall seconds every job costs beyond its records (a JVM, a streaming query's start)
    job_start_s: float = 0.5

    def paces(self, run: RunView) -> bool:
        """Whether a job releases its records on the wall clock, so that it takes at least the
        input's span over the speed-up: every lane under a ProcessingTime spec."""
        return paced(run.spec.state.time_characteristic)

    def job_cost(self, run: RunView, load: JobLoad, label: str) -> JobCost:
        """About what one job of scenario ``label`` costs (``workloads.run.estimate`` sums a
        run's jobs before any event is made): a task lane's by default."""
        rate = self.records_per_s if run.spec.operator is None else self.operator_records_per_s
        paced_s = paced_span_s(load.span_ms, run.speedup) if self.paces(run) else 0.0
        return task_job_cost(load, run.parallelism, rate, self.job_start_s, paced_s)


def strategy_engine(name: str) -> str | None:
    """The engine a strategy belongs to alone (None: Flink's TTL cleanup, shared): the
    strategy registry's (``backends.strategies``)."""
    return strategy(name).engine


def foreign_strategy_reason(engine: str, name: str) -> str | None:
    """Why a lane of ``engine`` cannot run strategy ``name`` that is another engine's own
    (Spark's ``spark_ttl`` on a Flink lane), else None."""
    return strategy(name).foreign_reason(engine)
