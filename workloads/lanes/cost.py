"""What one job of a lane costs in wall time and disk, estimated before any event is made.

Why each lane answers for itself (:meth:`workloads.lanes.base.Lane.job_cost`): a lane knows
whether it paces its records on the wall clock (every lane under a ProcessingTime spec; the
flink-sql and spark-tws jobs always, as their TTL runs on processing time), what a job of it
costs beyond its records (a JVM, a streaming query's start), how fast it gets through records
and which files it writes. ``workloads.run.estimate`` adds the jobs of a run up; a table of lane
names there would be one more place to change with every lane.

The rates are conservative: the slowest whole job (input made, records processed, checkpoints
and samples taken, divided into the events) of the shipped specs on a loaded 2-core machine,
kept beside each lane (docs/guide.md, "The estimate's rates", has the measurements). A job at
the shipped specs' rates takes at most about that long; on a quiet machine and for light specs
it takes up to a few times less.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Records a task lane's job gets through per wall second and task slot, when the lane sets no
#: rate of its own: the slowest shipped workload on statebench's and Flink's lanes (nexmark-q20
#: on heap with incremental cleanup: 29.8 k records/s in-process, 2 tasks one after the other).
DEFAULT_RECORDS_PER_S = 30_000.0
#: Bytes of values a job gets through per wall second, beyond its records: the values are made,
#: hashed or copied and written, so a spec of 64 MiB values is not estimated at its record rate
#: (memory runs at a few GB/s here; a conservative fraction of that).
VALUE_BYTES_PER_S = 200e6
#: Rows a job adds to the results, and bytes a row takes in rows.parquet: state samples (10 by
#: default) x metrics x tasks, checkpoints and the summary, generously (ycsb-a's 7 jobs wrote
#: 2,302 rows at 100 k events); tens of bytes a row, compressed.
RESULT_ROWS_PER_JOB = 1_000
RESULT_ROW_BYTES = 40.0


@dataclass(frozen=True)
class JobLoad:
    """What every job of one run holds, as the estimate sees it before any event is made."""

    #: events of the run's input (every job reads all of them)
    events: int
    #: the span of the input's logical time (ms); None: a trace whose span is not known
    span_ms: int | None
    #: tasks the run's engine runs at once (1 in-process, the cores of ``local[*]``)
    slots: int
    #: mean bytes of an event's value (0 for ``long`` values)
    value_bytes: float = 8.0


@dataclass(frozen=True)
class JobCost:
    """About what one job costs: its wall time, the least of it spent pacing records on the
    wall clock (0: not paced), the most bytes of files it holds at once in the run's temporary
    folder (input files; the state's own size is ``workloads.cli.checks.disk_warning``'s) and
    the rows it adds to the results."""

    wall_s: float
    paced_s: float = 0.0
    disk_bytes: float = 0.0
    result_rows: int = RESULT_ROWS_PER_JOB


def paced_span_s(span_ms: int | None, speedup: float) -> float:
    """Wall seconds a job releasing records over ``span_ms`` at ``speedup`` takes at least."""
    return 0.0 if not span_ms else span_ms / speedup / 1000.0


def values_s(load: JobLoad) -> float:
    """Wall seconds a job spends on its values' bytes (:data:`VALUE_BYTES_PER_S`)."""
    return load.events * load.value_bytes / VALUE_BYTES_PER_S


def task_job_cost(load: JobLoad, parallelism: int, records_per_s: float, start_s: float,
                  paced_s: float) -> JobCost:
    """A task lane's job: ``parallelism`` tasks on ``load.slots`` slots, each reading its share
    of the events at ``records_per_s``; a paced task takes its whole span (each task's clock
    starts with the task), so tasks that wait for a slot add a span each."""
    concurrent = max(1, min(parallelism, load.slots))
    waves = math.ceil(parallelism / concurrent)
    busy = (load.events / records_per_s + values_s(load)) / concurrent
    paced = paced_s * waves
    return JobCost(start_s + max(busy, paced), paced_s=paced)


def job_lane_cost(load: JobLoad, records_per_s: float, start_s: float,
                  paced_s: float) -> JobCost:
    """A job lane's job (one Flink SQL job, one Spark query): its start, then its records at
    ``records_per_s`` or its paced span, whichever is longer (a paced job that cannot keep up
    falls behind its clock)."""
    busy = load.events / records_per_s + values_s(load)
    return JobCost(start_s + max(busy, paced_s), paced_s=paced_s)
