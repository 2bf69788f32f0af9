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

import re
import time
from typing import Any

import numpy as np

from backends.snapshot import operator_state as ops
from backends.snapshot.arrowfile import MAX_SEGMENT_ROWS, MAX_SEGMENTS, FileLayout, write_file
from backends.snapshot.format import EncodedState, encode_containers, segments
from backends.snapshot.fsio import Location
from backends.snapshot.handle import SnapshotHandle, SnapshotStats
from backends.snapshot.latest import checkpoint_dir_name, clean_up_incomplete
from backends.snapshot.metadata import commit_metadata, is_complete
from backends.snapshot.specs import spec_to_json
from backends.ttl.expiry import count_units, effective_now, filter_container
from backends.ttl_config import StateTtlConfig

MODES = ("full", "incremental")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")
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
        from backends.snapshot.incremental import take_incremental

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


def prepare_snapshot_dir(target: Location, checkpoint_id: int) -> Location:
    """`<target>/chk-<id>`, emptied of an interrupted earlier attempt; never a complete one."""
    target.makedirs()
    snap = target.child(checkpoint_dir_name(checkpoint_id))
    if is_complete(snap):
        raise FileExistsError(f"checkpoint {checkpoint_id} already exists at {snap}")
    clean_up_incomplete(target)
    snap.makedirs()
    return snap


def write_full(backend: Any, checkpoint_id: int, target: Location, stats: SnapshotStats
               ) -> SnapshotHandle:
    start = time.perf_counter()
    snap = prepare_snapshot_dir(target, checkpoint_id)
    # ---- synchronous part: take every state's rows
    sync_start = time.perf_counter()
    encoded: list[tuple[Any, EncodedState]] = []
    for name in sorted(backend._raw):
        raw = backend._raw[name]
        encoded.append((raw.spec, _encode_state(backend, name, raw, stats)))
    op_data = operator_states_of(backend)
    stats.sync_ms = (time.perf_counter() - sync_start) * 1000.0
    # ---- asynchronous part: write, then commit
    states_meta = []
    for i, (spec, enc) in enumerate(encoded):
        file = f"state-{i:03d}-{_SAFE.sub('_', spec.name)[:40]}.arrow"
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


def snapshot_body(backend: Any, checkpoint_id: int, mode: str) -> dict[str, Any]:
    kgr = backend.key_group_range
    return {
        "checkpoint_id": checkpoint_id,
        "mode": mode,
        "backend": backend.kind,
        "max_parallelism": backend.max_parallelism,
        "key_group_range": [kgr.start, kgr.end],
    }


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
        backend.counters(name).full_snapshot += units
        stats.entries_filtered += units
        stats.entries_filtered_per_state[name] = units
        left_out = encode_containers(spec, dropped_keys, dropped, backend.max_parallelism)
        stats.bytes_filtered += left_out.table.nbytes
    keys = [keys[i] for i in kept_idx]
    if key_groups is not None:
        key_groups = key_groups[np.array(kept_idx, dtype=np.int64)]
    return keys, kept, key_groups


# --------------------------------------------------------------------------- operator state
def operator_states_of(backend: Any) -> list[ops.OperatorStateData]:
    store = getattr(backend, "_operator_state", None)
    return [] if store is None else store.snapshot_data()


def write_operator_states(snap: Location, data: list[ops.OperatorStateData]
                          ) -> tuple[list[dict[str, Any]], int]:
    """One Arrow file per operator state (a single segment); returns (metadata, bytes)."""
    meta, total = [], 0
    for i, entry in enumerate(data):
        table, encodings = ops.to_table(entry)
        file = f"op-{i:03d}-{_SAFE.sub('_', entry.name)[:40]}.arrow"
        batches = table.combine_chunks().to_batches()
        layout = write_file(snap.child(file), table.schema,
                            [([(0, b.num_rows)], b) for b in batches])
        item: dict[str, Any] = {"name": entry.name, "mode": entry.mode,
                                "value_serializer": entry.value_type.snapshot(),
                                "file": file, "encodings": encodings,
                                "layout": layout.to_json()}
        if entry.key_type is not None:
            item["key_serializer"] = entry.key_type.snapshot()
        meta.append(item)
        total += layout.size
    return meta, total
