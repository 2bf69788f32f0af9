"""Snapshots are untrusted input: forged metadata cannot make a restore touch anything outside
the snapshot and its target.

Each forgery edits `_metadata` and recomputes its crc32, so the file is otherwise valid (as
anyone who hands a checkpoint over can do). The restore must refuse with CorruptSnapshotError
naming the problem, and the victim folder beside the snapshot must be exactly as it was
(issue 10: a forged `db` once made a heap restore delete a folder and a RocksDB restore move
it into the restored backend).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import backends as B
from backends.snapshot.metadata import decode_metadata, encode_metadata
from tests.snapshot.util import descriptors, keys, populate, raw_dump

KINDS = ("heap", "rocksdb")


# --------------------------------------------------------------------------- helpers
@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A folder a forged snapshot points at; it must survive every restore unchanged."""
    folder = tmp_path / "victim"
    (folder / "sub").mkdir(parents=True)
    (folder / "precious.txt").write_text("do not touch")
    (folder / "sub" / "CURRENT").write_text("MANIFEST-000001\n")
    return folder


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def forge(snap: Path, change: Callable[[dict], None]) -> None:
    """Edit the metadata body of `snap` and write it back with a correct crc32."""
    meta = snap / "_metadata"
    body = decode_metadata(str(meta), meta.read_bytes())
    change(body)
    meta.write_bytes(encode_metadata(body))


def _refused(kind: str, snap: Path, tmp_path: Path, victim: Path, match: str,
             clock: B.ManualClock | B.SystemClock) -> None:
    before = _tree(victim)
    target = tmp_path / f"restored-{kind}"
    options = {"path": target} if kind == "rocksdb" else {}
    with pytest.raises(B.CorruptSnapshotError, match=match):
        B.restore_backend(kind, [snap], clock=clock, **options)
    assert _tree(victim) == before
    assert victim.is_dir()


def _full(make_backend, clock, tmp_path: Path) -> Path:
    b = make_backend("heap", clock)
    populate(b, clock, descriptors(), keys(40))
    b.operator_state().get_list_state(B.ListStateDescriptor("offsets", B.Types.LONG())).add(1)
    return Path(b.snapshot(1, tmp_path / "full").location)


def _incremental(make_backend, clock, tmp_path: Path) -> Path:
    b = make_backend("rocksdb", clock, path=tmp_path / "live")
    populate(b, clock, descriptors(), keys(40))
    return Path(b.snapshot(1, tmp_path / "inc", mode="incremental").location)


def _native(make_backend, tmp_path: Path, name: str = "native") -> tuple[Path, B.SystemClock]:
    """An incremental checkpoint with a compaction-filter state in a native-TTL DB."""
    clock = B.SystemClock()
    cfg = B.StateTtlConfig.new_builder(3_600_000).cleanup_in_rocksdb_compact_filter(1000).build()
    desc = B.ValueStateDescriptor(name, B.Types.LONG())
    desc.enable_time_to_live(cfg)
    b = make_backend("rocksdb", clock, path=tmp_path / "live")
    v = b.get_state(desc)
    for k in range(50):
        b.set_current_key(k)
        v.update(k)
    return Path(b.snapshot(1, tmp_path / "inc", mode="incremental").location), clock


def _native_entry(body: dict) -> dict:
    return next(e for e in body["states"] if e["db"] != "main")


# --------------------------------------------------------------------------- the case
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("how", ["absolute", "dotdot"])
def test_a_forged_db_of_a_native_state_is_refused(kind, how, make_backend, tmp_path, victim):
    snap, clock = _native(make_backend, tmp_path)
    db = str(victim) if how == "absolute" else "../../victim"

    def change(body: dict) -> None:
        _native_entry(body)["db"] = db

    forge(snap, change)
    _refused(kind, snap, tmp_path, victim, "places state 'native' in DB", clock)


@pytest.mark.parametrize("kind", KINDS)
def test_a_forged_db_label_is_refused(kind, make_backend, tmp_path, victim):
    """The DB's own label (its staging folder) points outside, and a state is placed there."""
    snap, clock = _native(make_backend, tmp_path)

    def change(body: dict) -> None:
        entry = _native_entry(body)
        body["dbs"][str(victim)] = body["dbs"].pop(entry["db"])
        entry["db"] = str(victim)

    forge(snap, change)
    _refused(kind, snap, tmp_path, victim, "bad RocksDB DB label", clock)


