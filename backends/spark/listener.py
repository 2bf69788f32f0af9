"""Every batch of a streaming query as Spark reports it: a ``StreamingQueryListener`` on the
session's ``streams``, the record both Spark lanes read their per-batch numbers from.

Why a listener and not ``query.recentProgress``: the listener is Spark's own channel for a
query's progress (what a Spark user's monitoring reads); it gets every batch the query ran,
the ones that end while the driver is busy elsewhere or while the query stops included, and
ends with the query's termination event, after which no batch of it can follow.
``recentProgress`` is a bounded ring buffer polled by the driver. The listener bus delivers
events asynchronously: :meth:`ProgressRecorder.wait_terminated` waits for the termination
event, so that what is read after a query's stop is its whole run.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

try:  # a plain object where pyspark is missing (the lanes' check() says so first)
    from pyspark.sql.streaming import StreamingQueryListener
except ImportError:  # pragma: no cover - pyspark is a core dependency
    StreamingQueryListener = object  # type: ignore[assignment,misc]


class ProgressRecorder(StreamingQueryListener):  # type: ignore[misc]
    """Records the progress of every batch of the queries named ``name`` (or of every query
    when ``name`` is None), as plain dicts (``StreamingQueryProgress.json`` parsed), keyed by
    run id and batch id.

    A query's name is how a caller knows its query before it starts (the listener may see the
    start event before ``start()`` returns); a query is told apart from an earlier one of the
    same name by its run id (:meth:`batches`)."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__()
        self.name = name
        self._lock = threading.Condition()
        self._runs: dict[str, str | None] = {}  # run id -> query name
        self._progress: dict[str, dict[int, dict[str, Any]]] = {}
        self._terminated: dict[str, str | None] = {}  # run id -> exception (None: clean stop)

    def _wanted(self, name: str | None) -> bool:
        return self.name is None or name == self.name

    def onQueryStarted(self, event: Any) -> None:
        with self._lock:
            if self._wanted(event.name):
                self._runs[str(event.runId)] = event.name
                self._lock.notify_all()

    def onQueryProgress(self, event: Any) -> None:
        progress = json.loads(event.progress.json)
        with self._lock:
            if not self._wanted(progress.get("name")):
                return
            run = str(progress["runId"])
            self._runs.setdefault(run, progress.get("name"))
            self._progress.setdefault(run, {})[int(progress["batchId"])] = progress
            self._lock.notify_all()

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        with self._lock:
            run = str(event.runId)
            if run in self._runs:
                self._terminated[run] = event.exception
                self._lock.notify_all()

    # ------------------------------------------------------------------ reading
    def batches(self, run_id: str) -> list[dict[str, Any]]:
        """The progress of every batch the query run ``run_id`` reported, in batch order
        (an idle trigger reports no progress event: only batches that ran are here)."""
        with self._lock:
            by_batch = dict(self._progress.get(run_id, {}))
        return [by_batch[b] for b in sorted(by_batch)]

    def count(self, run_id: str) -> int:
        with self._lock:
            return len(self._progress.get(run_id, {}))

    def wait_terminated(self, run_id: str, timeout_s: float = 30.0) -> bool:
        """Wait until the termination event of query run ``run_id`` arrived (every progress
        event of it came before: the listener bus delivers a query's events in order); False
        if it did not within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while run_id not in self._terminated:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
            return True


@contextmanager
def recording(spark: Any, name: str | None = None) -> Iterator[ProgressRecorder]:
    """A :class:`ProgressRecorder` registered on ``spark.streams`` for the block, removed
    after it in every case (a listener left registered would outlive the job and slow every
    later query's events)."""
    recorder = ProgressRecorder(name)
    spark.streams.addListener(recorder)
    try:
        yield recorder
    finally:
        with suppress(Exception):
            spark.streams.removeListener(recorder)


def custom_metric(progress: dict[str, Any], name: str) -> float:
    """A state operator custom metric of one batch, summed over the query's state
    operators (0 where no operator reports it)."""
    total = 0.0
    for op in progress.get("stateOperators") or []:
        value = (op.get("customMetrics") or {}).get(name)
        if isinstance(value, (int, float)):
            total += value
    return total


def operator_metric(progress: dict[str, Any], name: str) -> float:
    """A state operator's own metric (``numRowsTotal``, ``commitTimeMs``, ...) of one batch,
    summed over the query's state operators."""
    total = 0.0
    for op in progress.get("stateOperators") or []:
        value = op.get(name)
        if isinstance(value, (int, float)):
            total += value
    return total


def processing_ms(durations: list[int], carried_data: list[bool]) -> int:
    """The query's processing time, the one denominator of both Spark lanes' ``records_per_s``:
    Spark's ``triggerExecution`` summed over every batch from the first that carried data
    through the last that did. The batches without data between them count (their watermark
    evictions and TTL sweeps are what the state costs); a warm-up before the first and the
    drain after the last (batches that only wait for the TTL's final sweep, as many as the
    TTL's length asks) do not, so a longer TTL does not lower the rate by idling."""
    data = [i for i, carried in enumerate(carried_data) if carried]
    if not data:
        return 0
    return sum(durations[data[0]:data[-1] + 1])
