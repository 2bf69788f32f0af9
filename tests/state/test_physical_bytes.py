"""Physical bytes: heap counts the Python objects its states hold (deterministic); RocksDB
reports SST files plus memtables."""

from __future__ import annotations

import sys

import backends as B
from tests.state.helpers import list_desc, map_desc, ttl, value_desc


def _fill(backend: B.KeyedStateBackend, keys: int, payload_of) -> None:
    v = backend.get_state(value_desc(ttl(100), typ=B.Types.STRING()))
    lst = backend.get_list_state(list_desc(ttl(100)))
    m = backend.get_map_state(map_desc(ttl(100)))
    for key in range(keys):
        backend.set_current_key(key)
        v.update(payload_of(key))
        lst.add_all([key, key + 1])
        m.put("a", key)


def test_heap_footprint_is_deterministic_and_grows_with_state(make_backend) -> None:
    sizes = []
    for keys in (100, 100, 1000):
        backend = make_backend("heap", B.ManualClock(0))
        _fill(backend, keys, lambda k: f"value-{k:06d}" * 4)
        sizes.append(backend.physical_bytes())
    assert sizes[0] == sizes[1] > 0
    assert sizes[2] > 5 * sizes[0]


def test_heap_counts_a_shared_object_once(make_backend) -> None:
    shared = make_backend("heap", B.ManualClock(0))
    distinct = make_backend("heap", B.ManualClock(0))
    payload = "p" * 10_000
    _fill(shared, 200, lambda k: payload)
    _fill(distinct, 200, lambda k: ("p" * 9_999) + str(k % 10))
    assert distinct.physical_bytes() - shared.physical_bytes() > 150 * 10_000


def test_heap_footprint_drops_when_expired_state_is_cleaned(make_backend) -> None:
    clock = B.ManualClock(0)
    backend = make_backend("heap", clock)
    state = backend.get_state(value_desc(ttl(100, timers=0)))
    for key in range(500):
        backend.set_current_key(key)
        state.update(key)
    before = backend.physical_bytes()
    clock.set(100)
    backend.fire_timers()
    assert backend.physical_entries("v") == 0
    # Keys, tuples and values are gone; the dict keeps its (now empty) hash table, as CPython
    # never shrinks a dict on deletion: that memory really is still held, exactly as much as
    # after deleting the same keys by hand.
    after = backend.physical_bytes()
    assert after < before / 2
    by_hand = make_backend("heap", B.ManualClock(0))
    twin = by_hand.get_state(value_desc(ttl(100, timers=0)))
    for key in range(500):
        by_hand.set_current_key(key)
        twin.update(key)
    for key in range(500):
        by_hand.set_current_key(key)
        twin.clear()
    assert after == by_hand.physical_bytes()


def test_heap_plain_states_store_no_timestamps(make_backend) -> None:
    sizes = {}
    for label, cfg in (("plain", None), ("ttl", ttl(100))):
        backend = make_backend("heap", B.ManualClock(10**12))  # a timestamp is a big int
        state = backend.get_state(value_desc(cfg))
        for key in range(200):
            backend.set_current_key(key)
            state.update(key)
        sizes[label] = backend.physical_bytes()
    # Each TTL value also holds a (value, ts) tuple (all share one timestamp object here).
    assert sizes["ttl"] - sizes["plain"] >= 200 * sys.getsizeof((0, 0))


def test_rocksdb_reports_sst_and_memtable_bytes(make_backend) -> None:
    backend = make_backend("rocksdb", B.ManualClock(0))
    empty = backend.physical_bytes()
    _fill(backend, 2000, lambda k: f"value-{k}")
    in_memtables = backend.physical_bytes()
    backend.flush()
    assert in_memtables > empty and backend.physical_bytes() > 0
