"""The RocksDB compaction-filter cleanup on RocksDB's native TTL compaction (real seconds)."""

from __future__ import annotations

import time

import pytest

import backends as B
from tests.state.helpers import list_desc, map_desc, value_desc


def filter_ttl(ttl_ms: int) -> B.StateTtlConfig:
    return (B.StateTtlConfig.new_builder(ttl_ms).cleanup_in_rocksdb_compact_filter(1000)
            .disable_cleanup_in_background().build())


@pytest.mark.slow
def test_compaction_drops_expired_entries_with_the_wall_clock(make_backend) -> None:
    backend = make_backend("rocksdb", B.SystemClock())
    v = backend.get_state(value_desc(filter_ttl(1000)))
    m = backend.get_map_state(map_desc(filter_ttl(1000)))
    keep = backend.get_state(value_desc(None, name="plain"))
    for key in range(500):
        backend.set_current_key(key)
        v.update(key)
        m.put("a", key)
        keep.update(key)
    backend.compact()
    assert backend.physical_entries("v") == 500  # not yet expired: compaction keeps them
    time.sleep(2.2)
    backend.compact()
    assert backend.physical_entries("v") == 0
    assert backend.physical_entries("m") == 0
    assert backend.physical_entries("plain") == 500
    counts = backend.cleanup_counts()
    assert counts["v"]["compaction_filter"] == 500
    assert counts["m"]["compaction_filter"] == 500


@pytest.mark.slow
def test_scaled_clock_shortens_the_rocksdb_ttl(make_backend) -> None:
    backend = make_backend("rocksdb", B.ScaledClock(20.0))
    state = backend.get_list_state(list_desc(filter_ttl(20_000)))  # 20 clock s = 1 real s
    for key in range(100):
        backend.set_current_key(key)
        state.add(key)
    time.sleep(2.2)
    backend.compact()
    assert backend.physical_entries("l") == 0


def test_explicit_filter_with_manual_clock_is_rejected(make_backend, kind) -> None:
    backend = make_backend(kind, B.ManualClock(0))
    with pytest.raises(ValueError, match=r"compact_filter.*wall clock"):
        backend.get_state(value_desc(filter_ttl(1000)))


def test_explicit_filter_with_event_time_is_rejected(make_backend) -> None:
    backend = make_backend("rocksdb", B.SystemClock())
    cfg = (B.StateTtlConfig.new_builder(1000).use_event_time()
           .cleanup_in_rocksdb_compact_filter().build())
    with pytest.raises(ValueError, match="event time"):
        backend.get_state(value_desc(cfg))


def test_default_background_filter_is_skipped_on_a_manual_clock(make_backend) -> None:
    clock = B.ManualClock(0)
    backend = make_backend("rocksdb", clock)
    state = backend.get_state(value_desc(B.StateTtlConfig.new_builder(10).build()))
    backend.set_current_key(1)
    state.update(1)
    assert backend.native_ttl_db("v") is None  # lives in the main DB: no native TTL
    clock.set(100)
    backend.compact()
    assert backend.physical_entries("v") == 1


def test_default_background_filter_is_installed_on_the_wall_clock(make_backend) -> None:
    backend = make_backend("rocksdb", B.SystemClock())
    backend.get_state(value_desc(B.StateTtlConfig.new_builder(60_000).build()))
    assert backend.native_ttl_db("v") is not None
