"""Checkpoints of one task's backend: where they go, how they run, what they cost, and the
final restore.

How they run (:class:`CheckpointPipeline`, the engines' checkpoint model, with a queue
of asynchronous phases): a barrier runs the checkpoint's synchronous phase in the task's thread
(``backend.snapshot_async``) and goes on; the asynchronous phase (encoding, writing, upload,
commit) queues behind the earlier ones on the backend's one snapshot thread, which runs them in
order while the task processes records. Up to ``max_in_flight`` checkpoints (the spec's
``[checkpoints] max_in_flight``, every lane alike) may be in flight; a barrier waits only when
that many are (``checkpoint_wait_ms``, for the oldest one). Each checkpoint's numbers are
reported once its asynchronous phase has finished, in id order. The synchronous phase and any
wait are the task's busy time; the asynchronous phases are not, but they compete with the task
for the CPU and, where they run Python code, for the GIL (workloads/run/keyed_operator.py
measures the task's rate while any of them is in flight and while none is).

Why a queue: Flink's task never waits for an asynchronous phase; with its default of one
concurrent checkpoint its checkpoint coordinator delays the next trigger instead, so barriers
come less often when the asynchronous phase is slow. statebench keeps every logical barrier, so
checkpoint contents stay exact under the logical clock, and queues the asynchronous phases where
Flink would have delayed the trigger: it may do more asynchronous work than Flink would, never
less. ``max_in_flight = 1`` gives the strict model (every barrier waits for the previous
asynchronous phase), where waits put most of a slow asynchronous phase back into busy time.

Layout under the run's shared checkpoint root (a local path or a pyarrow.fs URI)::

    <root>/<run id>/<scenario slug>/rep-<r>/task-<t>/attempt-<a>/chk-<id>/...

(``warm-up`` instead of ``rep-<r>`` for a comparison's unmeasured warm-up round), and a job
lane's (a Flink SQL job, a Spark query) ``<root>/<run id>/<scenario slug>/rep-<r>/<lane>``
(:func:`job_checkpoint_dir`).

Retried Spark task attempts must neither corrupt nor double-count: each attempt writes its own
``attempt-<a>`` folder (``a`` = Spark's ``taskAttemptId``, unique and growing with every retry),
and an attempt removes the folders of lower-numbered attempts of the same task when it starts
(they failed: Spark starts a retry only after the earlier attempt is gone; the runner turns
speculation off), and any leftover of its own folder. Metrics of a failed attempt never reach
the driver, because Spark keeps only the output of the successful attempt.

The snapshot API's stats fields are named in exactly one place, :func:`checkpoint_numbers`, so a
rename there is a one-line fix.
"""

from __future__ import annotations

import gc
import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs

from backends.storage.registry import storage_backend
from workloads.run import run_tempdirs

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
#: Longest slug: a path component must stay under NAME_MAX (255 bytes) with room for prefixes.
MAX_SLUG = 96


def slug(text: str) -> str:
    """A file-name-safe form of a name that becomes one path component (a scenario label, a
    workload name, a run id), e.g. ``ycsb-a_heap_incremental_5_false``.

    It never holds a separator, is never ``.``/``..``/empty or hidden, and never exceeds
    :data:`MAX_SLUG` characters: a name cut short or with nothing safe left ends in a hash of
    the whole name, so different names stay different folders.
    """
    out = _SAFE.sub("_", text).strip("_.")
    if out and len(out) <= MAX_SLUG:
        return out
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    head = out[:MAX_SLUG - len(digest) - 1].rstrip("_.")
    return f"{head}-{digest}" if head else f"x-{digest}"


def join(root: str, *parts: str) -> str:
    """Join path parts under a local path or a URI (``s3://b/x`` + ``y`` -> ``s3://b/x/y``)."""
    return "/".join([root.rstrip("/"), *parts])


def round_folder(repetition: int) -> str:
    """The folder of one round's checkpoints: ``rep-<r>``, or ``warm-up`` for the unmeasured
    warm-up round (``workloads.run.runner.WARMUP_ROUND``, a negative repetition), which is no
    repetition and must not read as one (nor make a name Spark refuses)."""
    return "warm-up" if repetition < 0 else f"rep-{repetition}"


def task_dir(root: str, run_id: str, scenario_slug: str, repetition: int, task: int) -> str:
    return join(root, slug(run_id), scenario_slug, round_folder(repetition), f"task-{task:05d}")


