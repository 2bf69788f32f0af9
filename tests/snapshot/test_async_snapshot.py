"""The engines' checkpoint model (issue 15): a snapshot's synchronous part returns while its
asynchronous part is still writing, the checkpoint it writes is the state as of the synchronous
part (byte-identical to a synchronous snapshot taken at that point) however the task goes on
mutating it, and a failed or cancelled asynchronous part surfaces and leaves no complete
checkpoint.

The asynchronous part is held at a gate the test controls: the real writer's `_entries` (full
snapshots: reading a frozen state, before any state is encoded) or `_upload_db` (RocksDB
incremental) waits on a threading.Event first."""

from __future__ import annotations

import copy
import os
import threading
from pathlib import Path
from typing import Any

import pytest

import backends as B
from backends.snapshot import incremental as incremental_mod
from backends.snapshot import writer as writer_mod
from backends.snapshot.fsio import Location
from backends.snapshot.latest import checkpoint_dirs
from backends.snapshot.metadata import is_complete
from backends.snapshot.pending import SnapshotCancelledError
from tests.snapshot.util import descriptors, keys, populate, raw_dump

KEYS = keys(600)
GATE_TIMEOUT_S = 20


@pytest.fixture
def gate(monkeypatch):
    """Hold every asynchronous write at an Event until the test opens it (or makes it fail)."""

    class Gate:
        def __init__(self) -> None:
            self.open = threading.Event()
            self.reached = threading.Event()
            self.error: BaseException | None = None

    g = Gate()

    def gated(real):
        def wrapper(*args, **kwargs):
            g.reached.set()
            assert g.open.wait(GATE_TIMEOUT_S), "the test never opened the gate"
            if g.error is not None:
                raise g.error
            return real(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(writer_mod, "_entries", gated(writer_mod._entries))
    monkeypatch.setattr(incremental_mod, "_upload_db", gated(incremental_mod._upload_db))
    yield g
    g.open.set()  # never leave a snapshot thread (and the backend's close) waiting


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir())}


def restored_dump(kind: str, handle: Any, clock: B.ManualClock, path: Path) -> Any:
    """What a backend restored from ``handle`` holds (raw_dump), the backend closed again."""
    restored = B.restore_backend(kind, [handle], clock=clock, path=path)
    try:
        return raw_dump(restored)
    finally:
        restored.close()


def mutate_everything(backend: B.KeyedStateBackend, descs: dict, clock: B.ManualClock) -> None:
    """What a task does after a barrier: in-place list appends and map puts/removes on keys the
    snapshot holds, value updates, clears, new keys."""
    v = backend.get_state(descs["v"])
    lst = backend.get_list_state(descs["l"])
    m = backend.get_map_state(descs["m"])
    r = backend.get_reducing_state(descs["r"])
    for i, key in enumerate(KEYS):
        clock.advance(1)
        backend.set_current_key(key)
        lst.add(f"after-{i}")
        lst.add_all([f"after-all-{i}"])
        m.put(i % 5, float(i))
        m.remove(0)
        m.put_all({7: 1.5, 8: None})
        v.update(-i)
        r.add(1)
        if i % 7 == 0:
            lst.clear()
            m.clear()
    for i in range(50):
        backend.set_current_key(f"new-{i}")
        lst.add("new")
        m.put(1, 1.0)


@pytest.mark.parametrize("kind", ["heap", "rocksdb"])
def test_async_full_snapshot_is_the_state_at_the_barrier(kind, make_backend, clock, gate,
                                                         tmp_path):
    descs = descriptors(ttl=True, full_snapshot=True)
    backend = make_backend(kind, clock)
    populate(backend, clock, descs, KEYS)
    clock.advance(500)  # some units expired: full-snapshot cleanup leaves them out
    at_barrier = raw_dump(backend)
    gate.open.set()
    reference = backend.snapshot(1, tmp_path / "sync")  # synchronous, at the same point
    gate.open.clear()
    gate.reached.clear()

    future = backend.snapshot_async(1, tmp_path / "async")
    assert gate.reached.wait(GATE_TIMEOUT_S)
    assert not future.done()  # the synchronous part returned; the asynchronous one is held
    mutate_everything(backend, descs, clock)
    clock.advance(10_000)  # would expire everything, if the filter read the clock now
    assert raw_dump(backend) != at_barrier
    gate.open.set()
    handle = future.result(GATE_TIMEOUT_S)

    assert files_of(handle) == files_of(reference)  # byte for byte
    assert handle.stats.entries_filtered == reference.stats.entries_filtered > 0
    assert handle.stats.async_ms >= 0 and handle.stats.async_cpu_ms > 0
    assert handle.stats.total_ms == pytest.approx(handle.stats.sync_ms + handle.stats.async_ms)
    assert backend.cleanup_counts()["l"]["full_snapshot"] > 0
    restored = B.restore_backend(kind, [handle], clock=clock, path=tmp_path / "restored")
    try:
        assert raw_dump(restored) == restored_dump(kind, reference, clock,
                                                   tmp_path / "ref-restored")
    finally:
        restored.close()


