"""Checkpoints, savepoints and restore for both keyed-state backends.

- writer.py / reader.py: `KeyedStateBackend.snapshot(...)` / `snapshot_async(...)` and
  `backends.restore_backend(...)`; pending.py: the SnapshotFuture of a snapshot whose
  asynchronous part runs on its own thread (Flink's checkpoint model).
  They read and fill a backend only through its public snapshot interface (`raw_states`,
  `operator_state_data`, `load_restored`, `copy_restored`, `resolve_restored`,
  `note_not_applicable`; RocksDB adds `create_checkpoint` and `adopt_checkpoint`) and import no
  backend class, so backends/ has no import cycle (tests/test_architecture.py).
- parts.py: what every snapshot writes (folder, metadata header, operator-state files);
  opened.py: an opened snapshot, and the checks that keep every name from its untrusted
  metadata inside the snapshot.
- format.py, arrowfile.py, metadata.py: the canonical, backend-neutral full-snapshot format
  (Arrow IPC files per state with per-key-group segments, JSON metadata with checksums).
- incremental.py: RocksDB incremental checkpoints (shared SST files, reference counts, retention).
- latest.py: `latest_checkpoint(dir)` and removal of interrupted checkpoints.
- operator_state.py: operator list / union list / broadcast state and their redistribution.
- migration.py: measured schema / TTL-layout migrations; fsio.py: pyarrow.fs I/O and fsync.
"""

from backends.snapshot.handle import MigrationStats, RestoreStats, SnapshotHandle, SnapshotStats
from backends.snapshot.incremental import shared_file_references
from backends.snapshot.latest import clean_up_incomplete, latest_checkpoint, list_checkpoints
from backends.snapshot.operator_state import (
    BroadcastState,
    OperatorListState,
    OperatorStateBackend,
)
from backends.snapshot.pending import SnapshotCancelledError, SnapshotFuture

__all__ = [
    "BroadcastState",
    "MigrationStats",
    "OperatorListState",
    "OperatorStateBackend",
    "RestoreStats",
    "SnapshotCancelledError",
    "SnapshotFuture",
    "SnapshotHandle",
    "SnapshotStats",
    "clean_up_incomplete",
    "latest_checkpoint",
    "list_checkpoints",
    "shared_file_references",
]
