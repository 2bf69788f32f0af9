"""Which errors of a job are the job's own failure, and the engine's words for it in one line.

Why: a run's job calls into an engine (a Spark streaming query, a Flink SQL job's JVM, a Flink
worker, RocksDB) and what the engine raises arrives wrapped: a spark-sql query that Spark
refused reached the user as two chained tracebacks (68 lines) of a py4j error around a
``StreamingQueryException`` around Spark's ``[DATETIME_OVERFLOW]``; rocksdict raises a bare
``Exception``. And it ended the run, losing the lanes that would have run after it.

The runner (``workloads.run.runner``) asks :func:`job_failure` about anything a job raises:

* a signal (SIGINT, SIGTERM), or an error a signal caused (the Spark job it broke off), stops
  the run as before;
* statebench's own refusals (a bad spec or trace, a plan that cannot run, a Spark master that
  does not answer: the CLI's usage errors), its checks of a job's answers and input
  (``workloads.run.task_checks``: an expired value returned is a backend's bug, which fails
  the run loudly, as it always did) and the environment's (an ``OSError``: a full disk,
  a folder made read-only, also when a Flink JVM reports it) stop the run too: every later job
  would meet them again, and the CLI already says them in one line (exit 2);
* anything else is the job's failure: a :class:`~workloads.errors.LaneJobError` naming the
  lane, the scenario and the round, with :func:`engine_message` (the engine's root cause in
  one line) and the engine's error as its ``__cause__``. The runner records it and goes on.
"""

from __future__ import annotations

import os
import re
import sys
import traceback

from workloads.errors import InfrastructureError, LaneJobError

#: How long the engine's message may be in one line (a Spark error class's text is ~300).
MAX_MESSAGE_CHARS = 400
#: Builtin types whose name says nothing the message does not (rocksdict raises ``Exception``).
_PLAIN = (Exception, RuntimeError)
#: A Java exception line: ``org.apache.spark.SparkDateTimeException: [DATETIME_OVERFLOW] ...``
_JAVA = re.compile(r"^(?:Caused by: )?(?P<type>(?:[a-z_$][\w$]*\.)+[A-Z][\w$]*)"
                   r"(?::\s*(?P<msg>.*))?$")
#: A Python exception's last line in a traceback (a Spark Python worker's).
_PYTHON = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit)): (?P<msg>.*)$")
#: Spark's wrapper around a streaming query's failure, before the cause's own text.
_STREAM_FAILED = re.compile(r"\[STREAM_FAILED\] Query \[[^\]]*\] terminated with exception: ")
#: The wrapper's error class's SQLSTATE, left at the end of the cause's text.
_WRAPPER_STATE = re.compile(r"\s*SQLSTATE: XXKST$")
#: A Spark job aborted by a failed task: the task's error is what happened.
_STAGE_FAILURE = re.compile(r"^Job aborted due to stage failure: .*?most recent failure: Lost "
                            r"task [\d.]+ in stage (?P<stage>[\d.]+) \(TID \d+\) \([^)]*\): "
                            r"(?P<cause>.+)$")


def stops_the_run(exc: BaseException) -> bool:
    """Whether ``exc`` is not one job's failure but stops the whole run (module docstring)."""
    from workloads.cli.lifecycle import signal_cause
    from workloads.generator import TraceError
    from workloads.run.plan import PlanError
    from workloads.spec import SpecError

    if not isinstance(exc, Exception) or signal_cause(exc) is not None:
        return True  # a signal, or an error it caused (the Spark job it broke off)
    if isinstance(exc, SpecError | TraceError | PlanError | InfrastructureError | LaneJobError):
        return True
    from backends.flink.errors import FlinkUnavailableError
    from workloads.run.task_checks import ExpiredValueReturned, OutOfOrderInput

    if isinstance(exc, ExpiredValueReturned | OutOfOrderInput | FlinkUnavailableError):
        return True  # statebench's checks of an answer or its input (a bug), Flink not there
    if isinstance(exc, OSError) and not isinstance(exc, ConnectionError):
        return True  # the environment's (a JVM that went away is the engine's: ConnectionError)
    from backends.flink.errors import FlinkWorkerError

    if isinstance(exc, FlinkWorkerError):  # a folder Flink could not write is the environment's
        from workloads.cli.display import flink_summary

        return flink_summary(str(exc)).startswith("Flink could not write into ")
    spark = sys.modules.get("workloads.run.engines.spark")  # never imported just for this
    return spark is not None and isinstance(exc, spark.TaskError) and exc.own


def job_failure(exc: BaseException, backend: str, strategy: str, workload: str,
                round_index: int) -> LaneJobError | None:
    """The :class:`LaneJobError` that ``exc``, raised by a job of scenario ``backend`` x
    ``strategy`` in round ``round_index``, stands for; None when it stops the run instead."""
    if stops_the_run(exc):
        return None
    error = LaneJobError(backend, strategy, workload, round_index, engine_message(exc))
    error.__cause__ = exc
    return error