def test_heap_copy_on_write_ends_with_the_snapshot(make_backend, clock, gate, tmp_path):
    descs = descriptors(ttl=False)
    backend = make_backend("heap", clock)
    populate(backend, clock, descs, KEYS)
    lst_raw, map_raw = backend.raw_state("l"), backend.raw_state("m")
    shared_list, shared_map = lst_raw.table[KEYS[3]], map_raw.table[KEYS[3]]
    list_before, map_before = list(shared_list), dict(shared_map)
    future = backend.snapshot_async(1, tmp_path)
    assert gate.reached.wait(GATE_TIMEOUT_S)  # before the first state is read
    assert "add" in vars(lst_raw) and "put" in vars(map_raw)  # copy-on-write installed
    lst, m = backend.get_list_state(descs["l"]), backend.get_map_state(descs["m"])
    backend.set_current_key(KEYS[3])
    lst.add("x")
    m.put(99, 1.0)
    assert shared_list == list_before and shared_map == map_before  # copied, not changed
    copied_list, copied_map = lst_raw.table[KEYS[3]], map_raw.table[KEYS[3]]
    assert copied_list is not shared_list and copied_map is not shared_map
    lst.add("y")
    m.remove(99)
    assert lst_raw.table[KEYS[3]] is copied_list  # one copy per container and snapshot
    assert map_raw.table[KEYS[3]] is copied_map
    gate.open.set()
    future.result(GATE_TIMEOUT_S)
    assert "add" not in vars(lst_raw) and "put" not in vars(map_raw)  # class methods again
    lst.add("z")
    assert lst_raw.table[KEYS[3]] is copied_list


def test_rocksdb_incremental_async_checkpoint_is_the_state_at_the_barrier(
        make_backend, clock, gate, tmp_path):
    descs = descriptors(ttl=True)
    backend = make_backend("rocksdb", clock)
    populate(backend, clock, descs, KEYS)
    at_barrier = raw_dump(backend)
    future = backend.snapshot_async(1, tmp_path / "chk", mode="incremental")
    assert gate.reached.wait(GATE_TIMEOUT_S)
    assert not future.done()
    mutate_everything(backend, descs, clock)
    backend.compact()  # flush and compact the live DB meanwhile: the hard links stay
    gate.open.set()
    handle = future.result(GATE_TIMEOUT_S)
    restored = B.restore_backend("rocksdb", [handle], clock=clock, path=tmp_path / "restored")
    try:
        assert raw_dump(restored) == at_barrier
    finally:
        restored.close()
    assert not any((Path(backend.path) / "checkpoints").iterdir())  # work folder removed


@pytest.mark.parametrize("kind,mode", [("heap", "full"), ("rocksdb", "full"),
                                       ("rocksdb", "incremental")])
def test_async_failure_surfaces_and_leaves_no_complete_checkpoint(kind, mode, make_backend,
                                                                   clock, gate, tmp_path):
    descs = descriptors(ttl=False)
    backend = make_backend(kind, clock)
    populate(backend, clock, descs, KEYS)
    gate.error = OSError(28, "No space left on device (injected)")
    future = backend.snapshot_async(1, tmp_path, mode=mode)
    gate.open.set()
    with pytest.raises(OSError, match="injected"):
        future.result(GATE_TIMEOUT_S)
    with pytest.raises(OSError, match="injected"):
        backend.snapshot(2, tmp_path, mode=mode)  # the same error again, never swallowed
    assert B.latest_checkpoint(tmp_path) is None
    assert not any(is_complete(loc) for _, loc in checkpoint_dirs(Location.parse(tmp_path)))
    gate.error = None
    handle = backend.snapshot(3, tmp_path, mode=mode)  # the backend is still usable
    assert B.latest_checkpoint(tmp_path) == handle
    if kind == "heap":
        assert "add" not in vars(backend.raw_state("l"))


