"""Errors from the environment a run needs, as opposed to errors in its input.

A Spark master that cannot be reached, a checkpoint URI whose filesystem does not exist or does
not answer, a folder that cannot be written: the user can fix these, but not by editing the
spec. They are raised as :class:`InfrastructureError` with one message that names the cause and
what to check; the CLI prints that line (the full trace only with ``--verbose``).

A job that fails inside its engine is another matter: the input and the environment may be
fine, and only one lane cannot run one scenario. It is a :class:`LaneJobError` naming the lane,
the scenario and the engine's own words; the run goes on with the others and ends with
:class:`JobsFailed` (``workloads.run.job_errors`` decides which errors are a job's).
"""

from __future__ import annotations

from typing import Any


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message, or its type's name when it has none: what a one-line
    error quotes of a library's (a pyarrow, Spark or filesystem error runs over many lines)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class InfrastructureError(RuntimeError):
    """Something outside the input is unusable; the message says what and what to check."""


class LaneJobError(RuntimeError):
    """One job (a scenario in one round) that failed inside its engine: Spark, Flink, a Flink
    worker's JVM, RocksDB, or a lane's own code around them.

    Why a type of its own: an engine's error arrives in the engine's terms (a py4j wrapper
    around a streaming query's failure around Spark's error class, a Java stack of 70 lines, a
    bare ``Exception`` from rocksdict) and says nothing of which lane and scenario ran into it.
    This one says both, in one line, with the engine's own words (its root cause, not the
    wrapper's): ``spark-sql spark_watermark (round 0): [DATETIME_OVERFLOW] ...``. The engine's
    error is the ``__cause__``, so ``--verbose`` prints its whole stack. The runner records it
    for the scenario and goes on with the others (``workloads.run.runner``)."""

    def __init__(self, backend: str, strategy: str, workload: str, round_index: int,
                 message: str) -> None:
        self.backend, self.strategy, self.workload = backend, strategy, workload
        self.round, self.message = round_index, message
        super().__init__(f"{backend} {strategy} ({self.where()}): {message}")

    def __reduce__(self) -> tuple[Any, ...]:  # picklable (a process pool, a regress worker)
        return (type(self), (self.backend, self.strategy, self.workload, self.round,
                             self.message))

    def where(self, workload: bool = False) -> str:
        """"round 2" or "warm-up round" (runner.WARMUP_ROUND is -1), after the workload's
        name when ``workload`` (a comparison runs several)."""
        when = "warm-up round" if self.round < 0 else f"round {self.round}"
        return f"{self.workload}, {when}" if workload else when

    def line(self, workload: bool = False) -> str:
        """The one line the CLI prints (``workload``: name the workload too)."""
        return f"{self.backend} {self.strategy} ({self.where(workload)}): {self.message}"


class JobsFailed(RuntimeError):
    """A run (or comparison) that went through its plan while some of its jobs failed in their
    engine: every :class:`LaneJobError` (in the order they happened) and what the run made of
    the rest (``outcomes``: one :class:`~workloads.run.plan.RunOutcome` per workload, each
    marked incomplete where a scenario failed). Raised once every other job ran, so that a
    caller that does not look cannot take the run for complete; the run folder (written as
    the run goes) already holds the outcomes."""

    def __init__(self, failures: list[LaneJobError], outcomes: list[Any]) -> None:
        self.failures, self.outcomes = list(failures), list(outcomes)
        first = self.failures[0] if self.failures else None
        more = f" (and {len(self.failures) - 1} more)" if len(self.failures) > 1 else ""
        super().__init__(f"{first}{more}" if first is not None else "no job failed")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.failures, self.outcomes))


#: The attribute :func:`note_failures` sets on an error that stopped a run.
FAILED_JOBS = "statebench_failed_jobs"


def note_failures(exc: BaseException, failures: list[LaneJobError]) -> None:
    """Keep on ``exc`` (an error that stopped a run: a signal, a usage or environment error)
    the jobs that failed before it, so that the CLI says them too and not only what stopped
    the run (a Spark JVM that died in one job left the next job "unable to start Spark")."""
    if failures and not isinstance(exc, JobsFailed):  # ``failures`` came first
        later = [f for f in getattr(exc, FAILED_JOBS, ()) if f not in failures]
        setattr(exc, FAILED_JOBS, [*failures, *later])


def failures_noted(exc: BaseException) -> list[LaneJobError]:
    """The failed jobs :func:`note_failures` kept on ``exc``, or on the error it was raised
    from or while handling (the CLI turns a Spark error a signal caused into the signal)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        found = getattr(current, FAILED_JOBS, None)
        if found:
            return list(found)
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return []
