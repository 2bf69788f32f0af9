"""Measuring state migrations (schema evolution, TTL on/off) where they happen.

RocksDB migrates lazily: when a restored state is registered (`get_state` and friends) with a
descriptor whose serializer or layout differs, its entries are rewritten into a new column
family. The heap backend migrates eagerly at restore when `restore_backend(...,
descriptors=[...])` names the new descriptors (everything is deserialized then anyway); without
them it cannot know the new types before registration, so it migrates at registration too. Both
paths go through `measure_migration`, which records a MigrationStats in
`backend.migration_stats[name]` and in `backend.restore_stats.migrations`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from backends.schema import resolve_compatibility
from backends.snapshot.handle import MigrationStats
from backends.storage.rocksdb import key_prefix_length


def stored_footprint(backend: Any, raw: Any) -> tuple[int, int]:
    """(keys, stored bytes) of a raw state: RocksDB keys + values; heap: keys and 0 bytes."""
    if not backend.serialized_storage:
        return raw.count_keys(), 0
    keys, size, last = 0, 0, None
    is_map = raw.spec.shape == "map"
    for k, v in raw.scan(b""):
        size += len(k) + len(v)
        if is_map:
            prefix = k[:key_prefix_length(k)]
            if prefix == last:
                continue
            last = prefix
        keys += 1
    return keys, size


def measure_migration(backend: Any, old: Any, spec: Any, migrate: Callable[[Any, Any], Any],
                      phase: str) -> Any:
    """Run `migrate(old, spec)` timed; record what it read and wrote; return the new raw."""
    compatibility = resolve_compatibility(old.spec, spec)
    keys, bytes_read = stored_footprint(backend, old)
    restore_stats = getattr(backend, "restore_stats", None)
    if not backend.serialized_storage and restore_stats is not None:
        bytes_read = restore_stats.bytes_per_state.get(spec.name, 0)
    start = time.perf_counter()
    new = migrate(old, spec)
    duration_ms = (time.perf_counter() - start) * 1000.0
    _, bytes_written = stored_footprint(backend, new)
    stats = MigrationStats(spec.name, backend.kind, phase, compatibility, duration_ms, keys,
                           bytes_read, bytes_written)
    registry = getattr(backend, "migration_stats", None)
    if registry is not None:
        registry[spec.name] = stats
    if restore_stats is not None:
        restore_stats.migrations.append(stats)
    return new