@pytest.mark.parametrize("kind", ["heap", "rocksdb"])
def test_close_during_async_part_cancels_cleanly(kind, make_backend, clock, gate, tmp_path):
    descs = descriptors(ttl=False)
    backend = make_backend(kind, clock)
    populate(backend, clock, descs, KEYS)
    future = backend.snapshot_async(1, tmp_path)
    assert gate.reached.wait(GATE_TIMEOUT_S)
    opener = threading.Timer(0.2, gate.open.set)
    opener.start()
    backend.close()  # cancels, then waits for the thread to let go of the storage
    opener.join()
    assert future.done()
    with pytest.raises(SnapshotCancelledError):
        future.result()
    assert B.latest_checkpoint(tmp_path) is None


@pytest.mark.parametrize("max_in_flight", [1, 3])
def test_a_snapshot_waits_only_when_max_in_flight_are_in_flight(max_in_flight, make_backend,
                                                                 clock, gate, tmp_path):
    backend = make_backend("heap", clock)
    populate(backend, clock, descriptors(ttl=False), KEYS)
    first = backend.snapshot_async(1, tmp_path, max_in_flight=max_in_flight)
    assert gate.reached.wait(GATE_TIMEOUT_S)
    queued = [backend.snapshot_async(cid, tmp_path, max_in_flight=max_in_flight)
              for cid in range(2, max_in_flight + 1)]  # fewer in flight: no wait
    assert not first.done() and all(f.stats.wait_ms < 50 for f in queued)
    assert backend.snapshots_in_flight() == max_in_flight
    threading.Timer(0.3, gate.open.set).start()
    last = backend.snapshot_async(max_in_flight + 1, tmp_path, max_in_flight=max_in_flight)
    assert first.done()  # max_in_flight in flight: it waited for the oldest one
    assert last.stats.wait_ms >= 100
    backend.wait_for_snapshot()  # waits for all
    assert all(f.done() for f in [first, *queued, last])
    assert backend.snapshots_in_flight() == 0
    ids = [f.result().checkpoint_id for f in [first, *queued, last]]
    assert ids == list(range(1, max_in_flight + 2))
    assert os.fspath(last.result()).endswith(f"chk-{max_in_flight + 1}")
    assert [h.checkpoint_id for h in B.list_checkpoints(tmp_path)] == ids


def test_max_in_flight_is_checked(make_backend, clock, tmp_path):
    backend = make_backend("heap", clock)
    for bad in (0, -1, True, 1.5, "2"):
        with pytest.raises(ValueError, match="max_in_flight"):
            backend.snapshot_async(1, tmp_path, max_in_flight=bad)


def _two_barriers(backend, clock, descs, take):
    """populate; barrier 1; the task mutates lists, maps and values in place; barrier 2; it
    mutates again. `take(checkpoint_id)` runs at each barrier; returns the raw dumps there."""
    populate(backend, clock, descs, KEYS)
    clock.advance(500)  # some units expired: full-snapshot cleanup leaves them out
    dumps = [copy.deepcopy(raw_dump(backend))]  # the heap's containers change in place
    out = [take(1)]
    mutate_everything(backend, descs, clock)
    clock.advance(300)
    dumps.append(copy.deepcopy(raw_dump(backend)))
    out.append(take(2))
    mutate_everything(backend, descs, clock)
    clock.advance(10_000)  # would expire everything, if a filter read the clock now
    return dumps, out


@pytest.mark.parametrize("kind,mode", [("heap", "full"), ("rocksdb", "full"),
                                       ("rocksdb", "incremental")])