@pytest.mark.parametrize("kind", KINDS)
def test_a_main_state_cannot_be_moved_to_another_db(kind, make_backend, clock, tmp_path,
                                                    victim):
    snap = _incremental(make_backend, clock, tmp_path)

    def change(body: dict) -> None:
        body["states"][0]["db"] = str(victim)

    forge(snap, change)
    _refused(kind, snap, tmp_path, victim, "not a native-TTL DB of this checkpoint", clock)


@pytest.mark.parametrize("kind", KINDS)
def test_a_forged_column_family_is_refused(kind, make_backend, clock, tmp_path, victim):
    snap = _incremental(make_backend, clock, tmp_path)

    def change(body: dict) -> None:
        body["states"][0]["column_family"] = "../elsewhere"

    forge(snap, change)
    _refused(kind, snap, tmp_path, victim, "column family '../elsewhere'", clock)


# --------------------------------------------------------------------------- file names
@pytest.mark.parametrize("field", ["name", "private", "shared"])
@pytest.mark.parametrize("bad", ["absolute", "../../victim/precious.txt", "a/b", "a\\b", ".",
                                 "..", "", ".hidden"])
def test_forged_rocksdb_file_names_are_refused(field, bad, make_backend, clock, tmp_path,
                                               victim):
    snap = _incremental(make_backend, clock, tmp_path)
    name = str(victim / "precious.txt") if bad == "absolute" else bad

    def change(body: dict) -> None:
        files = body["dbs"]["main"]["files"]
        kind = "private" if field == "private" else "shared"
        entry = next(f for f in files if kind in f)
        entry["name" if field == "name" else kind] = name

    forge(snap, change)
    _refused("heap", snap, tmp_path, victim, "names a bad", clock)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("where", ["states", "operator_states"])
@pytest.mark.parametrize("bad", ["absolute", "../victim/precious.txt", "sub/CURRENT", ".."])
def test_forged_data_file_names_of_a_full_snapshot_are_refused(kind, where, bad, make_backend,
                                                               clock, tmp_path, victim):
    snap = _full(make_backend, clock, tmp_path)
    name = str(victim / "precious.txt") if bad == "absolute" else bad

    def change(body: dict) -> None:
        body[where][0]["file"] = name

    forge(snap, change)
    _refused(kind, snap, tmp_path, victim, "names a bad file", clock)


# --------------------------------------------------------------------------- symlinks
def _link_out(path: Path, outside: Path) -> None:
    """Replace `path` by a symlink to an identical copy outside the snapshot."""
    outside.mkdir(parents=True, exist_ok=True)
    copy = outside / path.name
    shutil.copyfile(path, copy)
    path.unlink()
    path.symlink_to(copy)


@pytest.mark.parametrize("kind", KINDS)
def test_a_data_file_symlinked_out_of_the_snapshot_is_refused(kind, make_backend, clock,
                                                              tmp_path, victim):
    snap = _full(make_backend, clock, tmp_path)
    state_file = next(snap.glob("state-*"))
    _link_out(state_file, victim / "sub")
    _refused(kind, snap, tmp_path, victim, "resolves to .*outside", clock)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("which", ["private", "shared"])
def test_a_rocksdb_file_symlinked_out_is_refused(kind, which, make_backend, clock, tmp_path,
                                                 victim):
    snap = _incremental(make_backend, clock, tmp_path)
    files = snap.glob("db-main-*") if which == "private" else (snap.parent / "shared").iterdir()
    _link_out(sorted(files)[0], victim / "sub")
    _refused(kind, snap, tmp_path, victim, "resolves to .*outside", clock)


@pytest.mark.parametrize("kind", KINDS)
def test_a_shared_folder_symlinked_out_is_refused(kind, make_backend, clock, tmp_path, victim):
    snap = _incremental(make_backend, clock, tmp_path)
    shared = snap.parent / "shared"
    moved = victim / "shared"
    shutil.move(str(shared), str(moved))
    shared.symlink_to(moved)
    _refused(kind, snap, tmp_path, victim, "resolves to .*outside", clock)


@pytest.mark.parametrize("kind", KINDS)
def test_a_symlink_inside_the_snapshot_is_fine(kind, make_backend, clock, tmp_path):
    """Resolving inside the snapshot folder is allowed: the check is about where, not how."""
    b = make_backend("heap", clock)
    descs = descriptors()
    populate(b, clock, descs, keys(40))
    snap = Path(b.snapshot(1, tmp_path / "full").location)
    state_file = next(snap.glob("state-*"))
    real = snap / f"{state_file.name}.real"
    state_file.rename(real)
    state_file.symlink_to(real.name)
    options = {"path": tmp_path / "r"} if kind == "rocksdb" else {}
    r = B.restore_backend(kind, [snap], clock=clock, **options)
    assert raw_dump(r) == raw_dump(b)
    r.close()


