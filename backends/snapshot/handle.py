"""What a snapshot or a restore hands back: a path-like handle and its measurements.

The numbers are the checkpoint metrics of a statebench run (architecture.md: size, synchronous
and total duration, restore time), so they are plain dataclasses with `as_dict()` for metric
rows. Durations are wall-clock milliseconds (time.perf_counter), sizes are bytes on the target.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class SnapshotStats:
    """Sizes and timings of one snapshot.

    total_bytes: every file the snapshot consists of (for an incremental checkpoint, including
        shared files uploaded by earlier checkpoints): its full size.
    uploaded_bytes: bytes written by this snapshot (full: == total_bytes).
    bytes_per_state: data bytes per keyed state (RocksDB incremental: the column family's SST
        bytes, as SST files are per column family).
    sync_ms: the synchronous part, run in the caller's thread (heap: a shallow copy of each
        state's dict, list and map containers then copied on their first write; RocksDB full:
        an iterator per state, pinning the DB as of now; incremental: flush + RocksDB
        checkpoint of hard links); async_ms: the asynchronous part on its own thread (wall ms
        from the end of the synchronous part until it finished: TTL filtering, encoding,
        compression, writing or uploading, metadata commit); async_cpu_ms: CPU ms that thread
        used (`time.thread_time()`); total_ms = sync_ms + async_ms. wait_ms: how long
        `snapshot_async` waited for the backend's previous snapshot before starting this one.
    entries_filtered / bytes_filtered: units left out by full-snapshot TTL cleanup (per state and
        total), bytes_filtered counts the uncompressed Arrow bytes of those rows.
    not_applicable: state -> why a configured cleanup did not run (full-snapshot cleanup on an
        incremental checkpoint), instead of running it silently.
    """

    checkpoint_id: int
    mode: str
    backend: str
    total_bytes: int = 0
    uploaded_bytes: int = 0
    bytes_per_state: dict[str, int] = field(default_factory=dict)
    operator_state_bytes: int = 0
    metadata_bytes: int = 0
    files: int = 0
    sync_ms: float = 0.0
    async_ms: float = 0.0
    async_cpu_ms: float = 0.0
    total_ms: float = 0.0
    wait_ms: float = 0.0
    entries_filtered: int = 0
    entries_filtered_per_state: dict[str, int] = field(default_factory=dict)
    bytes_filtered: int = 0
    not_applicable: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def upload_ratio(self) -> float:
        return self.uploaded_bytes / self.total_bytes if self.total_bytes else 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class MigrationStats:
    """One state's schema or TTL-layout migration: when, how long, how much it rewrote.

    RocksDB counts the stored bytes (keys + values) of the old and the new column family; the
    heap backend holds objects, not bytes, so it reports the snapshot bytes the state was
    restored from as bytes_read and 0 written."""

    state: str
    backend: str
    phase: str  # "restore" (eager, heap with descriptors) or "registration" (lazy)
    compatibility: str
    duration_ms: float
    keys: int
    bytes_read: int
    bytes_written: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RestoreStats:
    """Duration and bytes read of one restore, and what it restored."""

    duration_ms: float = 0.0
    bytes_read: int = 0
    files_read: int = 0
    snapshots: int = 0
    snapshots_read: int = 0
    keys_restored: int = 0
    key_groups: int = 0
    bytes_per_state: dict[str, int] = field(default_factory=dict)
    mode: str = "full"
    migrations: list[MigrationStats] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class SnapshotHandle(os.PathLike):
    """A completed snapshot: `os.fspath(h)` / `str(h)` is its folder (or URI), `h.stats` its
    measurements (None for a handle found on disk by `latest_checkpoint`)."""

    __slots__ = ("checkpoint_id", "location", "mode", "stats")

    def __init__(self, location: str, checkpoint_id: int, mode: str,
                 stats: SnapshotStats | None = None) -> None:
        self.location = location
        self.checkpoint_id = checkpoint_id
        self.mode = mode
        self.stats = stats

    def __fspath__(self) -> str:
        return self.location

    def __str__(self) -> str:
        return self.location

    def __repr__(self) -> str:
        return f"SnapshotHandle({self.location!r}, checkpoint_id={self.checkpoint_id}, " \
               f"mode={self.mode!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SnapshotHandle) and other.location == self.location

    def __hash__(self) -> int:
        return hash(self.location)
