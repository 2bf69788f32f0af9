"""RocksDB tuning (`rocksdb_options`), the like-for-like `ttl_db` layout and `rocksdb_stats()`.

Options are checked where RocksDB itself records them: the OPTIONS file it writes for each DB
lists every column family's settings. Compactions and what the compaction filter removed are
read back from RocksDB's statistics, with write buffers small enough that a few thousand
writes flush and compact.
"""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

import pytest

import backends as B
from tests.state.helpers import value_desc

SMALL = {"write_buffer_size": 64 << 10, "max_write_buffer_number": 2,
         "target_file_size_base": 64 << 10, "level0_file_num_compaction_trigger": 2}
VALUE = "x" * 200  # a value large enough that 64 KiB buffers fill every ~300 writes


def _filter_ttl(ttl_ms: int = 1000) -> B.StateTtlConfig:
    return (B.StateTtlConfig.new_builder(ttl_ms).cleanup_in_rocksdb_compact_filter(1000)
            .disable_cleanup_in_background().build())


def _string_desc(name: str, ttl: B.StateTtlConfig | None = None) -> B.ValueStateDescriptor:
    desc = B.ValueStateDescriptor(name, B.Types.STRING())
    if ttl is not None:
        desc.enable_time_to_live(ttl)
    return desc


def _write(backend: B.KeyedStateBackend, state, keys) -> None:
    for key in keys:
        backend.set_current_key(key)
        state.update(VALUE)


def _options_files(folder: Path) -> dict[str, dict[str, str]]:
    """Column family -> its options, from the newest OPTIONS file RocksDB wrote in `folder`."""
    newest = max(folder.glob("OPTIONS-*"), key=lambda p: int(p.name.split("-")[1]))
    out: dict[str, dict[str, str]] = {}
    current = None
    for line in newest.read_text().splitlines():
        header = re.match(r'\[CFOptions "(.*)"\]', line.strip())
        if header:
            current = out.setdefault(header.group(1), {})
        elif line.startswith("[") or current is None:
            current = None if line.startswith("[") else current
        elif "=" in line:
            key, _, value = line.strip().partition("=")
            current[key] = value
    return out


# --------------------------------------------------------------------------- options
def test_options_apply_to_every_column_family_and_native_db(make_backend, tmp_path):
    opts = {**SMALL, "compression": "zstd", "block_cache_size": 1 << 20}
    b = make_backend("rocksdb", B.SystemClock(), path=tmp_path / "r", rocksdb_options=opts)
    b.get_state(value_desc(None, name="plain"))
    b.get_state(value_desc(_filter_ttl(), name="filtered"))
    main = _options_files(tmp_path / "r" / "db")
    native = _options_files(next((tmp_path / "r" / "ttl").iterdir()))
    assert set(main) == {"default", "plain"} and set(native) == {"default"}
    for cf in [main["default"], main["plain"], native["default"]]:
        assert cf["write_buffer_size"] == str(64 << 10)
        assert cf["max_write_buffer_number"] == "2"
        assert cf["target_file_size_base"] == str(64 << 10)
        assert cf["level0_file_num_compaction_trigger"] == "2"
        assert cf["compression"] == "kZSTD"
    assert b.rocksdb_options.as_dict()["compression"] == "zstd"


def test_default_options_leave_rocksdb_defaults(make_backend, tmp_path):
    b = make_backend("rocksdb", B.ManualClock(0), path=tmp_path / "r")
    b.get_state(value_desc(None, name="plain"))
    cf = _options_files(tmp_path / "r" / "db")["plain"]
    assert cf["write_buffer_size"] == str(64 << 20)
    assert cf["level0_file_num_compaction_trigger"] == "4"


