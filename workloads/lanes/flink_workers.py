"""The idle JVM workers the Flink lanes keep between tasks.

A JVM start costs about a second, more than a small task's work, so a lane keeps at most one
idle worker per process and hands it to the next task with a fresh backend (``reset()``). Each
lane family keeps a pool of its own (the key-value lane's JVMs carry its warm-up bookkeeping);
this module holds the one logic both use, so they cannot drift apart.
"""

from __future__ import annotations

import atexit
import threading
from typing import Any

from backends.flink import FlinkWorker
from backends.flink.worker import TASK_JVM_OPTIONS

TIMEOUT_S = 120.0  # per frame, beyond any pacing wait


class WorkerPool:
    """At most one idle FlinkWorker, reused by the next task; closed at exit."""

    def __init__(self, timeout_s: float = TIMEOUT_S) -> None:
        self.timeout_s = timeout_s
        self._idle: list[FlinkWorker] = []
        self._lock = threading.Lock()
        atexit.register(self.close_idle)

    def acquire(self, kind: str, **options: Any) -> FlinkWorker:
        """A worker with a fresh `kind` backend: the idle one reset, else a new JVM. A reset
        that fails closes the worker (it is not kept) and raises."""
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is None:
            return FlinkWorker(kind, timeout_s=self.timeout_s, java_options=TASK_JVM_OPTIONS,
                               **options)
        try:
            worker.reset(kind, **options)
        except BaseException:
            worker.close()
            raise
        return worker

    def give_back(self, worker: FlinkWorker) -> None:
        """Dispose the task's backend (before its folders go) and keep the worker idle, or
        close it when one is kept already or the reset failed."""
        worker.timeout_s = self.timeout_s
        try:
            worker.reset("heap")
        except BaseException:
            worker.close()
            return
        with self._lock:
            if not self._idle:
                self._idle.append(worker)
                return
        worker.close()

    def close_idle(self) -> None:
        """Stops the kept JVM (at exit; tests call it to leave no process behind)."""
        with self._lock:
            workers, self._idle[:] = list(self._idle), []
        for worker in workers:
            worker.close()
