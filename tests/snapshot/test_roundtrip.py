"""Full snapshots: same backend, the other backend kind, URIs, determinism, rescaling."""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pyarrow.ipc as ipc
import pytest

import backends as B
from backends.keygroups import deserialize_key, key_group_for
from backends.snapshot.format import key_array, key_groups_of
from tests.snapshot.util import descriptors, in_range, keys, populate, raw_dump, visible

KINDS = ("heap", "rocksdb")
N = 600


@pytest.fixture
def restore(tmp_path: Path):
    """restore_backend into a fresh folder; every restored backend is closed afterwards."""
    made = []

    def run(kind: str, snaps: list, clock: B.ManualClock, **options) -> B.KeyedStateBackend:
        b = B.restore_backend(kind, snaps, clock=clock, path=tmp_path / f"r{len(made)}",
                              **options)
        made.append(b)
        return b

    yield run
    for b in made:
        b.close()


@pytest.mark.parametrize("source", KINDS)
@pytest.mark.parametrize("dest", KINDS)
def test_round_trip_gives_identical_state(source, dest, make_backend, clock, restore, tmp_path):
    descs, key_list = descriptors(), keys(N)
    b = make_backend(source, clock)
    populate(b, clock, descs, key_list)
    handle = b.snapshot(1, tmp_path / "snaps")
    assert Path(os.fspath(handle)) == tmp_path / "snaps" / "chk-1"
    assert str(handle) == os.fspath(handle)
    restored = restore(dest, [handle], clock)
    # Physically identical, timestamps included, before any registration ...
    assert raw_dump(restored) == raw_dump(b)
    # ... and the state API sees the same values.
    assert visible(restored, descs, key_list) == visible(b, descs, key_list)


def test_savepoint_heap_to_rocksdb_and_back(make_backend, clock, restore, tmp_path):
    descs, key_list = descriptors(), keys(300)
    heap = make_backend("heap", clock)
    populate(heap, clock, descs, key_list)
    expected = visible(heap, descs, key_list)
    rocks = restore("rocksdb", [heap.snapshot(1, tmp_path / "a")], clock)
    back = restore("heap", [rocks.snapshot(2, tmp_path / "b")], clock)
    assert visible(back, descs, key_list) == expected
    assert raw_dump(back) == raw_dump(heap)


def test_stats_and_deterministic_sizes(kind, make_backend, clock, tmp_path):
    descs, key_list = descriptors(), keys(N)
    b = make_backend(kind, clock)
    populate(b, clock, descs, key_list)
    first = b.snapshot(1, tmp_path / "s").stats
    second = b.snapshot(2, tmp_path / "s").stats
    assert first.total_bytes == second.total_bytes > 0
    assert first.bytes_per_state == second.bytes_per_state
    assert set(first.bytes_per_state) == {"v", "l", "m", "r", "rec"}
    on_disk = sum(f.stat().st_size for f in (tmp_path / "s" / "chk-1").iterdir())
    assert first.total_bytes == on_disk == first.uploaded_bytes
    assert 0 <= first.sync_ms <= first.total_ms
    assert first.entries_filtered == 0 and first.mode == "full"


def test_state_files_are_plain_arrow_ipc(make_backend, clock, tmp_path):
    """Any Arrow reader can open a snapshot file; every entry carries its TTL timestamp."""
    descs, key_list = descriptors(), keys(200)
    b = make_backend("heap", clock)
    populate(b, clock, descs, key_list)
    snap = Path(b.snapshot(1, tmp_path).location)
    (path,) = snap.glob("state-*-v.arrow")
    table = ipc.open_file(str(path)).read_all()
    assert table.num_rows == 200
    assert table.column_names == ["key_group", "key", "value", "ts"]
    stored = {k: c for _, k, c in b.raw_state("v").iter_entries()}
    # mixed int/str/bytes keys: the key column holds keygroups.serialize_key bytes ("tagged")
    assert {deserialize_key(r["key"])[0]: (r["value"], r["ts"]) for r in table.to_pylist()} == (
        stored)
    kgs = table.column("key_group").to_pylist()
    assert kgs == sorted(kgs)
    assert not list(snap.glob("*.pkl")) and b"pickle" not in (snap / "_metadata").read_bytes()


def test_uri_target(kind, make_backend, clock, restore, tmp_path):
    descs, key_list = descriptors(), keys(100)
    b = make_backend(kind, clock)
    populate(b, clock, descs, key_list)
    handle = b.snapshot(5, f"file://{tmp_path}/uri")
    assert str(handle) == f"file://{tmp_path}/uri/chk-5"
    assert (tmp_path / "uri" / "chk-5" / "_metadata").exists()
    assert raw_dump(restore(kind, [str(handle)], clock)) == raw_dump(b)
    assert B.latest_checkpoint(f"file://{tmp_path}/uri").location == str(handle)


