"""Taking snapshots: `KeyedStateBackend.snapshot(...)` lands here.

A full snapshot (both backends; a savepoint is one) writes the canonical format of format.py:
one Arrow IPC file per keyed state (`state-NNN-name.arrow`, segments of whole key groups), one per
operator state (`op-NNN.arrow`) and the `_metadata` commit file, into `<target>/chk-<id>/`.

It runs in two phases, named after Flink's: the *synchronous* part takes every state's rows
(the consistent view: after it the live state may change freely), the *asynchronous* part
compresses and writes the files and commits the metadata. Everything runs in the caller's
thread; the split is measured so the two costs can be compared with Flink's.

Full-snapshot TTL cleanup (flink-ttl-facts §2.1) happens in the synchronous part: for a state
whose registered descriptor has `cleanup_full_snapshot()`, expired values and map entries and
the leading expired run of each list are left out of the snapshot; local state is untouched.

`mode="incremental"` is RocksDB's native checkpoint (incremental.py). The heap backend has full
snapshots only, as Flink's HashMapStateBackend: asked for an incremental one it writes a full
one and says so in `stats.notes`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from backends.snapshot.arrowfile import MAX_SEGMENT_ROWS, MAX_SEGMENTS, FileLayout, write_file
from backends.snapshot.format import EncodedState, encode_containers, segments
from backends.snapshot.fsio import Location
from backends.snapshot.handle import SnapshotHandle, SnapshotStats
from backends.snapshot.incremental import take_incremental
from backends.snapshot.metadata import commit_metadata
from backends.snapshot.parts import (
    prepare_snapshot_dir,
    safe_file_part,
    snapshot_body,
    write_operator_states,
)
from backends.snapshot.specs import spec_to_json
from backends.ttl.expiry import (
    count_units,
    effective_now,
    expiry_cutoff,
    filter_container,
    unit_timestamps,
)
from backends.ttl_config import StateTtlConfig

MODES = ("full", "incremental")
_EVENT_TIME = StateTtlConfig.TtlTimeCharacteristic.EventTime


def take_snapshot(
    backend: Any, checkpoint_id: int, target: Any, mode: str = "full", **options: Any
) -> SnapshotHandle:
    """Write a snapshot of `backend` to `<target>/chk-<checkpoint_id>` and return its handle.

    Options: `retained_checkpoints` (incremental only: earlier incremental checkpoints kept
    besides the newest, default 1)."""
    if isinstance(checkpoint_id, bool) or not isinstance(checkpoint_id, int) or checkpoint_id < 0:
        raise ValueError(f"checkpoint_id must be a non-negative int, got {checkpoint_id!r}")
    if mode not in MODES:
        raise ValueError(f"unknown snapshot mode {mode!r}; expected one of {', '.join(MODES)}")
    location = Location.parse(target)
    if mode == "incremental" and backend.kind == "rocksdb":
        return take_incremental(backend, checkpoint_id, location, **options)
    retained = options.pop("retained_checkpoints", None)
    if options:
        raise ValueError(f"unknown snapshot option(s): {sorted(options)}")
    if retained is not None and mode == "full":
        raise ValueError("retained_checkpoints applies to incremental checkpoints only")
    stats = SnapshotStats(checkpoint_id, "full", backend.kind)
    if mode == "incremental":
        stats.notes.append(
            f"the {backend.kind} backend has full snapshots only (as Flink's HashMapStateBackend);"
            " took a full snapshot")
    return write_full(backend, checkpoint_id, location, stats)


def write_full(backend: Any, checkpoint_id: int, target: Location, stats: SnapshotStats
               ) -> SnapshotHandle:
    start = time.perf_counter()
    snap = prepare_snapshot_dir(target, checkpoint_id)
    # ---- synchronous part: take every state's rows
    sync_start = time.perf_counter()
    encoded: list[tuple[Any, EncodedState]] = []
    for name, raw in backend.raw_states():
        encoded.append((raw.spec, _encode_state(backend, name, raw, stats)))
    op_data = backend.operator_state_data()
    stats.sync_ms = (time.perf_counter() - sync_start) * 1000.0
    # ---- asynchronous part: write, then commit
    states_meta = []
    for i, (spec, enc) in enumerate(encoded):
        file = f"state-{i:03d}-{safe_file_part(spec.name)}.arrow"
        layout = write_file(snap.child(file), enc.table.schema,
                            segments(enc, MAX_SEGMENT_ROWS, MAX_SEGMENTS))
        states_meta.append(state_entry(spec, file, enc.encodings, layout, enc.keys))
        stats.bytes_per_state[spec.name] = layout.size
    op_meta, stats.operator_state_bytes = write_operator_states(snap, op_data)
    body = snapshot_body(backend, checkpoint_id, "full")
    body["states"] = states_meta
    body["operator_states"] = op_meta
    snap.fsync()  # the data files' directory entries are durable before the commit
    stats.metadata_bytes = commit_metadata(snap, body)
    stats.total_bytes = (sum(stats.bytes_per_state.values()) + stats.operator_state_bytes
                         + stats.metadata_bytes)
    stats.uploaded_bytes = stats.total_bytes
    stats.files = len(states_meta) + len(op_meta) + 1
    stats.total_ms = (time.perf_counter() - start) * 1000.0
    return SnapshotHandle(str(snap), checkpoint_id, "full", stats)


def state_entry(spec: Any, file: str, encodings: dict[str, str], layout: FileLayout,
                keys: int) -> dict[str, Any]:
    entry = spec_to_json(spec)
    entry.update({"file": file, "encodings": encodings, "keys": keys,
                  "layout": layout.to_json()})
    return entry


# --------------------------------------------------------------------------- keyed rows
def _encode_state(backend: Any, name: str, raw: Any, stats: SnapshotStats) -> EncodedState:
    spec = raw.spec
    keys, containers, key_groups = _entries(raw)
    ttl = _full_snapshot_ttl(backend, name, spec)
    if ttl is not None:
        keys, containers, key_groups = _cleanup(backend, name, spec, ttl, keys, containers,
                                                key_groups, stats)
    return encode_containers(spec, keys, containers, backend.max_parallelism, key_groups)


def _entries(raw: Any) -> tuple[list, list, np.ndarray | None]:
    """Keys, containers and (when the storage knows them) key groups of one raw state.

    The heap's flat dict is read directly (key groups are then computed vectorized);
    RocksDB's keys carry their key group."""
    table = getattr(raw, "table", None)
    if isinstance(table, dict):
        return list(table.keys()), list(table.values()), None
    kgs, keys, containers = [], [], []
    for kg, key, container in raw.iter_entries():
        kgs.append(kg)
        keys.append(key)
        containers.append(container)
    return keys, containers, np.array(kgs, dtype=np.int64)


