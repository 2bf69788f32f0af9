"""StateTtlConfig: Flink 2.x defaults, getters and validation (flink-ttl-facts §1.3)."""

from __future__ import annotations

import datetime as dt

import pytest

import backends as B

C = B.StateTtlConfig


def test_defaults_match_flink() -> None:
    cfg = C.new_builder(1000).build()
    assert cfg.get_ttl() == 1000
    assert cfg.get_update_type() is C.UpdateType.OnCreateAndWrite
    assert cfg.get_state_visibility() is C.StateVisibility.NeverReturnExpired
    assert cfg.get_ttl_time_characteristic() is C.TtlTimeCharacteristic.ProcessingTime
    assert cfg.is_enabled()
    cs = cfg.get_cleanup_strategies()
    assert cs.is_cleanup_in_background()
    assert not cs.in_full_snapshot()
    inc = cs.get_incremental_cleanup_strategy()
    assert (inc.cleanup_size, inc.run_cleanup_for_every_record) == (5, False)
    cf = cs.get_rocksdb_compact_filter_cleanup_strategy()
    assert cf.query_time_after_num_entries == 1000
    assert cf.get_periodic_compaction_time() == dt.timedelta(days=30)
    assert cs.get_timer_cleanup_strategy() is None


def test_disable_background_drops_only_defaults() -> None:
    cfg = C.new_builder(10).disable_cleanup_in_background().build()
    cs = cfg.get_cleanup_strategies()
    assert cs.get_incremental_cleanup_strategy() is None
    assert cs.get_rocksdb_compact_filter_cleanup_strategy() is None
    explicit = (C.new_builder(10).cleanup_incrementally(7, True)
                .cleanup_in_rocksdb_compact_filter(50).disable_cleanup_in_background().build())
    cs = explicit.get_cleanup_strategies()
    assert cs.get_incremental_cleanup_strategy().cleanup_size == 7
    assert cs.get_incremental_cleanup_strategy().run_cleanup_for_every_record
    assert cs.get_rocksdb_compact_filter_cleanup_strategy().query_time_after_num_entries == 50


def test_builder_setters_and_timedelta() -> None:
    cfg = (C.new_builder(dt.timedelta(seconds=2))
           .set_update_type(C.UpdateType.OnReadAndWrite)
           .set_state_visibility(C.StateVisibility.ReturnExpiredIfNotCleanedUp)
           .set_ttl_time_characteristic(C.TtlTimeCharacteristic.EventTime)
           .cleanup_full_snapshot().build())
    assert cfg.get_ttl() == 2000
    assert cfg.get_update_type() is C.UpdateType.OnReadAndWrite
    assert cfg.get_state_visibility() is C.StateVisibility.ReturnExpiredIfNotCleanedUp
    assert cfg.get_ttl_time_characteristic() is C.TtlTimeCharacteristic.EventTime
    assert cfg.get_cleanup_strategies().in_full_snapshot()


@pytest.mark.parametrize("ttl", [0, -1, dt.timedelta(0), dt.timedelta(microseconds=999)])
def test_non_positive_ttl_is_rejected(ttl: object) -> None:
    with pytest.raises(ValueError, match="ttl"):
        C.new_builder(ttl).build()


@pytest.mark.parametrize("ttl", [2**63, 2**70])
def test_ttl_beyond_int64_milliseconds_is_rejected(ttl: object) -> None:
    with pytest.raises(ValueError, match="64-bit"):
        C.new_builder(ttl).build()
    assert C.new_builder(2**63 - 1).build().get_ttl() == 2**63 - 1  # the largest is fine


@pytest.mark.parametrize("size", [0, -3])
def test_cleanup_size_must_be_positive(size: int) -> None:
    with pytest.raises(ValueError, match="cleanup_size"):
        C.new_builder(10).cleanup_incrementally(size, False)


def test_bad_types_and_values_are_named() -> None:
    with pytest.raises(TypeError, match="ttl"):
        C.new_builder("10")
    with pytest.raises(ValueError, match="query_time_after_num_entries"):
        C.new_builder(10).cleanup_in_rocksdb_compact_filter(-1)
    with pytest.raises(ValueError, match="update_type"):
        C.new_builder(10).set_update_type(None).build()


def test_disabled_config() -> None:
    assert not C.DISABLED.is_enabled()
    assert C.DISABLED.get_ttl() == (1 << 63) - 1