def test_empty_backend_and_existing_checkpoint(kind, make_backend, clock, restore, tmp_path):
    b = make_backend(kind, clock)
    b.get_state(B.ValueStateDescriptor("nothing", B.Types.LONG()))
    h = b.snapshot(1, tmp_path)
    restored = restore(kind, [h], clock)
    assert restored.registered_state_names() == ["nothing"]
    assert restored.physical_entries("nothing") == 0
    with pytest.raises(FileExistsError, match="checkpoint 1 already exists"):
        b.snapshot(1, tmp_path)
    with pytest.raises(ValueError, match="mode"):
        b.snapshot(2, tmp_path, mode="differential")


@pytest.mark.parametrize("old_p,new_p", [(1, 3), (3, 2), (2, 5), (4, 1)])
@pytest.mark.parametrize("kind", KINDS)
def test_rescaling_reads_exactly_its_key_groups(kind, old_p, new_p, make_backend, clock,
                                                restore, tmp_path):
    maxp = 32
    descs, key_list = descriptors(), keys(N)
    expected_all: dict = {}
    handles = []
    for i in range(old_p):
        kgr = B.KeyGroupRange.of_operator(i, old_p, maxp)
        b = make_backend(kind, clock, max_parallelism=maxp, key_group_range=kgr)
        mine = in_range(b, key_list)
        populate(b, clock, descs, mine)
        expected_all.update(visible(b, descs, mine))
        handles.append(b.snapshot(1, tmp_path / f"old-{i}"))
    seen = []
    for j in range(new_p):
        kgr = B.KeyGroupRange.of_operator(j, new_p, maxp)
        new_kind = "heap" if kind == "rocksdb" else "rocksdb"  # rescale across kinds too
        r = restore(new_kind, handles, clock, max_parallelism=maxp, key_group_range=kgr)
        mine = in_range(r, key_list)
        seen += mine
        for state in r.registered_state_names():
            for kg, _, _ in r.raw_state(state).iter_entries():
                assert kg in kgr
        assert visible(r, descs, mine) == {k: expected_all[k] for k in mine}
        stats = r.restore_stats
        assert stats.key_groups == len(kgr) and stats.duration_ms > 0
        overlapping = sum(1 for i in range(old_p)
                          if set(B.KeyGroupRange.of_operator(i, old_p, maxp)) & set(kgr))
        assert stats.snapshots_read == overlapping
    assert sorted(map(repr, seen)) == sorted(map(repr, key_list))


def test_rescaling_reads_only_the_segments_it_needs(make_backend, clock, restore, tmp_path):
    b = make_backend("heap", clock)
    state = b.get_state(B.ValueStateDescriptor("v", B.Types.LONG()))
    for k in range(40_000):
        b.set_current_key(k)
        state.update(k)
    h = b.snapshot(1, tmp_path)
    whole = restore("heap", [h], clock).restore_stats.bytes_read
    assert whole == h.stats.total_bytes
    quarters = [restore("heap", [h], clock,
                        key_group_range=B.KeyGroupRange.of_operator(i, 4, 128)).restore_stats
                for i in range(4)]
    assert all(q.bytes_read < 0.4 * whole for q in quarters)
    assert sum(q.keys_restored for q in quarters) == 40_000


def test_key_groups_larger_than_a_segment(make_backend, clock, restore, tmp_path, monkeypatch):
    """Lists and maps whose rows continue into the next segment are joined on restore."""
    monkeypatch.setattr("backends.snapshot.writer.MAX_SEGMENT_ROWS", 3)
    descs, key_list = descriptors(), keys(60)
    b = make_backend("heap", clock, max_parallelism=2)
    populate(b, clock, descs, key_list)
    h = b.snapshot(1, tmp_path)
    for kind in KINDS:
        r = restore(kind, [h], clock, max_parallelism=2)
        assert raw_dump(r) == raw_dump(b)
        half = restore(kind, [h], clock, max_parallelism=2, key_group_range=B.KeyGroupRange(1, 1))
        assert visible(half, descs, in_range(half, key_list)) == {
            k: v for k, v in visible(b, descs, key_list).items() if k in in_range(half, key_list)}


def test_restore_checks_max_parallelism_and_overlaps(make_backend, clock, restore, tmp_path):
    b = make_backend("heap", clock, max_parallelism=64)
    b.get_state(B.ValueStateDescriptor("v", B.Types.LONG()))
    h = b.snapshot(1, tmp_path)
    with pytest.raises(ValueError, match="max_parallelism 64"):
        restore("heap", [h], clock)
    with pytest.raises(ValueError, match="both hold key groups"):
        restore("heap", [h, h], clock, max_parallelism=64)


def test_vectorized_key_groups_match_flink_assignment():
    rnd = random.Random(3)
    ints = [rnd.randrange(-(1 << 63), 1 << 63) for _ in range(3000)] + [0, -1, (1 << 63) - 1]
    strs = [f"k{rnd.random()}" for _ in range(500)] + ["", "é\U0001f600"]
    raw = [rnd.randbytes(rnd.randrange(0, 9)) for _ in range(500)]
    for group in (ints, strs, raw, ints[:50] + strs[:50] + raw[:50]):
        for maxp in (1, 7, 128, 32768):
            arr, enc = key_array(group)
            got = key_groups_of(group, arr, enc, maxp)
            assert got.tolist() == [key_group_for(k, maxp) for k in group]
            assert got.dtype == np.int64
