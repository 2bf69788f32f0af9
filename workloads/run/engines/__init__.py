"""Where a run's tasks execute: inside Spark executors or in this process (one loop over both)."""

from __future__ import annotations

from workloads.run.runner import Engine


def make_engine(in_process: bool, master: str | None = None) -> Engine:
    """The in-process engine, or a Spark engine on this process's session for ``master`` (see
    :func:`workloads.run.engines.spark.get_session`; pyspark is imported only then)."""
    if in_process:
        from workloads.run.engines.inprocess import InProcessEngine

        return InProcessEngine()
    from workloads.run.engines.spark import SparkEngine, get_session

    return SparkEngine(get_session(master))
