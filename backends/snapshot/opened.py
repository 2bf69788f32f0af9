"""A snapshot opened for restore, and the only way to turn a name from its metadata into a path.

A snapshot is untrusted input: checkpoints are handed between machines and people (savepoints
are made for that), and `_metadata` is JSON whose crc32 anyone can recompute. So every file name
the metadata gives must be one plain path component (`FILE_NAME`), and on a local filesystem the
file must resolve (symlinks followed) inside the folder it is read from: the snapshot's own
folder, or for an incremental checkpoint's shared SST files, the `shared` folder of its
checkpoint directory. Anything else is refused with CorruptSnapshotError naming the problem,
before a byte of state is loaded.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from backends.errors import CorruptSnapshotError
from backends.keygroups import KeyGroupRange
from backends.snapshot.fsio import Location, ReadCounter
from backends.snapshot.metadata import read_metadata

# One path component: letters, digits, '_', '.', '-', starting with a letter or digit (so never
# "", "." or ".."), at most 255 characters; no separator, no drive, no NUL.
FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,254}")


@dataclass
class OpenSnapshot:
    """One snapshot's verified metadata and where it lives."""

    location: Location
    body: dict
    key_group_range: KeyGroupRange

    @property
    def mode(self) -> str:
        return self.body["mode"]

    def corrupt(self, problem: str) -> CorruptSnapshotError:
        """The error for a problem found in this snapshot's metadata."""
        return CorruptSnapshotError(f"snapshot metadata of {self.location} {problem}")


def open_snapshot(snapshot: Any, counter: ReadCounter) -> OpenSnapshot:
    loc = Location.parse(snapshot)
    body = read_metadata(loc, counter)
    try:
        start, end = body["key_group_range"]
        kgr = KeyGroupRange(int(start), int(end))
        int(body["max_parallelism"])
        if body["mode"] not in ("full", "incremental"):
            raise ValueError(f"unknown mode {body['mode']!r}")
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptSnapshotError(f"snapshot metadata of {loc} is malformed: {exc}") from None
    return OpenSnapshot(loc, body, kgr)


def checked_file_name(snap: OpenSnapshot, name: Any, what: str = "file") -> str:
    """`name` if it is one plain path component, else CorruptSnapshotError."""
    if not isinstance(name, str) or not FILE_NAME.fullmatch(name):
        raise snap.corrupt(
            f"names a bad {what} {name!r}: not a plain file name (letters, digits, '_', '.', "
            "'-'; no path separator, no leading dot)")
    return name


def _inside(path: str, folder: str) -> bool:
    return os.path.commonpath([path, folder]) == folder


def file_in(snap: OpenSnapshot, folder: Location, name: Any, what: str = "file",
            within: Location | None = None) -> Location:
    """`folder/name` for a name read from `snap`'s metadata. Locally, the file must resolve
    inside `folder`, and `folder` itself inside `within` when given (no symlink leads out)."""
    loc = folder.child(checked_file_name(snap, name, what))
    if not loc.local:
        return loc
    real_folder = os.path.realpath(folder.path)
    if within is not None and not _inside(real_folder, os.path.realpath(within.path)):
        raise snap.corrupt(
            f"reads {what}s from {folder}, which resolves to {real_folder}, outside {within}")
    real = os.path.realpath(loc.path)
    if os.path.dirname(real) != real_folder:
        raise snap.corrupt(
            f"names {what} {name!r}, which resolves to {real}, outside {folder} (a symlink)")
    return loc


def data_file(snap: OpenSnapshot, name: Any) -> Location:
    """A data file named by the metadata: it must be in the snapshot's own folder."""
    return file_in(snap, snap.location, name)


def overlap(a: KeyGroupRange, b: KeyGroupRange) -> KeyGroupRange | None:
    start, end = max(a.start, b.start), min(a.end, b.end)
    return KeyGroupRange(start, end) if start <= end else None


def wanted_key_groups(snap: OpenSnapshot, mine: KeyGroupRange) -> KeyGroupRange | None:
    """The key groups to read from `snap`: None means all of them."""
    common = overlap(snap.key_group_range, mine)
    return None if common == snap.key_group_range else common