def test_two_snapshots_in_flight_are_each_the_state_at_their_barrier(
        kind, mode, make_backend, clock, gate, tmp_path):
    """Two snapshots queued on the snapshot thread while the task mutates lists and maps in
    place: each is byte-identical to a synchronous snapshot taken at its barrier (full) or
    restores to the state at its barrier (incremental)."""
    descs = descriptors(ttl=True, full_snapshot=mode == "full")
    gate.open.set()
    ref_clock = B.ManualClock(0)
    ref_backend = make_backend(kind, ref_clock)
    ref_dumps, refs = _two_barriers(
        ref_backend, ref_clock, descs,
        lambda cid: ref_backend.snapshot(cid, tmp_path / "sync", mode=mode))
    gate.open.clear()
    gate.reached.clear()

    backend = make_backend(kind, clock)

    def take(cid):
        future = backend.snapshot_async(cid, tmp_path / "async", mode=mode, max_in_flight=2)
        assert gate.reached.wait(GATE_TIMEOUT_S)  # the first one is held, the second queued
        assert future.stats.wait_ms < 50
        return future

    dumps, futures = _two_barriers(backend, clock, descs, take)
    assert dumps == ref_dumps
    assert not any(f.done() for f in futures)
    assert backend.snapshots_in_flight() == 2
    if kind == "heap":
        assert len(backend.raw_state("l")._frozen) == 2 and "add" in vars(backend.raw_state("l"))
    gate.open.set()
    handles = [f.result(GATE_TIMEOUT_S) for f in futures]
    assert [h.checkpoint_id for h in handles] == [1, 2]
    if kind == "heap":
        assert "add" not in vars(backend.raw_state("l"))  # both views gone: class methods
        assert "put" not in vars(backend.raw_state("m"))
    for handle, ref, dump in zip(handles, refs, dumps):
        if mode == "full":
            assert files_of(handle) == files_of(ref)  # byte for byte
            assert handle.stats.entries_filtered == ref.stats.entries_filtered > 0
        restored = B.restore_backend(kind, [handle], clock=clock,
                                     path=tmp_path / f"restored-{handle.checkpoint_id}")
        try:
            if mode == "incremental":
                assert raw_dump(restored) == dump
            else:
                assert raw_dump(restored) == restored_dump(
                    kind, ref, clock, tmp_path / f"ref-{ref.checkpoint_id}")
        finally:
            restored.close()
    if mode == "incremental":  # chk-2 reuses chk-1's SST files: uploaded once, shared
        second = handles[1].stats
        assert 0 < second.uploaded_bytes < second.total_bytes
        refs_count = incremental_mod.shared_file_references(tmp_path / "async")
        assert refs_count and max(refs_count.values()) == 2
        assert not any((Path(backend.path) / "checkpoints").iterdir())


@pytest.mark.parametrize("kind", ["heap", "rocksdb"])
def test_close_cancels_every_snapshot_in_flight(kind, make_backend, clock, gate, tmp_path):
    backend = make_backend(kind, clock)
    populate(backend, clock, descriptors(ttl=False), KEYS)
    futures = [backend.snapshot_async(cid, tmp_path, max_in_flight=3) for cid in (1, 2, 3)]
    assert gate.reached.wait(GATE_TIMEOUT_S)
    opener = threading.Timer(0.2, gate.open.set)
    opener.start()
    backend.close()
    opener.join()
    for future in futures:
        assert future.done()
        with pytest.raises(SnapshotCancelledError):
            future.result()
    assert B.latest_checkpoint(tmp_path) is None


def test_snapshot_is_snapshot_async_result(make_backend, clock, tmp_path):
    backend = make_backend("heap", clock)
    populate(backend, clock, descriptors(ttl=False), KEYS)
    handle = backend.snapshot(1, tmp_path)
    assert isinstance(handle, B.SnapshotHandle)
    assert handle.stats.sync_ms > 0 and handle.stats.async_cpu_ms > 0
    with pytest.raises(FileExistsError):  # an existing checkpoint: raised by the sync part
        backend.snapshot_async(1, tmp_path)
    with pytest.raises(ValueError, match="mode"):
        backend.snapshot_async(2, tmp_path, mode="differential")


def test_heap_incremental_cleanup_never_changes_a_frozen_map(make_backend, clock, gate,
                                                             tmp_path):
    """Flink's incremental cleanup removes expired map entries while a snapshot is in flight:
    the frozen maps stay as they were (it replaces a map instead of deleting from it)."""
    ttl = (B.StateTtlConfig.new_builder(100).cleanup_incrementally(50, True).build())
    desc = B.MapStateDescriptor("m", B.Types.INT(), B.Types.LONG())
    desc.enable_time_to_live(ttl)
    backend = make_backend("heap", clock)
    m = backend.get_map_state(desc)
    for key in range(300):
        backend.set_current_key(key)
        m.put(0, key)  # expires first
    clock.advance(60)
    for key in range(300):
        backend.set_current_key(key)
        m.put(1, key)  # still live after the next advance
    gate.open.set()
    reference = backend.snapshot(1, tmp_path / "sync")
    gate.open.clear()
    gate.reached.clear()
    frozen = {k: dict(v) for k, v in backend.raw_state("m").table.items()}
    future = backend.snapshot_async(1, tmp_path / "async")
    assert gate.reached.wait(GATE_TIMEOUT_S)
    clock.advance(60)  # entry 0 of every map expired, entry 1 not
    for key in range(300):
        backend.set_current_key(key)  # each record runs a cleanup step of 50 keys
    assert backend.cleanup_counts()["m"]["incremental"] == 300
    gate.open.set()
    handle = future.result(GATE_TIMEOUT_S)
    assert files_of(handle) == files_of(reference)
    restored = B.restore_backend("heap", [handle], clock=clock)
    try:
        assert {k: c for _, k, c in restored.raw_state("m").iter_entries()} == frozen
    finally:
        restored.close()
