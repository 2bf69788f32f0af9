"""Bad input: every kind of snapshot file, bit-flipped or truncated, is caught by checksum with
an error naming the file, before anything is loaded; missing and wrong files fail clearly."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

import backends as B
from backends.snapshot.reader import restore as reader_restore
from tests.snapshot.util import descriptors, keys, populate

FLIPS = 6  # bit flips per file, at the start, the end and random places in between


def _full(make_backend, clock, tmp_path: Path, cid: int = 1) -> Path:
    b = make_backend("heap", clock)
    populate(b, clock, descriptors(), keys(80))
    b.operator_state().get_list_state(B.ListStateDescriptor("offsets", B.Types.LONG())).add(1)
    return Path(b.snapshot(cid, tmp_path / f"full{cid}").location)


def _incremental(make_backend, clock, tmp_path: Path) -> Path:
    b = make_backend("rocksdb", clock, path=tmp_path / "live")
    populate(b, clock, descriptors(), keys(80))
    b.operator_state().get_list_state(B.ListStateDescriptor("offsets", B.Types.LONG())).add(1)
    return Path(b.snapshot(1, tmp_path / "inc", mode="incremental").location)


def _files(snap: Path) -> list[Path]:
    """Every file a restore of `snap` reads: its own files and the shared SSTs."""
    shared = snap.parent / "shared"
    return sorted(snap.iterdir()) + (sorted(shared.iterdir()) if shared.exists() else [])


def _kind(path: Path) -> str:
    name = path.name
    if name == "_metadata":
        return "metadata"
    for prefix in ("state-", "op-"):
        if name.startswith(prefix):
            return prefix.rstrip("-")
    if name.endswith(".sst"):
        return "sst"
    return name.split("-")[2] if name.startswith("db-") else name  # MANIFEST, CURRENT, ...


def _damages(path: Path, seed: int):
    """(description, bytes) pairs: single-bit flips and truncations of the file's content."""
    data = path.read_bytes()
    if not data:  # an empty WAL: nothing to damage
        return
    rnd = random.Random(seed)
    spots = [0, len(data) - 1] + [rnd.randrange(len(data)) for _ in range(FLIPS - 2)]
    for pos in spots:
        bit = 1 << rnd.randrange(8)
        yield f"bit {bit} at {pos}", data[:pos] + bytes([data[pos] ^ bit]) + data[pos + 1:]
    for size in (0, len(data) // 2, len(data) - 1):
        yield f"truncated to {size}", data[:size]


def _check_every_damage(snap: Path, kind: str, clock, tmp_path: Path) -> set[str]:
    kinds = set()
    for i, path in enumerate(_files(snap)):
        original = path.read_bytes()
        kinds.add(_kind(path))
        for what, damaged in _damages(path, seed=i):
            path.write_bytes(damaged)
            with pytest.raises(B.CorruptSnapshotError) as err:
                B.restore_backend(kind, [snap], clock=clock, path=tmp_path / "r" / str(i))
            assert path.name in str(err.value), (path.name, what, str(err.value))
            shutil.rmtree(tmp_path / "r", ignore_errors=True)
        path.write_bytes(original)
    B.restore_backend(kind, [snap], clock=clock, path=tmp_path / "ok").close()  # intact again
    return kinds


@pytest.mark.parametrize("dest", ["heap", "rocksdb"])
def test_full_snapshot_files(dest, make_backend, clock, tmp_path):
    snap = _full(make_backend, clock, tmp_path)
    kinds = _check_every_damage(snap, dest, clock, tmp_path)
    assert kinds == {"metadata", "state", "op"}


def test_incremental_checkpoint_files(make_backend, clock, tmp_path):
    snap = _incremental(make_backend, clock, tmp_path)
    kinds = _check_every_damage(snap, "rocksdb", clock, tmp_path)
    assert {"metadata", "op", "sst", "MANIFEST", "CURRENT", "OPTIONS"} <= kinds


@pytest.mark.parametrize("make_snap", [_full, _incremental])
@pytest.mark.parametrize("kind", ["heap", "rocksdb"])
def test_nothing_is_loaded_from_a_corrupt_snapshot(make_snap, kind, make_backend, clock,
                                                   tmp_path):
    snap = make_snap(make_backend, clock, tmp_path)
    last = _files(snap)[-1]  # a data file read late (the last shared SST or op/state file)
    last.write_bytes(last.read_bytes()[:-1])
    fresh = make_backend(kind, clock, path=tmp_path / "fresh")
    with pytest.raises(B.CorruptSnapshotError, match=last.name):
        reader_restore(fresh, [snap])
    assert fresh.registered_state_names() == []
    assert fresh.operator_state_data() == []


def test_missing_files(make_backend, clock, tmp_path):
    snap = _full(make_backend, clock, tmp_path)
    state_file = next(snap.glob("state-*"))
    state_file.unlink()
    with pytest.raises(B.CorruptSnapshotError, match=f"{state_file.name} is missing"):
        B.restore_backend("heap", [snap], clock=clock)
    (snap / "_metadata").unlink()
    with pytest.raises(B.CorruptSnapshotError, match="not a complete snapshot"):
        B.restore_backend("heap", [snap], clock=clock)
    with pytest.raises(FileNotFoundError, match="no snapshot"):
        B.restore_backend("heap", [tmp_path / "nowhere"], clock=clock)


def test_missing_shared_file(make_backend, clock, tmp_path):
    snap = _incremental(make_backend, clock, tmp_path)
    sst = next((snap.parent / "shared").iterdir())
    sst.unlink()
    with pytest.raises(B.CorruptSnapshotError, match=f"{sst.name} is missing"):
        B.restore_backend("rocksdb", [snap], clock=clock, path=tmp_path / "r")


def test_wrong_file_in_place(make_backend, clock, tmp_path):
    """A file from another snapshot, copied over one of this snapshot's files."""
    a = _full(make_backend, clock, tmp_path, cid=1)
    clock.advance(5)
    b = _full(make_backend, clock, tmp_path, cid=2)
    victim = next(a.glob("state-*-v.arrow"))
    shutil.copy(next(b.glob("state-*-v.arrow")), victim)
    with pytest.raises(B.CorruptSnapshotError, match=victim.name):
        B.restore_backend("heap", [a], clock=clock)


def test_metadata_of_another_kind_of_file(make_backend, clock, tmp_path):
    snap = _full(make_backend, clock, tmp_path)
    (snap / "_metadata").write_bytes(b'{"format": "something-else", "crc32": 0, "body": {}}')
    with pytest.raises(B.CorruptSnapshotError, match="_metadata"):
        B.restore_backend("heap", [snap], clock=clock)


def test_no_pickle_in_any_persisted_file(make_backend, clock, tmp_path):
    for snap in (_full(make_backend, clock, tmp_path), _incremental(make_backend, clock,
                                                                   tmp_path)):
        for path in _files(snap):
            data = path.read_bytes()
            assert not data.startswith(b"\x80") and b"pickle" not in data.lower(), path
