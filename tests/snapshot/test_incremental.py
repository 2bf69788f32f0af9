"""RocksDB incremental checkpoints: only new SST files uploaded, shared files ref-counted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import backends as B
from backends.snapshot import shared_file_references
from tests.snapshot.util import descriptors, in_range, keys, populate, raw_dump, visible

N_KEYS = 50_000


def _value_backend(make_backend, clock, tmp_path: Path, n: int = N_KEYS):
    b = make_backend("rocksdb", clock, path=tmp_path / "live")
    desc = B.ValueStateDescriptor("v", B.Types.LONG())
    v = b.get_state(desc)
    for k in range(n):
        b.set_current_key(k)
        v.update(k * 7)
    return b, desc, v


def _shared_on_disk(target: Path) -> set[str]:
    return set(os.listdir(target / "shared"))


def test_one_percent_change_uploads_little(make_backend, clock, tmp_path):
    b, _, v = _value_backend(make_backend, clock, tmp_path)
    first = b.snapshot(1, tmp_path / "chk", mode="incremental").stats
    assert first.uploaded_bytes == first.total_bytes > 0
    for k in range(0, N_KEYS, 100):  # 1% of the keys
        b.set_current_key(k)
        v.update(-k)
    second = b.snapshot(2, tmp_path / "chk", mode="incremental").stats
    assert second.mode == "incremental"
    assert second.uploaded_bytes <= 0.05 * second.total_bytes
    assert second.total_bytes > first.total_bytes
    assert second.bytes_per_state["v"] > 0
    refs = shared_file_references(tmp_path / "chk")
    assert 2 in refs.values()  # the first checkpoint's SST is shared by both


def test_retention_deletes_unreferenced_shared_files(make_backend, clock, tmp_path):
    b, _, v = _value_backend(make_backend, clock, tmp_path, n=2_000)
    target = tmp_path / "chk"
    for cid in range(1, 6):
        b.set_current_key(cid)
        v.update(cid)
        b.compact() if cid == 3 else None  # a compaction replaces every SST file
        b.snapshot(cid, target, mode="incremental", retained_checkpoints=1)
        retained = sorted(p.name for p in target.glob("chk-*"))
        assert retained == [f"chk-{i}" for i in range(max(1, cid - 1), cid + 1)]
        refs = shared_file_references(target)
        assert set(refs) == _shared_on_disk(target)  # nothing unreferenced stays
    b.snapshot(6, target, mode="incremental", retained_checkpoints=0)
    assert [p.name for p in target.glob("chk-*")] == ["chk-6"]
    assert set(shared_file_references(target).values()) == {1}


def test_every_retained_checkpoint_restores_its_own_state(make_backend, clock, tmp_path):
    b, desc, v = _value_backend(make_backend, clock, tmp_path, n=1_000)
    handles, expected = [], []
    for cid in (1, 2, 3):
        for k in range(cid * 10):
            b.set_current_key(k)
            v.update(cid * 1000 + k)
        handles.append(b.snapshot(cid, tmp_path / "chk", mode="incremental",
                                  retained_checkpoints=2))
        expected.append(raw_dump(b))
    for handle, want in zip(handles, expected):
        for kind in ("rocksdb", "heap"):
            r = B.restore_backend(kind, [handle], clock=clock,
                                  path=tmp_path / f"r-{kind}-{handle.checkpoint_id}")
            assert r.restore_stats.mode == "incremental"
            assert r.restore_stats.bytes_read > 0
            assert raw_dump(r) == want
            state = r.get_state(desc)
            r.set_current_key(5)
            assert state.value() == want["v"][5]
            r.close()


def test_restored_backend_keeps_checkpointing(make_backend, clock, tmp_path):
    descs, key_list = descriptors(), keys(300)
    b = make_backend("rocksdb", clock, path=tmp_path / "a")
    populate(b, clock, descs, key_list)
    h1 = b.snapshot(1, tmp_path / "chk", mode="incremental")
    r = B.restore_backend("rocksdb", [h1], clock=clock, path=tmp_path / "b")
    assert raw_dump(r) == raw_dump(b)
    assert visible(r, descs, key_list) == visible(b, descs, key_list)
    r.set_current_key("new-key")
    r.get_state(descs["v"]).update(1)
    h2 = r.snapshot(2, tmp_path / "chk", mode="incremental")
    r2 = B.restore_backend("heap", [h2], clock=clock)
    assert raw_dump(r2) == raw_dump(r)
    r.close()
    r2.close()


def test_orphaned_shared_files_are_swept(make_backend, clock, tmp_path):
    b, _, _ = _value_backend(make_backend, clock, tmp_path, n=500)
    target = tmp_path / "chk"
    b.snapshot(1, target, mode="incremental")
    (target / "shared" / "deadbeef-main-000999.sst").write_bytes(b"half an upload")
    (target / "chk-7").mkdir()  # an interrupted checkpoint
    b.snapshot(2, target, mode="incremental")
    assert "deadbeef-main-000999.sst" not in _shared_on_disk(target)
    assert not (target / "chk-7").exists()


@pytest.mark.parametrize("dest", ["rocksdb", "heap"])
def test_rescaling_incremental_checkpoints(dest, make_backend, clock, tmp_path):
    maxp = 16
    descs, key_list = descriptors(), keys(400)
    handles, expected = [], {}
    for i in range(2):
        kgr = B.KeyGroupRange.of_operator(i, 2, maxp)
        b = make_backend("rocksdb", clock, max_parallelism=maxp, key_group_range=kgr,
                         path=tmp_path / f"old{i}")
        mine = in_range(b, key_list)
        populate(b, clock, descs, mine)
        expected.update(visible(b, descs, mine))
        handles.append(b.snapshot(1, tmp_path / f"chk{i}", mode="incremental"))
    for j in range(3):
        kgr = B.KeyGroupRange.of_operator(j, 3, maxp)
        r = B.restore_backend(dest, handles, clock=clock, max_parallelism=maxp,
                              key_group_range=kgr, path=tmp_path / f"new{j}")
        mine = in_range(r, key_list)
        assert r.restore_stats.keys_restored == sum(
            len(in_range(r, list(raw_dump(r)[name]))) for name in r.registered_state_names())
        assert visible(r, descs, mine) == {k: expected[k] for k in mine}
        for name in r.registered_state_names():
            assert all(kg in kgr for kg, _, _ in r.raw_state(name).iter_entries())
        r.close()


def test_compaction_filter_state_survives_an_incremental_checkpoint(make_backend, tmp_path):
    clock = B.SystemClock()
    cfg = (B.StateTtlConfig.new_builder(3_600_000).cleanup_in_rocksdb_compact_filter(1000)
           .build())
    desc = B.ValueStateDescriptor("native", B.Types.LONG())
    desc.enable_time_to_live(cfg)
    b = make_backend("rocksdb", clock, path=tmp_path / "a")
    v = b.get_state(desc)
    assert b.native_ttl_db("native") is not None
    for k in range(100):
        b.set_current_key(k)
        v.update(k)
    h = b.snapshot(1, tmp_path / "chk", mode="incremental")
    r = B.restore_backend("rocksdb", [h], clock=clock, path=tmp_path / "b")
    assert r.native_ttl_db("native") is not None
    assert raw_dump(r) == raw_dump(b)
    v2 = r.get_state(desc)
    r.set_current_key(42)
    assert v2.value() == 42
    r.close()


def test_retained_checkpoints_is_validated(make_backend, clock, tmp_path):
    b, _, _ = _value_backend(make_backend, clock, tmp_path, n=10)
    with pytest.raises(ValueError, match="retained_checkpoints"):
        b.snapshot(1, tmp_path / "c", mode="incremental", retained_checkpoints=-1)
    with pytest.raises(ValueError, match="unknown snapshot option"):
        b.snapshot(1, tmp_path / "c", mode="incremental", colour="blue")
