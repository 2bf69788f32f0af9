"""statebench's keyed-state backends: PyFlink's keyed-state API over a heap and a RocksDB store.

The public names below are a contract: outside conformance suites call them exactly as
written. TTL follows Flink 2.x's rules; see docs/ttl.md for where statebench
deliberately differs (the compaction filter, event-time TTL, timer cleanup).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from backends.clocks import EventTimeClock, ManualClock, ScaledClock, SystemClock
from backends.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from backends.errors import (
    CorruptSnapshotError,
    NoCurrentKeyError,
    SnapshotNotFoundError,
    StateMigrationError,
)
from backends.functions import AggregateFunction, ReduceFunction
from backends.heap_backend import HeapKeyedStateBackend
from backends.keyed_backend import KeyedStateBackend
from backends.keygroups import KeyGroupRange
from backends.rocksdb_backend import RocksDBKeyedStateBackend
from backends.rocksdb_options import RocksDBOptions
from backends.snapshot import (
    BroadcastState,
    MigrationStats,
    OperatorListState,
    OperatorStateBackend,
    RestoreStats,
    SnapshotHandle,
    SnapshotStats,
    latest_checkpoint,
    list_checkpoints,
)
from backends.snapshot.reader import restore
from backends.storage.registry import BACKEND_KINDS, storage_backend
from backends.strategies import CleanupStrategy, parse_strategy
from backends.ttl_config import StateTtlConfig
from backends.types import Types


def create_backend(kind: str, clock: Any = None, **options: Any) -> KeyedStateBackend:
    """A new, empty keyed state backend: "heap" (dicts) or "rocksdb" (rocksdict, `path=`).

    Options: max_parallelism (default 128), key_group_range (a KeyGroupRange, default all);
    rocksdb also path (created when missing; a temporary folder if omitted), disable_wal and
    rocksdb_options (a mapping or RocksDBOptions: write_buffer_size, max_write_buffer_number,
    target_file_size_base, level0_file_num_compaction_trigger, block_cache_size, compression,
    periodic_compaction_ms, statistics, state_layout; see backends/rocksdb_options.py). The heap
    backend ignores path and rocksdb_options, so one set of options can create either kind.
    """
    return storage_backend(kind).open(clock=clock, **options)


def restore_backend(
    kind: str,
    snapshots: Any,
    clock: Any = None,
    **options: Any,
) -> KeyedStateBackend:
    """A backend of `kind` holding the state of `snapshots` (handles or location strings).

    Snapshots of several old tasks may be given: the new backend reads exactly the key groups of
    its own key_group_range from them (rescaling). Any backend kind restores any full snapshot.
    Restore options (backends/snapshot/reader.py): descriptors (resolve compatibility now; the
    heap backend migrates eagerly), operator_index and parallelism (redistributing operator
    state; inferred from key_group_range when unambiguous). Stats: `backend.restore_stats`.
    """
    storage_backend(kind)  # an unknown kind: one line naming the known ones, before any work
    if isinstance(snapshots, str | Path) or hasattr(snapshots, "__fspath__"):
        snapshots = [snapshots]
    restore_options = {k: options.pop(k) for k in ("descriptors", "operator_index", "parallelism")
                       if k in options}
    backend = create_backend(kind, clock=clock, **options)
    try:
        restore(backend, list(snapshots), **restore_options)
    except BaseException:
        backend.close()
        raise
    return backend


__all__ = [
    "BACKEND_KINDS",
    "AggregateFunction",
    "AggregatingStateDescriptor",
    "BroadcastState",
    "CleanupStrategy",
    "CorruptSnapshotError",
    "EventTimeClock",
    "HeapKeyedStateBackend",
    "KeyGroupRange",
    "KeyedStateBackend",
    "ListStateDescriptor",
    "ManualClock",
    "MapStateDescriptor",
    "MigrationStats",
    "NoCurrentKeyError",
    "OperatorListState",
    "OperatorStateBackend",
    "ReduceFunction",
    "ReducingStateDescriptor",
    "RestoreStats",
    "RocksDBKeyedStateBackend",
    "RocksDBOptions",
    "ScaledClock",
    "SnapshotHandle",
    "SnapshotNotFoundError",
    "SnapshotStats",
    "StateDescriptor",
    "StateMigrationError",
    "StateTtlConfig",
    "SystemClock",
    "Types",
    "ValueStateDescriptor",
    "create_backend",
    "latest_checkpoint",
    "list_checkpoints",
    "parse_strategy",
    "restore_backend",
]
