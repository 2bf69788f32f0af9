"""The engines' checkpoint model (issue 15): a snapshot's synchronous part returns while its
asynchronous part is still writing, the checkpoint it writes is the state as of the synchronous
part (byte-identical to a synchronous snapshot taken at that point) however the task goes on
mutating it, and a failed or cancelled asynchronous part surfaces and leaves no complete
checkpoint.

The asynchronous part is held at a gate the test controls: the real writer's `_entries` (full
snapshots: reading a frozen state, before any state is encoded) or `_upload_db` (RocksDB
incremental) waits on a threading.Event first."""

from __future__ import annotations

import os
import threading
from pathlib import Path

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
        ref_restored = B.restore_backend(kind, [reference], clock=clock,
                                         path=tmp_path / "ref-restored")
        try:
            assert raw_dump(restored) == raw_dump(ref_restored)
        finally:
            ref_restored.close()
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


def test_one_snapshot_at_a_time(make_backend, clock, gate, tmp_path):
    backend = make_backend("heap", clock)
    populate(backend, clock, descriptors(ttl=False), KEYS)
    first = backend.snapshot_async(1, tmp_path)
    assert gate.reached.wait(GATE_TIMEOUT_S)
    threading.Timer(0.3, gate.open.set).start()
    second = backend.snapshot_async(2, tmp_path)  # waits for the first one's asynchronous part
    assert first.done()
    assert second.stats.wait_ms >= 100
    assert os.fspath(second.result(GATE_TIMEOUT_S)).endswith("chk-2")
    assert first.result().checkpoint_id == 1


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
