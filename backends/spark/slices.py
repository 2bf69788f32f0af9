"""The spark-tws query's input on the paced clock: the events cut into one Parquet file per
``slice_ms`` of release time, written a bounded stretch ahead of their release and removed
once the query has read them.

Why lazily: every slice used to be written before the query started. A shipped spec of 1.5
logical days paced at speedup 1 is 1.3 million slices of 100 ms: the run wrote files for a
quarter of an hour (195,000 files, 800 MB after 2 minutes) before its first event was released,
and a Ctrl-C then spent minutes deleting them (on this machine's ext4, mounted with ``discard``,
a file whose blocks have reached the disk takes about a millisecond to delete: 196,000 staged
files took 190 s to remove after a SIGINT). Now a writer thread keeps at most :data:`AHEAD`
slices written and not yet released (:class:`SliceWriter`), the feeder renames each into the
query's input folder at its release time (:class:`Feeder`: a rename is atomic, so Spark's file
source never lists half a file) and deletes the released files the query has read
(:meth:`Feeder.prune`), so the job's folders hold a bounded number of input files whatever its
length, and an interrupt removes them in well under a second.

The files, their contents, their names and their release times are exactly those of writing
everything first (:func:`write_slices` still does that, for tests and small inputs).
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

#: Slices written and not yet released, at most: 20 s of input at 100 ms slices when every
#: slice has events. Writing one takes about a millisecond here (1,200-5,500 files/s measured
#: on this loaded 2-core machine), so the writer stays far ahead of a release every 100 ms.
AHEAD = 200
#: A released file is deleted once a micro-batch that started at least this long after its
#: release has been reported: that batch listed the input folder after the rename, so the file
#: was read by it or an earlier one, and a reported batch is finished (its data is in the sink).
#: The margin only guards the millisecond rounding of Spark's progress timestamps.
PRUNE_MARGIN_S = 1.0
#: Bytes of a slice file beyond its rows (Parquet's header, footer and schema): 20,000 files of
#: two events with a 300-byte string value each took 2,704 bytes a file here.
SLICE_FILE_BYTES = 2_000
#: Bytes of an event's row beyond its value (key, ord, op code, map key).
ROW_BYTES = 21
#: Released files not yet pruned, at most as a rule: those released within a few batches.
PRUNE_LAG = 100
#: Bytes Spark's file-source log keeps per file the query read: its compacted log lists every
#: file of the query's life (``FileStreamSourceLog`` retains every entry), twice while the
#: next compaction replaces the last.
SOURCE_LOG_BYTES_PER_FILE = 2 * 200
#: Seconds the feeder waits at a time for a slice the writer has not finished (it then checks
#: whether it was stopped).
_WAIT_S = 0.1


@dataclass(frozen=True)
class SlicePlan:
    """Where the slices of an input are: slice ``i`` holds events ``lo[i]..hi[i]-1`` and is
    released ``due_ms[i]`` wall ms after the start (the end of its ``slice_ms`` span). Numpy
    arrays, not objects: a long paced run has over a million slices."""

    lo: np.ndarray
    hi: np.ndarray
    due_ms: np.ndarray

    def __len__(self) -> int:
        return len(self.due_ms)

    @staticmethod
    def name(index: int) -> str:
        return f"slice-{index:06d}.parquet"

    def write(self, events: pa.Table, index: int, folder: Path) -> Path:
        """Slice ``index`` of ``events`` as a Parquet file in ``folder``."""
        lo, hi = int(self.lo[index]), int(self.hi[index])
        path = folder / self.name(index)
        pq.write_table(events.slice(lo, hi - lo), path)
        return path


def plan_slices(release_ms: np.ndarray, slice_ms: int) -> SlicePlan:
    """The non-empty ``slice_ms`` spans of ``release_ms`` (each event's wall ms after the
    start, in order), each released at its span's end."""
    slots = (np.asarray(release_ms, dtype=np.int64) // slice_ms).astype(np.int64)
    if len(slots) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return SlicePlan(empty, empty, empty)
    bounds = np.flatnonzero(np.diff(slots)) + 1
    lo = np.concatenate([[0], bounds]).astype(np.int64)
    hi = np.concatenate([bounds, [len(slots)]]).astype(np.int64)
    return SlicePlan(lo, hi, (slots[lo] + 1) * slice_ms)


def write_slices(events: pa.Table, release_ms: np.ndarray, slice_ms: int,
                 staging: Path) -> list[tuple[int, Path]]:
    """Every slice at once: (release offset ms of the slice's end, file), in release order."""
    plan = plan_slices(release_ms, slice_ms)
    if len(plan):
        staging.mkdir(parents=True, exist_ok=True)
    return [(int(plan.due_ms[i]), plan.write(events, i, staging)) for i in range(len(plan))]


class SliceWriter(threading.Thread):
    """Writes the slices into ``staging`` in order, at most ``ahead`` beyond those released."""

    def __init__(self, events: pa.Table, plan: SlicePlan, staging: Path,
                 ahead: int = AHEAD) -> None:
        super().__init__(name="statebench-spark-tws-writer", daemon=True)
        if ahead < 1:
            raise ValueError(f"ahead must be >= 1, got {ahead}")
        self.events, self.plan, self.staging, self.ahead = events, plan, staging, ahead
        self.written = 0
        self.released = 0
        self.error: BaseException | None = None
        self._stopped = False
        self._cond = threading.Condition()

    def run(self) -> None:
        try:
            self.staging.mkdir(parents=True, exist_ok=True)
            for i in range(len(self.plan)):
                with self._cond:
                    while not self._stopped and i - self.released >= self.ahead:
                        self._cond.wait()
                    if self._stopped:
                        return
                self.plan.write(self.events, i, self.staging)
                with self._cond:
                    self.written = i + 1
                    self._cond.notify_all()
        except BaseException as exc:  # reported by the feeder and the driver loop
            self.error = exc
            with self._cond:
                self._cond.notify_all()

    def wait_written(self, index: int, timeout_s: float) -> bool:
        """Whether slice ``index`` is written, waiting up to ``timeout_s`` for it."""
        with self._cond:
            if self.written <= index and not self._stopped and self.error is None:
                self._cond.wait(timeout_s)
            return self.written > index

    def mark_released(self, count: int) -> None:
        with self._cond:
            self.released = count
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()


class Feeder(threading.Thread):
    """Renames each written slice into the input folder at its release time (``t0`` +
    its ``due_ms``), and deletes released files the query has read (:meth:`prune`)."""

    def __init__(self, writer: SliceWriter, input_dir: Path, t0: float) -> None:
        super().__init__(name="statebench-spark-tws-feeder", daemon=True)
        self.writer, self.input_dir, self.t0 = writer, input_dir, t0
        self.stop_event = threading.Event()
        self.released = 0
        self.error: BaseException | None = None
        self._out: deque[tuple[float, Path]] = deque()  # (released at, file), oldest first

    def run(self) -> None:
        writer, plan = self.writer, self.writer.plan
        try:
            for i in range(len(plan)):
                wait = self.t0 + int(plan.due_ms[i]) / 1000.0 - time.time()
                if wait > 0 and self.stop_event.wait(wait):
                    return
                while not writer.wait_written(i, _WAIT_S):
                    if writer.error is not None:
                        raise writer.error
                    if self.stop_event.is_set():
                        return
                target = self.input_dir / plan.name(i)
                os.rename(writer.staging / plan.name(i), target)
                self._out.append((time.time(), target))
                self.released = i + 1
                writer.mark_released(i + 1)
        except BaseException as exc:  # reported by the driver loop
            self.error = exc

    def prune(self, read_before: float) -> int:
        """Delete the released files renamed in before ``read_before`` (epoch s) minus
        :data:`PRUNE_MARGIN_S`: the query has read them. Returns how many were deleted."""
        limit = read_before - PRUNE_MARGIN_S
        out = self._out
        count = 0
        while out and out[0][0] < limit:
            _, path = out.popleft()
            with suppress(FileNotFoundError):
                os.unlink(path)
            count += 1
        return count

    def stop(self) -> None:
        """Stop releasing (and the writer writing); returns at once."""
        self.stop_event.set()
        self.writer.stop()


def input_disk_bytes(events: int, release_span_ms: float, slice_ms: int,
                     value_bytes: float) -> float:
    """About the most bytes of input files one query holds at once: the slices written ahead
    and those released and not yet read (bounded, whatever the run's length), and Spark's
    file-source log of every file released (which grows with it)."""
    if events <= 0:
        return 0.0
    slices = max(1.0, min(float(events), release_span_ms / slice_ms))
    per_slice = SLICE_FILE_BYTES + events / slices * (value_bytes + ROW_BYTES)
    return min(slices, AHEAD + PRUNE_LAG) * per_slice + slices * SOURCE_LOG_BYTES_PER_FILE
