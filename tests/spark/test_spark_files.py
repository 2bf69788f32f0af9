"""The one definition of a Spark checkpoint's uploaded bytes both Spark lanes use: the state
store's files (``state/**``) new or changed since the previous measurement."""

from __future__ import annotations

from pathlib import Path

from backends.spark.files import StateUploads


def write(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)


def test_uploads_are_new_or_changed_state_files_only(tmp_path: Path) -> None:
    ck = tmp_path / "ck"
    write(ck / "offsets" / "0", 500)  # the query's progress log: never counted
    write(ck / "state" / "0" / "0" / "1.changelog", 100)
    uploads = StateUploads(ck)
    uploads.baseline()  # the warm-up's files
    write(ck / "offsets" / "1", 500)
    write(ck / "commits" / "1", 50)
    write(ck / "state" / "0" / "0" / "2.changelog", 40)
    write(ck / "state" / "0" / "1" / "2.changelog", 60)
    assert uploads.measure() == (200, 100)
    # a snapshot written by maintenance, an old version deleted, a file rewritten
    write(ck / "state" / "0" / "0" / "2.zip", 300)
    (ck / "state" / "0" / "0" / "1.changelog").unlink()
    write(ck / "state" / "0" / "1" / "2.changelog", 70)
    assert uploads.measure() == (410, 370)  # a deletion does not undo an upload
    assert uploads.measure() == (410, 0)


def test_a_folder_without_state_has_nothing_uploaded(tmp_path: Path) -> None:
    uploads = StateUploads(tmp_path / "missing")
    assert uploads.measure() == (0, 0)
