"""The files of a Spark checkpoint folder, read while the query may still write and delete
them: both Spark lanes measure their checkpoint folders this way, with one definition of what
a batch uploaded (:class:`StateUploads`)."""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

#: The state store's part of a checkpoint folder: Spark writes its stores' changelogs, snapshots
#: and schemas under ``<checkpoint>/state/<operator>/<partition>/``; the rest of the folder
#: (``offsets``, ``commits``, ``sources``, ``metadata``) is the query's progress log, whatever
#: its state.
STATE_SUBDIR = "state"


def folder_files(root: Path) -> dict[str, int]:
    """Path -> size of every file under ``root`` (Spark's ``.crc`` files included: they are on
    disk too; files vanishing meanwhile are skipped)."""
    found: dict[str, int] = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            with suppress(OSError):
                found[path] = os.path.getsize(path)
    return found


def folder_bytes(root: Path) -> int:
    """Bytes of every file under ``root``."""
    return sum(folder_files(root).values())


def state_files(checkpoint: Path) -> dict[str, int]:
    """Path -> size of the state store's files of a checkpoint folder (``state/**``)."""
    return folder_files(checkpoint / STATE_SUBDIR)


class StateUploads:
    """The state store's files of one checkpoint folder, measured after batch after batch.

    What a batch *uploaded* is the bytes of the ``state/**`` files that are new or changed
    (another size) since the previous measurement: the changelog or snapshot files the batch's
    commit wrote, and the snapshots Spark's maintenance thread wrote meanwhile. Files Spark
    deleted (old versions past ``minBatchesToRetain``) are not subtracted: an upload is not
    undone by a later deletion. Both Spark lanes use this one definition.

    :meth:`baseline` takes the folder as it is without counting it (the warm-up batch's files
    are not the measured run's uploads)."""

    def __init__(self, checkpoint: Path) -> None:
        self.checkpoint = checkpoint
        self._seen: dict[str, int] = {}

    def baseline(self) -> None:
        """Take the folder's files as already seen."""
        self._seen = state_files(self.checkpoint)

    def measure(self) -> tuple[int, int]:
        """(bytes of ``state/**`` now, bytes new or changed since the previous call)."""
        now = state_files(self.checkpoint)
        new = sum(size for path, size in now.items() if self._seen.get(path) != size)
        self._seen = now
        return sum(now.values()), new
