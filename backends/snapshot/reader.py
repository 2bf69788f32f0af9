"""Restoring snapshots into a fresh backend of any kind, at any parallelism.

`backends.restore_backend(kind, snapshots, ...)` creates the backend and calls `restore`. Given the
snapshots of the old tasks, the new backend reads exactly the key groups of its own
`key_group_range` (Flink's rescaling): snapshots whose range does not overlap are not opened
beyond their metadata, and from the others only the needed key-group segments are read. Operator
state is redistributed (operator_state.py), which needs the snapshots of *every* old task.

Nothing is loaded before everything needed has been read and verified, so a corrupt or missing
file fails the restore with CorruptSnapshotError naming the file, never with a partial state.
Restored states keep the spec they were written with; registering them with a new descriptor
migrates them (see migration.py), and `descriptors=[...]` resolves compatibility at restore
(failing fast with StateMigrationError) and, on the heap backend, migrates eagerly.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import pyarrow as pa

from backends import descriptors as d
from backends.errors import CorruptSnapshotError
from backends.keygroups import KeyGroupRange
from backends.schema import restored_type
from backends.snapshot import operator_state as ops
from backends.snapshot.arrowfile import FileLayout, read_segments
from backends.snapshot.format import column_type, decode_rows, state_schema
from backends.snapshot.fsio import ReadCounter
from backends.snapshot.handle import RestoreStats
from backends.snapshot.incremental import restore_incremental
from backends.snapshot.opened import (
    OpenSnapshot,
    data_file,
    open_snapshot,
    overlap,
    wanted_key_groups,
)
from backends.snapshot.specs import spec_from_json
from backends.storage.base import ABSENT


def restore(
    backend: Any,
    snapshots: list[Any],
    descriptors: list[d.StateDescriptor] | None = None,
    operator_index: int | None = None,
    parallelism: int | None = None,
) -> RestoreStats:
    """Fill the fresh `backend` from `snapshots`; the stats are also `backend.restore_stats`."""
    if backend.registered_state_names():
        raise ValueError("restore needs a fresh backend without states")
    if not snapshots:
        raise ValueError("restore needs at least one snapshot")
    start = time.perf_counter()
    counter = ReadCounter()
    stats = RestoreStats(snapshots=len(snapshots))
    backend.restore_stats = stats
    opened = sorted((open_snapshot(s, counter) for s in snapshots),
                    key=lambda s: s.key_group_range.start)
    _check_layout(backend, opened)
    mine = backend.key_group_range
    relevant = [s for s in opened if overlap(s.key_group_range, mine) is not None]
    stats.snapshots_read = len(relevant)
    stats.key_groups = len(mine)
    stats.mode = "incremental" if any(s.mode == "incremental" for s in relevant) else "full"
    full = [s for s in relevant if s.mode == "full"]
    incremental = [s for s in relevant if s.mode == "incremental"]
    # Phase 1: read and verify everything needed. Phase 2: load.
    pending = [_read_state(backend, s, e, counter) for s in full for e in s.body["states"]]
    op_pending = _read_operator_states(backend, opened, operator_index, parallelism, counter)
    if incremental:
        stats.keys_restored += restore_incremental(backend, incremental, counter, stats)
    for spec, encodings, batches, size in pending:
        stats.keys_restored += backend.load_restored(spec, decode_rows(spec, encodings, batches))
        stats.bytes_per_state[spec.name] = stats.bytes_per_state.get(spec.name, 0) + size
    store = backend.operator_state() if op_pending else None
    for entry in op_pending:
        store.restore_data(entry)
    stats.bytes_read, stats.files_read = counter.bytes, counter.files
    if descriptors:
        _apply_descriptors(backend, descriptors)
    stats.duration_ms = (time.perf_counter() - start) * 1000.0
    return stats


def _check_layout(backend: Any, opened: list[OpenSnapshot]) -> None:
    for s in opened:
        if s.body["max_parallelism"] != backend.max_parallelism:
            raise ValueError(
                f"snapshot {s.location} was taken with max_parallelism "
                f"{s.body['max_parallelism']}, the new backend has {backend.max_parallelism}; "
                "pass the same max_parallelism (key groups cannot be re-split)")
    for a, b in itertools.pairwise(opened):
        if a.key_group_range.end >= b.key_group_range.start:
            raise ValueError(
                f"snapshots {a.location} and {b.location} both hold key groups "
                f"{b.key_group_range.start}..{min(a.key_group_range.end, b.key_group_range.end)}"
                ": give the snapshots of distinct old tasks of one checkpoint")


def _read_state(backend: Any, snap: OpenSnapshot, entry: dict, counter: ReadCounter
                ) -> tuple[Any, dict, list[pa.RecordBatch], int]:
    try:
        spec = spec_from_json(entry)
        encodings = dict(entry["encodings"])
        layout = FileLayout.from_json(entry["layout"])
        schema = state_schema(spec, encodings)
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptSnapshotError(
            f"snapshot metadata of {snap.location} describes state {entry.get('name')!r} "
            f"badly: {exc}") from None
    before = counter.bytes
    batches = read_segments(data_file(snap, entry.get("file")), layout, schema, counter,
                            wanted_key_groups(snap, backend.key_group_range))
    return spec, encodings, batches, counter.bytes - before


# --------------------------------------------------------------------------- operator state
def _task_position(backend: Any, index: int | None, parallelism: int | None
                   ) -> tuple[int, int] | None:
    """(operator index, parallelism) of the new task: given, or inferred from its key groups."""
    maxp, mine = backend.max_parallelism, backend.key_group_range
    if index is not None or parallelism is not None:
        if index is None or parallelism is None:
            raise ValueError("give both operator_index and parallelism")
        if KeyGroupRange.of_operator(index, parallelism, maxp) != mine:
            raise ValueError(
                f"operator {index} of {parallelism} owns "
                f"{KeyGroupRange.of_operator(index, parallelism, maxp)}, not the backend's {mine}")
        return index, parallelism
    found = set()
    for p in range(1, maxp + 1):
        guess = mine.start * p // maxp
        for i in (guess - 1, guess, guess + 1):
            if 0 <= i < p and KeyGroupRange.of_operator(i, p, maxp) == mine:
                found.add((i, p))
    return found.pop() if len(found) == 1 else None


def _read_operator_states(backend: Any, opened: list[OpenSnapshot], index: int | None,
                          parallelism: int | None, counter: ReadCounter
                          ) -> list[ops.OperatorStateData]:
    by_name: dict[str, list[tuple[int, OpenSnapshot, dict]]] = {}
    for task, snap in enumerate(opened):
        for entry in snap.body.get("operator_states", []):
            by_name.setdefault(entry["name"], []).append((task, snap, entry))
    if not by_name:
        return []
    position = _task_position(backend, index, parallelism)
    out = []
    for name, entries in sorted(by_name.items()):
        mode = entries[0][2]["mode"]
        if mode not in ops.MODES or any(e["mode"] != mode for _, _, e in entries):
            raise ValueError(f"operator state '{name}' has different modes in the old tasks")
        if position is None and mode == ops.SPLIT and len(opened) > 1:
            raise ValueError(
                f"cannot tell which task of which parallelism owns {backend.key_group_range}; "
                "pass operator_index= and parallelism= to restore_backend to redistribute "
                f"operator state '{name}'")
        new_index, new_parallelism = position or (0, 1)
        value_type = restored_type(name, entries[0][2]["value_serializer"])
        key_snap = entries[0][2].get("key_serializer")
        key_type = None if key_snap is None else restored_type(name, key_snap, "map key")
        per_task: list[Any] = [ABSENT] * len(opened)
        needed = {t for t, _, _ in entries}
        if mode == ops.BROADCAST:
            present = sorted(needed)
            needed = {present[new_index % len(present)]}
        for task, snap, entry in entries:
            if task in needed:
                per_task[task] = _read_operator_state(snap, entry, mode, value_type, key_type,
                                                      counter)
        data = ops.redistribute(mode, per_task, new_index, new_parallelism)
        out.append(ops.OperatorStateData(name, mode, value_type, key_type, data))
    return out


def _read_operator_state(snap: OpenSnapshot, entry: dict, mode: str, value_type: Any,
                         key_type: Any, counter: ReadCounter) -> Any:
    try:
        layout = FileLayout.from_json(entry["layout"])
        encodings = dict(entry["encodings"])
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptSnapshotError(
            f"snapshot metadata of {snap.location} describes operator state "
            f"{entry.get('name')!r} badly: {exc}") from None
    fields = []
    if mode == ops.BROADCAST:
        fields.append(pa.field("key", column_type(key_type, encodings["key"])))
    fields.append(pa.field("value", column_type(value_type, encodings["value"])))
    batches = read_segments(data_file(snap, entry.get("file")), layout, pa.schema(fields),
                            counter)
    return ops.from_batches(mode, value_type, key_type, encodings, batches)


# --------------------------------------------------------------------------- descriptors
def _apply_descriptors(backend: Any, descriptors: list[d.StateDescriptor]) -> None:
    """Resolve compatibility now (the heap backend also migrates and registers now)."""
    for desc in descriptors:
        if not isinstance(desc, d.StateDescriptor):
            raise TypeError(f"descriptors must be state descriptors, got {desc!r}")
        backend.resolve_restored(desc)
