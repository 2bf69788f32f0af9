"""How far a running Spark job is, for the progress line: Spark's status tracker polled on a
thread of its own while the job runs.

Why the tracker: a Spark task reports nothing to the driver until it ends (accumulators merge
at a task's end), so the driver cannot count records as the in-process engine does. What it can
see is how many of the job's tasks have completed, stage by stage. The share of completed tasks
stands for the share of records read: a job's tasks are the run's operator tasks, whose record
counts the plan knows and keys spread evenly (``DataFacts.task_counts``); the share is reported
in records so the progress line reads the same on both engines.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

#: Seconds between two looks at the tracker.
POLL_S = 0.5
_GROUPS = itertools.count()


def completed_share(tracker: Any, group: str) -> float | None:
    """Completed tasks over all tasks of the group's jobs' stages (None: none known yet)."""
    done = total = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        for stage_id in job.stageIds if job is not None else ():
            stage = tracker.getStageInfo(stage_id)
            if stage is not None:
                done += stage.numCompletedTasks
                total += stage.numTasks
    return done / total if total else None


@contextmanager
def tracked(context: Any, records: int,
            report: Callable[[int, int], None] | None) -> Iterator[None]:
    """Run the body's Spark job in a job group of its own and, while it runs, ``report(records
    read, records of the job)`` every :data:`POLL_S` from the tracker (nothing when ``report``
    is None)."""
    if report is None:
        yield
        return
    group = f"statebench-job-{next(_GROUPS)}"
    context.setJobGroup(group, "statebench job")
    stop = threading.Event()
    tracker = context.statusTracker()

    def poll() -> None:
        last = -1.0
        while not stop.wait(POLL_S):
            share = completed_share(tracker, group)
            if share is not None and share != last:
                last = share
                report(int(share * records), records)

    thread = threading.Thread(target=poll, name="statebench-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
