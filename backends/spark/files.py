"""The files of a Spark checkpoint folder, read while the query may still write and delete
them: both Spark lanes measure their checkpoint folders this way."""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path


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