def local_checkpoint_root(root: str, lanes: str = "flink-sql lanes") -> Path:
    """The run's checkpoint root as the local folder an engine writes into: a ``file://``
    URI's path (``Path("file:///abs")`` is the relative folder ``file:/abs``, where checkpoints
    went under the current folder). Other URIs are refused (the CLI does so up front for the
    lanes that measure local folders); ``lanes`` names who refuses."""
    if "://" in root and not root.startswith("file://"):
        raise ValueError(f"checkpoint root {root}: the {lanes} write checkpoints as local "
                         "files; give a local folder or a file:// URI")
    return Path(root.removeprefix("file://") or "/").absolute()


def job_checkpoint_dir(cfg: Any, root: str | None, work: Path, lane: str) -> Path:
    """A job lane's checkpoint folder for ``cfg``'s scenario and round:
    ``<root>/<run id>/<scenario slug>/rep-<r>/<lane>`` as every lane's (two runs never share
    one), or ``work/checkpoints`` (the job's temporary folder) when the run has no root."""
    if root is None:
        return work / "checkpoints"
    return (local_checkpoint_root(root, f"{lane} lanes") / slug(cfg.run_id)
            / slug(cfg.scenario.label) / round_folder(cfg.repetition) / lane)


def attempt_dir(task_folder: str, attempt: int) -> str:
    return join(task_folder, f"attempt-{attempt}")


def task_attempt_dir(cfg: Any, task: int, attempt: int) -> str | None:
    """Where this task attempt of ``cfg``'s scenario checkpoints (earlier attempts' folders
    removed first, so a retried task never mixes its files with a failed one's), or None when
    the run takes no checkpoints."""
    if cfg.checkpoint_root is None or cfg.checkpoint_interval_ms <= 0:
        return None
    folder = task_dir(cfg.checkpoint_root, cfg.run_id, slug(cfg.scenario.label),
                      cfg.repetition, task)
    remove_earlier_attempts(folder, attempt)
    return attempt_dir(folder, attempt)


def _fs(location: str) -> tuple[pafs.FileSystem, str]:
    if "://" in location:
        return pafs.FileSystem.from_uri(location)
    return pafs.LocalFileSystem(), location


def remove_earlier_attempts(task_folder: str, attempt: int) -> list[str]:
    """Delete ``attempt-<n>`` folders with n <= attempt: failed earlier attempts, and leftovers
    of this very attempt (an in-process run repeated under the same run id); returns what went."""
    fs, path = _fs(task_folder)
    removed: list[str] = []
    try:
        infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except (OSError, ValueError):
        return removed
    for info in infos:
        name = info.base_name
        if name.startswith("attempt-") and name[8:].isdigit() and int(name[8:]) <= attempt:
            fs.delete_dir(info.path)
            removed.append(info.path)
    return removed


@dataclass(frozen=True)
class CheckpointNumbers:
    """One completed checkpoint's numbers: bytes, and the phases' milliseconds."""

    total_bytes: float
    uploaded_bytes: float
    sync_ms: float
    async_ms: float
    async_cpu_ms: float
    total_ms: float


def checkpoint_numbers(handle: Any, sync_ms: float | None = None) -> CheckpointNumbers:
    """Read a snapshot handle's stats (backends/snapshot/handle.py SnapshotStats). ``sync_ms``:
    the synchronous phase as the caller timed it (what the task was blocked for), replacing the
    backend's own figure; the total is then sync + async."""
    s = handle.stats
    sync = float(s.sync_ms) if sync_ms is None else float(sync_ms)
    return CheckpointNumbers(
        total_bytes=float(s.total_bytes),
        uploaded_bytes=float(s.uploaded_bytes),
        sync_ms=sync,
        async_ms=float(s.async_ms),
        async_cpu_ms=float(s.async_cpu_ms),
        total_ms=sync + float(s.async_ms),
    )


@dataclass
class InFlight:
    """A checkpoint whose synchronous phase is done and whose asynchronous phase may still run."""

    future: Any  # backends' SnapshotFuture
    checkpoint_id: int
    barrier_ms: int
    sync_ms: float  # wall ms the task spent in snapshot_async (its synchronous phase)
    wait_ms: float  # wall ms the task waited at this barrier (max_in_flight were in flight)


@dataclass
class Completed:
    """A checkpoint whose asynchronous phase finished: its handle and numbers."""

    handle: Any
    checkpoint_id: int
    barrier_ms: int
    numbers: CheckpointNumbers
    wait_ms: float