@pytest.mark.parametrize("opts,match", [
    ({"write_buffer_sz": 1 << 20}, "unknown rocksdb option"),
    ({"write_buffer_size": 10}, "write_buffer_size must be an integer in"),
    ({"write_buffer_size": True}, "write_buffer_size must be an integer in"),
    ({"max_write_buffer_number": 0}, "max_write_buffer_number"),
    ({"level0_file_num_compaction_trigger": 2.0}, "level0_file_num_compaction_trigger"),
    ({"block_cache_size": -1}, "block_cache_size"),
    ({"periodic_compaction_ms": 0}, "periodic_compaction_ms"),
    ({"compression": "gzip"}, "compression must be one of none, snappy"),
    ({"statistics": "yes"}, "statistics must be true or false"),
    ({"state_layout": "one_db"}, "state_layout must be one of column_family, ttl_db"),
])
def test_bad_options_are_refused_by_name(opts, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        B.create_backend("rocksdb", B.ManualClock(0), path=tmp_path / "r", rocksdb_options=opts)
    assert not (tmp_path / "r" / "db").exists()


def test_the_heap_backend_ignores_rocksdb_options():
    b = B.create_backend("heap", B.ManualClock(0), rocksdb_options=SMALL)
    assert b.kind == "heap"
    b.close()


# --------------------------------------------------------------------------- stats
def test_small_write_buffers_flush_and_compact(make_backend, tmp_path):
    b = make_backend("rocksdb", B.ManualClock(0), path=tmp_path / "r", rocksdb_options=SMALL)
    v = b.get_state(_string_desc("v"))
    keys = list(range(20_000))
    random.Random(3).shuffle(keys)  # overlapping key ranges: real compactions, not moves
    _write(b, v, keys)
    b.flush()
    stats = b.rocksdb_stats()
    assert stats["flushes"] > 10
    assert stats["compactions"] > 0
    assert stats["compaction_bytes_read"] > 0 and stats["compaction_bytes_written"] > 0
    assert stats["write_amplification"] > 1.0
    assert stats["sst_files"] > 0 and stats["sst_bytes"] > 0
    assert stats["compaction_keys_dropped"] == 0  # a plain state: nothing is filtered
    b.compact()
    after = b.rocksdb_stats()
    assert after["compactions"] > stats["compactions"]
    assert after["memtable_bytes"] <= stats["memtable_bytes"] or after["memtable_bytes"] < 1 << 16


def test_large_write_buffers_do_not_flush(make_backend, tmp_path):
    b = make_backend("rocksdb", B.ManualClock(0), path=tmp_path / "r")
    v = b.get_state(_string_desc("v"))
    _write(b, v, range(2_000))
    for _ in range(3):  # asking for sizes must not flush (a fetched handle once did)
        b.physical_bytes()
        b.rocksdb_stats()
    stats = b.rocksdb_stats()
    assert stats["flushes"] == 0 and stats["compactions"] == 0
    assert stats["sst_files"] == 0 and stats["memtable_bytes"] > 2_000 * len(VALUE)
    assert stats["write_amplification"] is None


def test_statistics_can_be_switched_off(make_backend, tmp_path):
    b = make_backend("rocksdb", B.ManualClock(0), path=tmp_path / "r",
                     rocksdb_options={**SMALL, "statistics": False})
    v = b.get_state(_string_desc("v"))
    _write(b, v, range(5_000))
    stats = b.rocksdb_stats()
    assert stats["statistics"] is False
    assert stats["flushes"] is None and stats["write_amplification"] is None
    assert stats["sst_files"] > 0  # properties need no statistics


def test_periodic_compaction_compacts_without_a_trigger(make_backend, tmp_path):
    """With the L0 trigger out of reach only the periodic compaction compacts."""
    no_trigger = {**SMALL, "level0_file_num_compaction_trigger": 1024}
    counts = {}
    for period in (None, 1):
        opts = dict(no_trigger, periodic_compaction_ms=period) if period else no_trigger
        b = make_backend("rocksdb", B.SystemClock(), path=tmp_path / f"r{period}",
                         rocksdb_options=opts)
        v = b.get_state(_string_desc("v"))
        _write(b, v, range(20_000))
        counts[period] = b.rocksdb_stats()["compactions"]
    assert counts[None] == 0
    assert counts[1] > 0


# --------------------------------------------------------------------------- ttl_db layout
def test_ttl_db_layout_puts_every_state_in_a_ttl_db_of_its_own(make_backend, tmp_path):
    b = make_backend("rocksdb", B.ManualClock(0), path=tmp_path / "r",
                     rocksdb_options={"state_layout": "ttl_db"})
    plain = b.get_state(value_desc(None, name="plain"))
    no_cleanup = b.get_state(value_desc(
        B.StateTtlConfig.new_builder(1000).disable_cleanup_in_background().build(), name="ttl"))
    assert b.native_ttl_db("plain") is not None and b.native_ttl_db("ttl") is not None
    b.set_current_key(1)
    plain.update(5)
    no_cleanup.update(6)
    assert (plain.value(), no_cleanup.value()) == (5, 6)
    assert _options_files(tmp_path / "r" / "db").keys() == {"default"}  # no column family


@pytest.mark.slow
def test_compaction_filter_removes_entries_in_compactions(make_backend, tmp_path):
    """Both strategies in the one `ttl_db` layout: after the TTL passed, ordinary compactions
    (small write buffers, new writes) drop expired filtered entries; `none` keeps everything
    (TTL 0 never expires); a manual compaction then shrinks the physical bytes."""
    b = make_backend("rocksdb", B.SystemClock(), path=tmp_path / "r",
                     rocksdb_options={**SMALL, "state_layout": "ttl_db"})
    filtered = b.get_state(_string_desc("filtered", _filter_ttl(1000)))
    kept = b.get_state(_string_desc("none"))
    _write(b, filtered, range(0, 8_000, 2))
    _write(b, kept, range(0, 8_000, 2))
    time.sleep(2.2)  # RocksDB's TTL is whole wall-clock seconds: 1 s, checked as > 1 s
    _write(b, filtered, range(1, 8_000, 2))  # interleaved keys: compactions rewrite old files
    assert b.rocksdb_stats()["compactions"] > 0
    assert b.cleanup_counts()["filtered"]["compaction_filter"] > 0
    before = b.physical_bytes()
    b.compact()
    counts = b.cleanup_counts()
    assert counts["filtered"]["compaction_filter"] >= 4_000
    assert b.physical_entries("filtered") == 4_000  # only the fresh odd keys are left
    assert b.physical_entries("none") == 4_000
    assert b.physical_bytes() < before
    assert counts.get("none", {}).get("compaction_filter", 0) == 0


@pytest.mark.slow
def test_without_compactions_the_filter_removes_nothing(make_backend, tmp_path):
    b = make_backend("rocksdb", B.SystemClock(), path=tmp_path / "r")
    filtered = b.get_state(_string_desc("filtered", _filter_ttl(1000)))
    _write(b, filtered, range(3_000))
    time.sleep(2.2)
    _write(b, filtered, range(3_000, 3_100))
    stats = b.rocksdb_stats()
    assert stats["flushes"] == 0 and stats["compactions"] == 0
    assert stats["compaction_keys_dropped"] == 0
    assert b.cleanup_counts()["filtered"]["compaction_filter"] == 0
    assert b.physical_entries("filtered") == 3_100
