"""RawStateSpec <-> JSON for snapshot metadata (the state's kind, layout and serializer snapshots).

The TTL *config* is deliberately absent (as in Flink: docs/ttl.md, "Flink's rules", restore):
only whether units carry timestamps (`ttl_layout`) is part of the data. `native_ttl_ms` records
that a RocksDB state lived in a native-TTL DB (compaction-filter cleanup), which an incremental
checkpoint must reopen the same way.
"""

from __future__ import annotations

import math
from typing import Any

from backends.schema import restored_type
from backends.storage.layout import RawStateSpec

KINDS = ("value", "list", "map", "reducing", "aggregating")


def spec_to_json(spec: RawStateSpec) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": spec.name,
        "kind": spec.kind,
        "ttl_layout": spec.ttl_layout,
        "value_serializer": spec.value_type.snapshot(),
    }
    if spec.key_type is not None:
        out["user_key_serializer"] = spec.key_type.snapshot()
    if spec.native_ttl_ms is not None:
        out["native_ttl_ms"] = spec.native_ttl_ms
        out["native_ttl_speedup"] = spec.native_ttl_speedup
    return out


def spec_from_json(entry: dict[str, Any]) -> RawStateSpec:
    """The spec a state was written with (StateMigrationError for unreadable serializers)."""
    name, kind = entry["name"], entry["kind"]
    if not isinstance(name, str) or not name:  # the descriptors' rule; never used as a path
        raise ValueError(f"state name must be a non-empty string, got {name!r}")
    if kind not in KINDS:
        raise ValueError(f"state '{name}': unknown state kind {kind!r} in snapshot metadata")
    native_ms, speedup = entry.get("native_ttl_ms"), entry.get("native_ttl_speedup", 1.0)
    if native_ms is not None and (type(native_ms) is not int or native_ms < 0):
        raise ValueError(
            f"state '{name}': native_ttl_ms must be a non-negative int, got {native_ms!r}")
    if (type(speedup) not in (int, float) or not math.isfinite(speedup) or speedup <= 0):
        raise ValueError(f"state '{name}': native_ttl_speedup must be > 0, got {speedup!r}")
    if not isinstance(entry["ttl_layout"], bool):
        raise ValueError(f"state '{name}': ttl_layout must be true or false")
    key_snap = entry.get("user_key_serializer")
    return RawStateSpec(
        name=name,
        kind=kind,
        value_type=restored_type(name, entry["value_serializer"]),
        key_type=None if key_snap is None else restored_type(name, key_snap, "map key"),
        ttl_layout=entry["ttl_layout"],
        native_ttl_ms=native_ms,
        native_ttl_speedup=float(speedup),
    )