def engine_message(exc: BaseException) -> str:
    """The engine's own account of ``exc`` in one line: Spark's root cause (not its
    ``STREAM_FAILED`` or py4j wrapper), a Java stack's deepest ``Caused by``, a Flink worker's
    cause, else the error's first line (with its type where the type says something)."""
    from backends.flink.errors import FlinkWorkerError

    spark = sys.modules.get("workloads.run.engines.spark")
    if spark is not None and isinstance(exc, spark.TaskError):
        return _clip(str(exc))  # a Spark task's error, already found in Spark's text
    from workloads.run.engines.spark_session import SparkGoneError

    if isinstance(exc, SparkGoneError):  # says it all; its cause is py4j's refused connection
        return _clip(str(exc))
    chain = _causes(exc)
    if any(jvm_link_lost(error) for error in chain):
        return _clip(f"Spark's JVM went away (it ran out of memory, or was killed): "
                     f"{_first_line(exc)}")
    for error in chain:
        if isinstance(error, FlinkWorkerError):
            from workloads.cli.display import flink_summary

            return _clip(flink_summary(str(error)))
    for error in chain:  # the outermost Spark error: its own chain of causes is complete
        if _is_spark(error):
            return _clip(_spark_message(error))
    return _clip(_first_line(exc))


def _causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and its ``__cause__`` chain (``raise ... from``), outermost first."""
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not e for e in out):
        out.append(current)
        current = current.__cause__
    return out


def jvm_link_lost(exc: BaseException) -> bool:
    """Whether ``exc`` is py4j losing Spark's JVM: a refused or broken connection raised
    through py4j's own code, or py4j's network error."""
    if type(exc).__name__ == "Py4JNetworkError":
        return True
    if not isinstance(exc, ConnectionError):
        return False
    frames = traceback.extract_tb(exc.__traceback__)
    return any(f"{os.sep}py4j{os.sep}" in frame.filename for frame in frames)


def _is_spark(exc: BaseException) -> bool:
    return type(exc).__module__.startswith(("pyspark.", "py4j."))


def _spark_message(exc: BaseException) -> str:
    """A pyspark error's deepest cause (``cause``: pyspark's converted Java cause), or a py4j
    error's deepest ``Caused by`` line, without Spark's streaming wrapper."""
    deepest = exc
    seen = {id(exc)}
    while (cause := getattr(deepest, "cause", None)) is not None and id(cause) not in seen:
        if not isinstance(cause, BaseException):
            break
        seen.add(id(cause))
        deepest = cause
    text = str(getattr(deepest, "desc", None) or deepest).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if "Traceback (most recent call last)" in text:  # a Python worker's: the error line
        last = text.rsplit("Traceback (most recent call last)", 1)[1].splitlines()
        raised = next((m for m in (_PYTHON.match(line.strip()) for line in last)
                       if m is not None), None)
        if raised is not None:
            return (f"{raised['type'].rsplit('.', 1)[-1]} in Spark's Python worker: "
                    f"{raised['msg']}")
    java = [m for m in (_JAVA.match(line) for line in lines) if m is not None]
    caused = [m for m, line in zip(java, lines) if line.startswith("Caused by:")]
    if caused:  # a py4j error: the Java stack's deepest cause
        found = caused[-1]
        message = (found["msg"] or "").strip()
        line = message if message.startswith("[") else (
            f"{found['type'].rsplit('.', 1)[-1]}: {message}" if message else found["type"])
    else:
        line = lines[0] if lines else type(deepest).__name__
        found = _JAVA.match(line)
        if found is not None and found["msg"]:  # "java.lang.OutOfMemoryError: Java heap space"
            line = f"{found['type'].rsplit('.', 1)[-1]}: {found['msg']}"
    line = _STREAM_FAILED.sub("", line)
    return _WRAPPER_STATE.sub("", line).strip() or type(deepest).__name__


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    kind = type(exc)
    named = kind.__module__ == "builtins" and kind not in _PLAIN
    if not lines:
        return kind.__name__
    return f"{kind.__name__}: {lines[0]}" if named else lines[0]


def _clip(text: str) -> str:
    """One line of at most :data:`MAX_MESSAGE_CHARS`, without Spark's wrappers (a streaming
    query's ``STREAM_FAILED``, a job aborted by a task: the task's error, its Java type
    shortened)."""
    flat = _WRAPPER_STATE.sub("", _STREAM_FAILED.sub("", " ".join(text.split())))
    if flat.endswith("because SparkContext was shut down"):  # Spark's words say no more
        flat += " (Spark shut it down: its JVM ran out of memory, or was killed)"
    aborted = _STAGE_FAILURE.match(flat)
    if aborted is not None:
        cause = aborted["cause"]
        java = _JAVA.match(cause)
        if java is not None and java["msg"]:
            cause = f"{java['type'].rsplit('.', 1)[-1]}: {java['msg']}"
        flat = f"{cause} (in a task of Spark's stage {aborted['stage']})"
    return flat if len(flat) <= MAX_MESSAGE_CHARS else flat[:MAX_MESSAGE_CHARS - 3] + "..."