# --------------------------------------------------------------------------- names are data
def test_a_state_name_is_never_a_path(make_backend, tmp_path, victim):
    """A legitimately named state "../../victim" (descriptors take any non-empty string)
    checkpoints and restores under its name; its native-TTL DB folder is made path-safe."""
    before = _tree(victim)
    snap, clock = _native(make_backend, tmp_path, name="../../victim")
    for kind in KINDS:
        options = {"path": tmp_path / f"r-{kind}"} if kind == "rocksdb" else {}
        r = B.restore_backend(kind, [snap], clock=clock, **options)
        assert r.registered_state_names() == ["../../victim"]
        assert r.physical_entries("../../victim") == 50
        r.close()
    assert _tree(victim) == before


@pytest.mark.parametrize("field,value,match", [
    ("name", "", "state name must be a non-empty string"),
    ("name", 7, "state name must be a non-empty string"),
    ("native_ttl_ms", "1000", "native_ttl_ms must be a non-negative int"),
    ("native_ttl_ms", -5, "native_ttl_ms must be a non-negative int"),
    ("ttl_layout", "yes", "ttl_layout must be true or false"),
])
def test_forged_state_fields_are_refused(field, value, match, make_backend, clock, tmp_path,
                                         victim):
    snap = _full(make_backend, clock, tmp_path)

    def change(body: dict) -> None:
        body["states"][0][field] = value

    forge(snap, change)
    _refused("heap", snap, tmp_path, victim, match, clock)


def test_a_state_listed_twice_is_refused(make_backend, clock, tmp_path, victim):
    snap = _incremental(make_backend, clock, tmp_path)

    def change(body: dict) -> None:
        body["states"].append(json.loads(json.dumps(body["states"][0])))

    forge(snap, change)
    _refused("rocksdb", snap, tmp_path, victim, "twice", clock)


# --------------------------------------------------------------------------- minor issues
def test_latest_checkpoint_warns_about_a_newest_corrupt_checkpoint(make_backend, clock,
                                                                   tmp_path, caplog):
    b = make_backend("heap", clock)
    populate(b, clock, descriptors(), keys(10))
    b.snapshot(1, tmp_path / "t")
    newest = Path(b.snapshot(2, tmp_path / "t").location)
    meta = newest / "_metadata"
    meta.write_bytes(meta.read_bytes()[:-1])
    with caplog.at_level(logging.WARNING, logger="backends.snapshot.latest"):
        handle = B.latest_checkpoint(tmp_path / "t")
    assert handle.checkpoint_id == 1
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "chk-2" in warned[0] and "does not parse" in warned[0]


def test_latest_checkpoint_is_quiet_about_older_corrupt_checkpoints(make_backend, clock,
                                                                    tmp_path, caplog):
    b = make_backend("heap", clock)
    populate(b, clock, descriptors(), keys(10))
    oldest = Path(b.snapshot(1, tmp_path / "t").location)
    b.snapshot(2, tmp_path / "t")
    (oldest / "_metadata").write_bytes(b"{}")
    with caplog.at_level(logging.WARNING, logger="backends.snapshot.latest"):
        assert B.latest_checkpoint(tmp_path / "t").checkpoint_id == 2
    assert caplog.records == []


def test_a_checkpoint_deleted_by_retention_is_a_snapshot_error(make_backend, clock, tmp_path):
    b = make_backend("rocksdb", clock, path=tmp_path / "live")
    populate(b, clock, descriptors(), keys(20))
    first = b.snapshot(1, tmp_path / "t", mode="incremental", retained_checkpoints=0)
    b.snapshot(2, tmp_path / "t", mode="incremental", retained_checkpoints=0)
    assert not os.path.exists(first)
    with pytest.raises(B.SnapshotNotFoundError, match="retention") as caught:
        B.restore_backend("heap", [first], clock=clock)
    assert isinstance(caught.value, B.CorruptSnapshotError)


@pytest.mark.parametrize("which", ["private", "shared"])
def test_a_vanished_rocksdb_file_is_reported_missing(which, make_backend, clock, tmp_path):
    snap = _incremental(make_backend, clock, tmp_path)
    files = snap.glob("db-main-*") if which == "private" else (snap.parent / "shared").iterdir()
    gone = sorted(files)[0]
    gone.unlink()
    with pytest.raises(B.CorruptSnapshotError, match=f"{gone.name} is missing") as caught:
        B.restore_backend("heap", [snap], clock=clock)
    assert "badly" not in str(caught.value)
