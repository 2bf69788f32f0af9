"""Module setup the Flink lane tests share: the worker built (or the module skipped where the
oracle is not required, failed where it is), a short JIT warm-up, and no JVM left behind by the
lanes' pools afterwards."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from backends.flink import FlinkUnavailableError
from backends.flink.build import ensure_worker_built
from tests.flink.conftest import fail_or_skip
from workloads.lanes.flink_operator_task import close_idle_operator_workers
from workloads.lanes.flink_task import WARMUP_ENV, close_idle_workers

#: The lanes' JIT warm-up in tests, which measure no speed (Spark's Python workers inherit it)
TEST_WARMUP_EVENTS = "4000"


@contextmanager
def lane_session(warmup: str | None = TEST_WARMUP_EVENTS) -> Iterator[None]:
    """Around a test module that runs the Flink lanes: the worker built, else the module fails
    where the session must run Flink (the `flink` extra installed, or STATEBENCH_REQUIRE_FLINK)
    and is skipped elsewhere (``conftest.fail_or_skip``); ``WARMUP_ENV`` set to ``warmup``
    meanwhile (None: left as it is); afterwards the JVMs the lanes keep between tasks closed."""
    try:
        ensure_worker_built()
    except FlinkUnavailableError as exc:
        fail_or_skip("the Flink lanes", exc)
    saved = os.environ.get(WARMUP_ENV)
    if warmup is not None:
        os.environ[WARMUP_ENV] = warmup
    try:
        yield
    finally:
        close_idle_operator_workers()
        close_idle_workers()
        if saved is None:
            os.environ.pop(WARMUP_ENV, None)
        else:
            os.environ[WARMUP_ENV] = saved


def per_task(rows: Any, scenario: str, metric: str) -> dict[tuple[int, int], float]:
    """One scenario's rows of ``metric`` (a run's metric table), by (task, step)."""
    return {(r["task"], r["step"]): r["value"] for r in rows.to_pylist()
            if r["scenario"] == scenario and r["metric"] == metric}


def events_csv(root: Path, kind: str, spec: Any) -> tuple[Path, int]:
    """``spec``'s events in time order as a SQL job reads them, ``root/<kind>.csv``, and how
    many there are."""
    from backends.flink.sql_job import write_events_csv
    from workloads.lanes.flink_sql_job import events_in_time_order

    events = root / f"{kind}.csv"
    return events, write_events_csv(events_in_time_order(spec), events)
