"""A snapshot in flight: its synchronous part done, its asynchronous part on a thread of its own.

`KeyedStateBackend.snapshot_async(...)` runs the synchronous part in the caller's thread and
returns a `SnapshotFuture`; the asynchronous part (TTL filtering, encoding, compression, writing,
metadata commit) runs on the backend's snapshot thread (a one-thread executor, so handing work
over never waits for a thread to start; several snapshots in flight queue there and run in
order), as Flink's AsyncCheckpointRunnable runs a snapshot's
FutureTask on the task's asynchronous-operations pool beside the task. `result()` is the
SnapshotHandle once the asynchronous part has committed the snapshot, or raises, with its
original traceback, whatever the asynchronous part raised; a failed snapshot never has a
`_metadata` file, so it never looks complete, and its partial folder is removed. `cancel()` asks
the asynchronous part to stop before its next step (the backend's close() does); `result()` then
raises SnapshotCancelledError.

What the thread costs is measured inside it: wall ms from when the thread starts it (after the
synchronous part and after any snapshot queued before it; Flink's lane measures the same) to its
own end (`stats.async_ms`), and its CPU time (`time.thread_time()`, `stats.async_cpu_ms`).
`end_ns` is `time.perf_counter_ns()` when the asynchronous part ended, so a caller can tell which
of its own work overlapped it.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable

from backends.snapshot.handle import SnapshotHandle, SnapshotStats

#: The asynchronous part: called on the snapshot's thread with a `check_cancelled()` callable
#: it calls between steps; returns the handle of the committed snapshot.
AsyncPart = Callable[[Callable[[], None]], SnapshotHandle]


class SnapshotCancelledError(RuntimeError):
    """The snapshot's asynchronous part was cancelled (e.g. its backend closed) before it
    committed: there is no snapshot."""


class SnapshotFuture:
    """The handle-future `snapshot_async` returns; `result()` is the SnapshotHandle."""

    __slots__ = ("_cancel", "_future", "_thread", "checkpoint_id", "end_ns", "folder", "mode",
                 "stats")

    def __init__(self, checkpoint_id: int, mode: str, stats: SnapshotStats) -> None:
        self.checkpoint_id = checkpoint_id
        self.mode = mode
        self.stats = stats
        self.end_ns: int | None = None
        self.folder: str | None = None  # the chk-<id> folder its asynchronous part writes
        self._future: concurrent.futures.Future[SnapshotHandle] = concurrent.futures.Future()
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------------- running
    def start(self, body: AsyncPart, sync_end: float,
              executor: concurrent.futures.Executor | None = None) -> None:
        """Run `body` on `executor` (the backend's single snapshot thread, behind the snapshots
        queued there), or on a new thread; `sync_end` is time.perf_counter() at the end of the
        synchronous part (async_ms starts there or when the thread starts `body`, if later).
        Handing work to a waiting thread returns at once; starting a thread waits
        until it runs, and the new thread then holds the GIL for up to a switch interval
        (5 ms) before the caller gets it back."""
        self._future.set_running_or_notify_cancel()
        if executor is not None:
            executor.submit(self._run, body, sync_end)
            return
        self._thread = threading.Thread(
            target=self._run, args=(body, sync_end),
            name=f"statebench-snapshot-{self.checkpoint_id}")
        self._thread.start()

    def _run(self, body: AsyncPart, sync_end: float) -> None:
        sync_end = max(sync_end, time.perf_counter())  # queued: from when the thread starts it
        cpu_start = time.thread_time()
        try:
            handle = body(self._check_cancelled)
        except BaseException as exc:  # handed to result(), never lost
            self._ended(cpu_start, sync_end)
            self._future.set_exception(exc)
        else:
            self._ended(cpu_start, sync_end)
            self._future.set_result(handle)

    def _ended(self, cpu_start: float, sync_end: float) -> None:
        stats = self.stats
        stats.async_cpu_ms = (time.thread_time() - cpu_start) * 1e3
        stats.async_ms = (time.perf_counter() - sync_end) * 1e3
        stats.total_ms = stats.sync_ms + stats.async_ms
        self.end_ns = time.perf_counter_ns()

    def _check_cancelled(self) -> None:
        if self._cancel.is_set():
            raise SnapshotCancelledError(
                f"snapshot {self.checkpoint_id} was cancelled before it committed")

    # ----------------------------------------------------------------- the caller's side
    def result(self, timeout: float | None = None) -> SnapshotHandle:
        """The committed snapshot's handle; raises the asynchronous part's error, or
        TimeoutError after `timeout` seconds."""
        return self._future.result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self._future.exception(timeout)

    def done(self) -> bool:
        return self._future.done()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the asynchronous part ended (successfully or not); True if it did."""
        concurrent.futures.wait([self._future], timeout)
        return self._future.done()

    def cancel(self) -> None:
        """Ask the asynchronous part to stop before its next step (it may already have
        committed: then result() still returns the handle)."""
        self._cancel.set()

    @property
    def sync_ms(self) -> float:
        return self.stats.sync_ms

    def __repr__(self) -> str:
        state = "done" if self.done() else "running"
        return f"SnapshotFuture(checkpoint_id={self.checkpoint_id}, mode={self.mode!r}, {state})"
