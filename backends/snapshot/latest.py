"""Finding complete checkpoints under a target folder, and removing interrupted ones.

Each snapshot is the folder `chk-<checkpoint id>` under its target; it is complete exactly when
its `_metadata` was committed (see metadata.py). A folder without one is an interrupted write
(a crash, a kill -9): it is never returned and `clean_up_incomplete` deletes it. One writer per
target folder is assumed (one backend, i.e. one task, per target), as the clean-up would
otherwise race with another writer's checkpoint in progress; that writer's own snapshots still in
flight are passed as `busy`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import Any

import pyarrow.fs as pafs

from backends.errors import CorruptSnapshotError
from backends.snapshot.fsio import Location
from backends.snapshot.handle import SnapshotHandle
from backends.snapshot.metadata import is_complete, read_metadata

PREFIX = "chk-"
log = logging.getLogger(__name__)


def checkpoint_dir_name(checkpoint_id: int) -> str:
    return f"{PREFIX}{checkpoint_id}"


def checkpoint_id_of(name: str) -> int | None:
    if not name.startswith(PREFIX):
        return None
    digits = name[len(PREFIX):]
    return int(digits) if digits.isdigit() else None


def checkpoint_dirs(target: Location) -> list[tuple[int, Location]]:
    out = []
    for info in target.children():
        cid = checkpoint_id_of(info.base_name)
        if cid is not None and info.type == pafs.FileType.Directory:
            out.append((cid, target.child(info.base_name)))
    return sorted(out, key=lambda t: t[0])


def complete_checkpoints(
    target: Location,
    on_unreadable: Callable[[int, Location, CorruptSnapshotError], None] | None = None,
) -> list[tuple[int, Location, dict]]:
    """(id, location, metadata body) of every complete, readable snapshot, oldest first;
    `on_unreadable` hears of each complete one whose metadata is corrupt (it is skipped)."""
    out = []
    for cid, loc in checkpoint_dirs(target):
        if not is_complete(loc):
            continue
        try:
            body = read_metadata(loc)
        except CorruptSnapshotError as exc:
            if on_unreadable is not None:
                on_unreadable(cid, loc, exc)
            continue
        out.append((cid, loc, body))
    return out


def list_checkpoints(directory: Any) -> list[SnapshotHandle]:
    """Every complete snapshot under `directory`, oldest first (unreadable metadata skipped)."""
    return [SnapshotHandle(str(loc), cid, body.get("mode", "full"))
            for cid, loc, body in complete_checkpoints(Location.parse(directory))]


def latest_checkpoint(directory: Any, clean_up: bool = False) -> SnapshotHandle | None:
    """The newest complete snapshot under `directory` (None if there is none).

    Interrupted ones are ignored; with `clean_up=True` they are also deleted."""
    if clean_up:
        clean_up_incomplete(directory)
    unreadable: list[tuple[int, Location, CorruptSnapshotError]] = []
    found = complete_checkpoints(Location.parse(directory),
                                 lambda *skipped: unreadable.append(skipped))
    newest = found[-1][0] if found else -1
    for cid, loc, exc in unreadable:
        if cid > newest:  # a newer checkpoint than the one returned: say why it is not used
            log.warning("latest_checkpoint skips checkpoint %d at %s: %s", cid, loc, exc)
    if not found:
        return None
    cid, loc, body = found[-1]
    return SnapshotHandle(str(loc), cid, body.get("mode", "full"))


def clean_up_incomplete(directory: Any, keep: str | None = None,
                        busy: Collection[str] = ()) -> list[str]:
    """Delete every `chk-*` folder without committed metadata (except the one named `keep` and
    those whose full location is in `busy`: snapshots still being written); returns them."""
    removed = []
    for _, loc in checkpoint_dirs(Location.parse(directory)):
        if loc.name != keep and str(loc) not in busy and not is_complete(loc):
            loc.delete_dir()
            removed.append(str(loc))
    return removed
