"""Checkpoints of one task's backend: where they go, what they cost, and the final restore.

Layout under the run's shared checkpoint root (a local path or a pyarrow.fs URI)::

    <root>/<run id>/<scenario slug>/rep-<r>/task-<t>/attempt-<a>/chk-<id>/...

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
from typing import Any

import pyarrow.fs as pafs

from workloads.run import tempdirs

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


def task_dir(root: str, run_id: str, scenario_slug: str, repetition: int, task: int) -> str:
    return join(root, slug(run_id), scenario_slug, f"rep-{repetition}", f"task-{task:05d}")


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
    """The four per-checkpoint metrics (bytes, bytes, ms, ms)."""

    total_bytes: float
    uploaded_bytes: float
    sync_ms: float
    total_ms: float


def checkpoint_numbers(handle: Any) -> CheckpointNumbers:
    """Read a snapshot handle's stats (backends/snapshot/handle.py SnapshotStats)."""
    s = handle.stats
    return CheckpointNumbers(
        total_bytes=float(s.total_bytes),
        uploaded_bytes=float(s.uploaded_bytes),
        sync_ms=float(s.sync_ms),
        total_ms=float(s.total_ms),
    )


def take_checkpoint(backend: Any, checkpoint_id: int, target: str, mode: str) -> tuple[Any, float]:
    """Snapshot ``backend`` into ``target``; returns (handle, wall ms the call took).

    The heap backend has full snapshots only (as Flink's HashMapStateBackend): an incremental
    request there becomes a full snapshot, which the snapshot stats note.
    """
    start = time.perf_counter()
    handle = backend.snapshot(checkpoint_id, target, mode=mode)
    return handle, (time.perf_counter() - start) * 1e3


def timed_restore(
    kind: str, handle: Any, clock: Any, local_dir: str | None, register: Callable[[Any], None],
    **options: Any,
) -> float:
    """Restore ``handle`` into a fresh backend of ``kind``, re-register its states with
    ``register(backend)`` (as a restarted job would), and return the wall milliseconds taken.
    The restored backend and its local folder are removed afterwards."""
    import backends

    folder = tempdirs.make("statebench-restore-", dir=local_dir)  # owner-tagged: swept if killed
    if kind == "rocksdb":
        options["path"] = folder
    try:
        start = time.perf_counter()
        restored = backends.restore_backend(kind, [handle], clock=clock, **options)
        try:
            register(restored)
            return (time.perf_counter() - start) * 1e3
        finally:
            restored.close()
            if kind == "rocksdb":  # free its handles before their folder goes (KeyedOperator.close)
                del restored
                gc.collect()
    finally:
        tempdirs.remove(folder)
