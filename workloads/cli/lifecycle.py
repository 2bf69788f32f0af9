"""The end of a command that ran work: nothing it started outlives it, success or not.

Why this exists: a task's folders belong to the process that runs the task. Inside Spark that is
a Python worker forked by pyspark's daemon, which keeps it (and its idle Flink JVM, see
``workloads/lanes/flink_task.py``) for the next task and ends it with SIGHUP when the context
stops, so no ``atexit`` or ``finally`` of the worker runs: its folders stayed in the temp dir
after every successful Spark run with a Flink lane. The same holds for this process's own idle
Flink JVM. So when a command ends (normally, with an error, or interrupted), :func:`command_scope`

1. closes this process's idle Flink workers (their JVMs and folders),
2. stops the Spark context if the command started it (a host program's or a test's session is
   left alone), which ends pyspark's workers, and waits for the ones that own folders,
3. removes again this process's folders that tasks were still writing into when they were
   first removed (the checkpoint root of a cancelled job), and sweeps the temp dir and the
   command's other roots: the folders of owners that are now gone (``workloads.run.run_tempdirs``:
   only dead owners' folders, never another run's live ones).

Only then does the CLI say "temporary folders removed".
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psutil

from workloads.run import run_tempdirs

#: Seconds pyspark's workers get to end after the context stopped (they are sent SIGHUP).
WORKER_EXIT_S = 20.0


def spark_active() -> bool:
    """Whether this process has a SparkContext that finished starting (never imports pyspark
    itself). One still starting (a master that never registers it, abandoned on a helper
    thread by ``engines.spark``) is left to end with the process."""
    if "pyspark" not in sys.modules:
        return False
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    return context is not None and getattr(context, "_jsc", None) is not None


def _owning_children(roots: list[str | Path | None]) -> list[psutil.Process]:
    """This process's descendants that own tagged folders under ``roots``, and what those
    started (a Flink worker's JVM still writes checkpoints while it shuts down)."""
    owners = run_tempdirs.owners_of(roots)
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return []
    found = {p.pid: p for p in children if p.pid in owners}
    for proc in list(found.values()):
        try:
            found.update({c.pid: c for c in proc.children(recursive=True)})
        except psutil.Error:
            continue
    return list(found.values())


def _stop_spark(roots: list[str | Path | None]) -> None:
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None or getattr(context, "_jsc", None) is None:
        return
    owners = _owning_children(roots)
    with suppress(Exception):  # a context that is already failing still stops its workers
        context.stop()
    psutil.wait_procs(owners, timeout=WORKER_EXIT_S)


def finish(roots: Iterable[str | Path | None], stop_spark: bool) -> None:
    """Steps 1-3 of the module docstring."""
    roots = [None, *roots]
    lane = sys.modules.get("workloads.lanes.flink_task")
    if lane is not None:
        lane.close_idle_workers()
    if stop_spark and spark_active():
        _stop_spark(roots)
    for _ in range(10):  # folders tasks were still writing into when they were removed
        if not run_tempdirs.retry_removals():
            break
        time.sleep(0.5)
    run_tempdirs.sweep(roots)


def signal_cause(exc: BaseException) -> BaseException | None:
    """The KeyboardInterrupt (SIGINT) or :class:`~workloads.run.run_tempdirs.Terminated`
    (SIGTERM) that ``exc`` is, or was raised while handling, else None: the signal cancels the
    running Spark jobs, and the job's "cancelled" error (or the collect's clean-up failing
    with a Java stack) then replaces the signal that caused it."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt | run_tempdirs.Terminated):
            return current
        seen.add(id(current))
        current = current.__context__
    return None


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was raised while handling, a KeyboardInterrupt (SIGINT)."""
    return isinstance(signal_cause(exc), KeyboardInterrupt)


@contextmanager
def command_scope(*roots: str | Path | None) -> Iterator[None]:
    """Run a command's work; on the way out, however it leaves, :func:`finish` (stopping Spark
    only if no context existed when the scope began). An error that a signal caused leaves
    as the signal (exit 130 or 143, one line), not as the error."""
    started_here = not spark_active()
    try:
        yield
    except Exception as exc:
        cause = signal_cause(exc)
        if isinstance(cause, KeyboardInterrupt):
            raise KeyboardInterrupt from exc
        if cause is not None:
            raise run_tempdirs.Terminated() from exc
        raise
    finally:
        finish(roots, stop_spark=started_here and spark_active())
