"""What every snapshot writes whatever its mode: its folder, its metadata header and the
operator-state files. Full (writer.py) and incremental (incremental.py) snapshots both use it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from typing import Any

from backends.snapshot import operator_state as ops
from backends.snapshot.arrowfile import write_file
from backends.snapshot.fsio import Location
from backends.snapshot.latest import checkpoint_dir_name, clean_up_incomplete
from backends.snapshot.metadata import commit_metadata, is_complete

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def safe_file_part(name: str) -> str:
    """A state's name as part of a file name: path-safe characters only, at most 40."""
    return _SAFE.sub("_", name)[:40]


def prepare_snapshot_dir(target: Location, checkpoint_id: int, busy: Iterable[str] = ()
                         ) -> Location:
    """`<target>/chk-<id>`, emptied of an interrupted earlier attempt; never a complete one.
    `busy`: the folders (str of their Location) of this backend's snapshots still in flight,
    incomplete until their asynchronous parts commit, so they are not interrupted ones."""
    target.makedirs()
    snap = target.child(checkpoint_dir_name(checkpoint_id))
    busy = {b for b in busy if b is not None}
    if str(snap) in busy:
        raise FileExistsError(f"checkpoint {checkpoint_id} is still being written at {snap}")
    if is_complete(snap):
        raise FileExistsError(f"checkpoint {checkpoint_id} already exists at {snap}")
    clean_up_incomplete(target, busy=busy)
    snap.makedirs()
    return snap


def discard_partial(snap: Location) -> None:
    """Remove what a failed or cancelled snapshot wrote into its folder (best effort: without
    `_metadata` the folder is incomplete anyway, and the next snapshot's
    `prepare_snapshot_dir` removes what is left)."""
    if is_complete(snap):
        return  # committed: a complete snapshot is never deleted here
    with contextlib.suppress(OSError):
        snap.delete_dir()


def snapshot_body(backend: Any, checkpoint_id: int, mode: str) -> dict[str, Any]:
    """The metadata fields every snapshot has: id, mode, backend and its key groups."""
    kgr = backend.key_group_range
    return {
        "checkpoint_id": checkpoint_id,
        "mode": mode,
        "backend": backend.kind,
        "max_parallelism": backend.max_parallelism,
        "key_group_range": [kgr.start, kgr.end],
    }


def write_operator_states(snap: Location, data: list[ops.OperatorStateData]
                          ) -> tuple[list[dict[str, Any]], int]:
    """One Arrow file per operator state (a single segment); returns (metadata, bytes)."""
    meta, total = [], 0
    for i, entry in enumerate(data):
        table, encodings = ops.to_table(entry)
        file = f"op-{i:03d}-{safe_file_part(entry.name)}.arrow"
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


def commit_snapshot(snap: Location, body: dict[str, Any], op_data: list[ops.OperatorStateData],
                    stats: Any, check_cancelled: Any, *also_durable: Location) -> None:
    """The end every snapshot mode shares: its operator-state files, its data files' directory
    entries made durable (and those of ``also_durable``, e.g. the shared SST folder) before the
    commit, a last cancellation check, then ``_metadata`` committed last."""
    body["operator_states"], stats.operator_state_bytes = write_operator_states(snap, op_data)
    snap.fsync()
    for folder in also_durable:
        folder.fsync()
    check_cancelled()
    stats.metadata_bytes = commit_metadata(snap, body)