class CheckpointPipeline:
    """One task's checkpoints: up to ``max_in_flight`` asynchronous phases in flight, queued.

    At a barrier the task waits only when ``max_in_flight`` checkpoints are in flight
    (:meth:`wait_for_slot`, busy time: the task cannot go on), then runs the synchronous phase
    (:meth:`start`, busy time); the asynchronous phases run in order on the snapshot thread while
    the task processes records. :meth:`poll` hands back the checkpoints whose asynchronous phase
    finished, oldest first (raising the error one failed with, never dropping it); at the end of
    input :meth:`wait_all` (not busy time) completes the rest.
    """

    def __init__(self, backend: Any, target: str, mode: str, max_in_flight: int = 1) -> None:
        if isinstance(max_in_flight, bool) or not isinstance(max_in_flight, int) or (
                max_in_flight < 1):
            raise ValueError(f"max_in_flight must be an int >= 1, got {max_in_flight!r}")
        self.backend = backend
        self.target = target
        self.mode = mode
        self.max_in_flight = max_in_flight
        self.pending: list[InFlight] = []  # oldest first
        self.async_cpu_ms = 0.0  # summed over completed checkpoints

    def async_end_ns(self) -> int | None:
        """perf_counter_ns when the asynchronous phases in flight all ended (they run in order,
        so: when the newest one ended); None while one runs (or when none is in flight: check
        ``pending``)."""
        return None if not self.pending else self.pending[-1].future.end_ns

    def poll(self) -> list[Completed]:
        """The in-flight checkpoints whose asynchronous phase has ended, oldest first."""
        done = []
        while self.pending and self.pending[0].future.done():
            done.append(self._complete())
        return done

    def wait_for_slot(self) -> tuple[float, list[Completed]]:
        """Wait until fewer than ``max_in_flight`` checkpoints are in flight; (ms waited, the
        checkpoints completed, oldest first)."""
        done = self.poll()
        if len(self.pending) < self.max_in_flight:
            return 0.0, done
        start = time.perf_counter()
        while len(self.pending) >= self.max_in_flight:
            self.pending[0].future.wait()
            done.extend(self.poll())
        return (time.perf_counter() - start) * 1e3, done

    def wait_all(self) -> list[Completed]:
        """Wait for every asynchronous phase in flight; the checkpoints, oldest first."""
        done = []
        while self.pending:
            self.pending[0].future.wait()
            done.extend(self.poll())
        return done

    def _complete(self) -> Completed:
        pending = self.pending.pop(0)
        handle = pending.future.result()  # raises the asynchronous phase's error
        numbers = checkpoint_numbers(handle, pending.sync_ms)
        self.async_cpu_ms += numbers.async_cpu_ms
        return Completed(handle, pending.checkpoint_id, pending.barrier_ms, numbers,
                         pending.wait_ms)

    def start(self, checkpoint_id: int, barrier_ms: int, wait_ms: float) -> float:
        """Run the synchronous phase of checkpoint ``checkpoint_id``; returns its wall ms.

        The heap backend has full snapshots only (as Flink's HashMapStateBackend): an
        incremental request there becomes a full snapshot, which the snapshot stats note."""
        assert len(self.pending) < self.max_in_flight, "wait for a slot first"
        start = time.perf_counter()
        future = self.backend.snapshot_async(checkpoint_id, self.target, mode=self.mode,
                                             max_in_flight=self.max_in_flight)
        sync_ms = (time.perf_counter() - start) * 1e3
        self.pending.append(InFlight(future, checkpoint_id, barrier_ms, sync_ms, wait_ms))
        return sync_ms


def timed_restore(
    kind: str, handle: Any, clock: Any, local_dir: str | None, register: Callable[[Any], None],
    **options: Any,
) -> float:
    """Restore ``handle`` into a fresh backend of ``kind``, re-register its states with
    ``register(backend)`` (as a restarted job would), and return the wall milliseconds taken.
    The restored backend and its local folder are removed afterwards."""
    import backends

    # owner-tagged: swept if killed
    folder = run_tempdirs.make("statebench-restore-", dir=local_dir)
    storage = storage_backend(kind)
    options.update(storage.options(folder, None))
    try:
        start = time.perf_counter()
        restored = backends.restore_backend(kind, [handle], clock=clock, **options)
        try:
            register(restored)
            return (time.perf_counter() - start) * 1e3
        finally:
            restored.close()
            if storage.holds_native_handles:  # freed before their folder goes (KeyedOperator)
                del restored
                gc.collect()
    finally:
        run_tempdirs.remove(folder)
