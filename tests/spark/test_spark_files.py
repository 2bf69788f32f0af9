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


def test_both_lanes_rate_over_first_to_last_data_batch() -> None:
    """One denominator: batches without data between the first and last data batch count
    (evictions, sweeps), the warm-up before and the drain after do not."""
    from backends.spark.listener import processing_ms

    durations = [900, 100, 50, 200, 70, 800, 800]
    carried = [False, True, False, True, False, False, False]
    assert processing_ms(durations, carried) == 100 + 50 + 200
    assert processing_ms(durations, [False] * 7) == 0
    # a longer drain (a longer TTL) leaves the rate alone
    assert processing_ms([*durations, 800, 800], [*carried, False, False]) == 350
