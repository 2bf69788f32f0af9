"""Taking snapshots: `KeyedStateBackend.snapshot_async(...)` and `snapshot(...)` land here.

A full snapshot (both backends; a savepoint is one) writes the canonical format of format.py:
one Arrow IPC file per keyed state (`state-NNN-name.arrow`, segments of whole key groups), one per
operator state (`op-NNN.arrow`) and the `_metadata` commit file, into `<target>/chk-<id>/`.

It runs in two phases, as Flink's snapshots do (SnapshotStrategy.syncPrepareResources, then the
asynchronous SnapshotResultSupplier):
- the *synchronous* part runs in the caller's (the task's) thread and holds only what must hold
  the task: the checkpoint's folder is created (Flink's coordinator initializes the checkpoint
  location before the barrier; a few file-system calls), then each state's `freeze()` (heap:
  a shallow copy of its dict plus copy-on-write of list and map containers; RocksDB: an
  iterator, which reads the DB as of its creation), the TTL time full-snapshot cleanup will
  use, and a copy of the operator state;
- the *asynchronous* part runs on a thread of its own (pending.py) while the caller goes on:
  it reads the frozen views, leaves expired units out, encodes, compresses and writes the files,
  and commits the metadata last, so a snapshot that fails or is cancelled never looks complete
  (its partial folder is removed; `result()` raises the original error).
`snapshot(...)` is `snapshot_async(...).result()`. A backend has up to `max_in_flight` snapshots
in flight (1, Flink's default of one concurrent checkpoint, unless the caller says more): their
asynchronous parts queue on the backend's one snapshot thread and run in order, and
`snapshot_async` waits only when `max_in_flight` are in flight (stats.wait_ms). Each synchronous
part takes its own frozen views (heap: the copy-on-write checks every alive view; RocksDB: an
iterator per state and snapshot), so it never depends on an earlier snapshot's asynchronous part.

Full-snapshot TTL cleanup (docs/ttl.md, "Flink's rules") happens in the asynchronous part, as
Flink's StateSnapshotTransformer runs while the snapshot is written: for a state whose registered
descriptor has `cleanup_full_snapshot()`, expired values and map entries and the leading expired
run of each list are left out of the snapshot; local state is untouched. The one difference from
Flink: the filter uses the TTL time read in the synchronous part (the barrier's time), where
Flink's transformer reads its TtlTimeProvider while writing. Under a logical clock the snapshot's
bytes are then exact, whatever the asynchronous thread's timing. The counts and lags it records
are updated under the backend's `stats_lock` (the task thread reads them under the same lock).

`mode="incremental"` is RocksDB's native checkpoint (incremental.py: flush and hard links in the
synchronous part, upload in the asynchronous part). The heap backend has full snapshots only, as
Flink's HashMapStateBackend: asked for an incremental one it writes a full one and says so in
`stats.notes`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from backends.snapshot.arrowfile import MAX_SEGMENT_ROWS, MAX_SEGMENTS, FileLayout, write_file
from backends.snapshot.format import EncodedState, encode_containers, segments
from backends.snapshot.fsio import Location
from backends.snapshot.handle import SnapshotHandle, SnapshotStats
from backends.snapshot.incremental import incremental_sync_part
from backends.snapshot.parts import (
    commit_snapshot,
    discard_partial,
    prepare_snapshot_dir,
    safe_file_part,
    snapshot_body,
)
from backends.snapshot.pending import AsyncPart, SnapshotFuture
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


def take_snapshot_async(
    backend: Any, checkpoint_id: int, target: Any, mode: str = "full",
    executor: Any = None, busy: Any = (), **options: Any
) -> SnapshotFuture:
    """Run the synchronous part of a snapshot of `backend` to `<target>/chk-<checkpoint_id>`
    now, start its asynchronous part on its own thread, and return the SnapshotFuture.

    The caller (the backend) has waited until fewer than its maximum are in flight; `busy` are
    the folders those still write (left alone by the clean-up of interrupted ones); `executor`
    is the thread the asynchronous part runs on, behind theirs (None: a new thread). Bad
    arguments and failures of the synchronous part raise here; failures of the asynchronous
    part raise from `result()`. Options: `retained_checkpoints` (incremental only: earlier
    incremental checkpoints kept besides the newest, default 1)."""
    if isinstance(checkpoint_id, bool) or not isinstance(checkpoint_id, int) or checkpoint_id < 0:
        raise ValueError(f"checkpoint_id must be a non-negative int, got {checkpoint_id!r}")
    if mode not in MODES:
        raise ValueError(f"unknown snapshot mode {mode!r}; expected one of {', '.join(MODES)}")
    location = Location.parse(target)
    incremental = mode == "incremental" and backend.native_checkpoints
    if not incremental:
        retained = options.pop("retained_checkpoints", None)
        if options:
            raise ValueError(f"unknown snapshot option(s): {sorted(options)}")
        if retained is not None and mode == "full":
            raise ValueError("retained_checkpoints applies to incremental checkpoints only")
    stats = SnapshotStats(checkpoint_id, "incremental" if incremental else "full", backend.kind)
    if mode == "incremental" and not incremental:
        stats.notes.append(
            f"the {backend.kind} backend has full snapshots only (as Flink's HashMapStateBackend);"
            " took a full snapshot")
    sync_start = time.perf_counter()
    # The checkpoint's folder first (Flink's coordinator initializes the checkpoint location
    # before the barrier): an existing complete checkpoint raises here, and from now on a
    # failure leaves an incomplete folder, never a complete-looking one.
    snap = prepare_snapshot_dir(location, checkpoint_id, busy)
    try:
        if incremental:
            body = incremental_sync_part(backend, checkpoint_id, location, snap, stats,
                                         **options)
        else:
            body = full_sync_part(backend, checkpoint_id, snap, stats)
    except BaseException:
        discard_partial(snap)
        raise
    sync_end = time.perf_counter()
    stats.sync_ms = (sync_end - sync_start) * 1000.0
    future = SnapshotFuture(checkpoint_id, stats.mode, stats)
    future.folder = str(snap)
    future.start(body, sync_end, executor)
    return future


def full_sync_part(backend: Any, checkpoint_id: int, snap: Location, stats: SnapshotStats
                   ) -> AsyncPart:
    """Freeze every state and take what the full snapshot needs of the backend now; returns
    the asynchronous part, which touches the backend only to record cleanup counts."""
    frozen: list[tuple[str, Any, Any, tuple[int, int] | None]] = []
    try:
        for name, raw in backend.raw_states():
            ttl = _full_snapshot_ttl(backend, name, raw.spec)  # the barrier's TTL time
            frozen.append((name, raw.spec, raw.freeze(), ttl))
        op_data = backend.operator_state_data()
        body = snapshot_body(backend, checkpoint_id, "full")
    except BaseException:
        for _, _, view, _ in frozen:
            view.release()
        raise
    max_parallelism = backend.max_parallelism

    def write(check_cancelled: Callable[[], None]) -> SnapshotHandle:
        try:
            states_meta = []
            for i, (name, spec, view, ttl) in enumerate(frozen):
                check_cancelled()
                enc = _encode_state(backend, name, spec, view, ttl, max_parallelism, stats)
                view.release()  # ends copy-on-write for this state as early as possible
                file = f"state-{i:03d}-{safe_file_part(spec.name)}.arrow"
                layout = write_file(snap.child(file), enc.table.schema,
                                    segments(enc, MAX_SEGMENT_ROWS, MAX_SEGMENTS))
                states_meta.append(state_entry(spec, file, enc.encodings, layout, enc.keys))
                stats.bytes_per_state[spec.name] = layout.size
            body["states"] = states_meta
            commit_snapshot(snap, body, op_data, stats, check_cancelled)
        except BaseException:
            discard_partial(snap)
            raise
        finally:
            for _, _, view, _ in frozen:
                view.release()
        stats.total_bytes = (sum(stats.bytes_per_state.values()) + stats.operator_state_bytes
                             + stats.metadata_bytes)
        stats.uploaded_bytes = stats.total_bytes
        stats.files = len(states_meta) + len(body["operator_states"]) + 1
        return SnapshotHandle(str(snap), checkpoint_id, "full", stats)

    return write


def state_entry(spec: Any, file: str, encodings: dict[str, str], layout: FileLayout,
                keys: int) -> dict[str, Any]:
    entry = spec_to_json(spec)
    entry.update({"file": file, "encodings": encodings, "keys": keys,
                  "layout": layout.to_json()})
    return entry


# --------------------------------------------------------------------------- keyed rows
def _encode_state(backend: Any, name: str, spec: Any, view: Any,
                  ttl: tuple[int, int] | None, max_parallelism: int, stats: SnapshotStats
                  ) -> EncodedState:
    keys, containers, key_groups = _entries(view)
    if ttl is not None:
        keys, containers, key_groups = _cleanup(backend, name, spec, ttl, keys, containers,
                                                key_groups, max_parallelism, stats)
    return encode_containers(spec, keys, containers, max_parallelism, key_groups)


def _entries(view: Any) -> tuple[list, list, np.ndarray | None]:
    """Keys, containers and (when the storage knows them) key groups of one frozen state.

    The heap's frozen dict is read directly (key groups are then computed vectorized);
    RocksDB's keys carry their key group."""
    table = getattr(view, "table", None)
    if isinstance(table, dict):
        return list(table.keys()), list(table.values()), None
    kgs, keys, containers = [], [], []
    for kg, key, container in view.iter_entries():
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
             containers: list, key_groups: np.ndarray | None, max_parallelism: int,
             stats: SnapshotStats) -> tuple[list, list, np.ndarray | None]:
    """Leave expired units out (Flink's full-snapshot transformer); local state is untouched.
    Runs on the snapshot's thread: the backend's counters are updated under its stats_lock."""
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
        cutoff = expiry_cutoff(now, ttl)  # lag: how long each unit was expired at the snapshot
        lags = [cutoff - ts for c in dropped for ts in unit_timestamps(shape, c)]
        with backend.stats_lock:
            counters = backend.counters(name)
            counters.full_snapshot += units
            counters.lags["full_snapshot"].record_many(lags)
        stats.entries_filtered += units
        stats.entries_filtered_per_state[name] = units
        left_out = encode_containers(spec, dropped_keys, dropped, max_parallelism)
        stats.bytes_filtered += left_out.table.nbytes
    keys = [keys[i] for i in kept_idx]
    if key_groups is not None:
        key_groups = key_groups[np.array(kept_idx, dtype=np.int64)]
    return keys, kept, key_groups