def _full_snapshot_ttl(backend: Any, name: str, spec: Any) -> tuple[int, int] | None:
    """(ttl, effective now) when the registered descriptor asks for full-snapshot cleanup."""
    desc = backend.descriptor(name)
    if desc is None or not desc.ttl_enabled or not spec.ttl_layout:
        return None
    cfg = desc.ttl_config
    if not cfg.get_cleanup_strategies().in_full_snapshot():
        return None
    clock = backend.event_clock if cfg.get_ttl_time_characteristic() is _EVENT_TIME else (
        backend.clock)
    return cfg.get_ttl(), effective_now(clock.now())


def _cleanup(backend: Any, name: str, spec: Any, ttl_now: tuple[int, int], keys: list,
             containers: list, key_groups: np.ndarray | None, stats: SnapshotStats
             ) -> tuple[list, list, np.ndarray | None]:
    """Leave expired units out (Flink's full-snapshot transformer); local state is untouched."""
    ttl, now = ttl_now
    shape = spec.shape
    kept_idx: list[int] = []
    kept: list = []
    dropped_keys: list = []
    dropped: list = []
    for i, c in enumerate(containers):
        part = filter_container(shape, c, ttl, now, prefix_only=True)
        if part is not None:
            kept_idx.append(i)
            kept.append(part)
        if part is c or (shape == "map" and part is not None and len(part) == len(c)):
            continue
        dropped_keys.append(keys[i])
        if shape == "value" or part is None:
            dropped.append(c)
        elif shape == "list":
            dropped.append(c[: len(c) - len(part)])
        else:
            dropped.append({k: v for k, v in c.items() if k not in part})
    units = sum(count_units(shape, c) for c in dropped)
    if units:
        counters = backend.counters(name)
        counters.full_snapshot += units
        cutoff = expiry_cutoff(now, ttl)  # lag: how long each unit was expired at the snapshot
        for c in dropped:
            counters.lags["full_snapshot"].record_many(
                cutoff - ts for ts in unit_timestamps(shape, c))
        stats.entries_filtered += units
        stats.entries_filtered_per_state[name] = units
        left_out = encode_containers(spec, dropped_keys, dropped, backend.max_parallelism)
        stats.bytes_filtered += left_out.table.nbytes
    keys = [keys[i] for i in kept_idx]
    if key_groups is not None:
        key_groups = key_groups[np.array(kept_idx, dtype=np.int64)]
    return keys, kept, key_groups
