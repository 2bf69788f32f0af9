"""RocksDB tuning that applies to every state alike, and RocksDB's own counters read back.

`RocksDBOptions` is what a spec's `[rocksdb]` table (and `create_backend("rocksdb", ...,
rocksdb_options={...})`) sets. Every column family of the main DB and every native-TTL DB of a
backend is opened with the same values, so strategies compared on one backend differ only in
their cleanup. `state_layout = "ttl_db"` goes further for like-for-like comparisons: every state,
whatever its cleanup, lives in a DB of its own opened in RocksDB's TTL mode, as a compaction-filter
state does; the others get TTL 0, which RocksDB's DBWithTTL reads as "never expires" (checked
here: 1,000 entries written with TTL 0 all survived a full compaction 2.2 s later, while TTL 1
dropped them all). Values then carry the same 4-byte write-time suffix in every scenario.

rocksdict exposes no `periodic_compaction_seconds`, so `periodic_compaction_ms` is run by
statebench, as the compaction-filter cleanup's own period is: a full manual compaction of every
DB once that much clock time has passed (checked every few thousand records).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import rocksdict

COLUMN_FAMILY = "column_family"
TTL_DB = "ttl_db"
STATE_LAYOUTS = (COLUMN_FAMILY, TTL_DB)
COMPRESSIONS = {
    "none": rocksdict.DBCompressionType.none,
    "snappy": rocksdict.DBCompressionType.snappy,
    "lz4": rocksdict.DBCompressionType.lz4,
    "lz4hc": rocksdict.DBCompressionType.lz4hc,
    "zstd": rocksdict.DBCompressionType.zstd,
    "zlib": rocksdict.DBCompressionType.zlib,
    "bz2": rocksdict.DBCompressionType.bz2,
}
KIB, GIB = 1 << 10, 1 << 30
# Inclusive bounds of each integer option: small enough to be a real buffer, large enough for a
# test that wants flushes every few hundred writes, and never more than this machine could hold.
_INT_BOUNDS = {
    "write_buffer_size": (64 * KIB, 4 * GIB),
    "max_write_buffer_number": (1, 64),
    "target_file_size_base": (64 * KIB, 4 * GIB),
    "level0_file_num_compaction_trigger": (1, 1024),
    "block_cache_size": (0, 64 * GIB),
    "periodic_compaction_ms": (1, 10 * 365 * 86_400_000),
}


@dataclass(frozen=True)
class RocksDBOptions:
    """None leaves RocksDB's default (write buffer 64 MiB, 2 buffers, 64 MiB target files, L0
    trigger 4, RocksDB's default block cache per column family, snappy compression, no
    periodic compaction)."""

    write_buffer_size: int | None = None
    max_write_buffer_number: int | None = None
    target_file_size_base: int | None = None
    level0_file_num_compaction_trigger: int | None = None
    block_cache_size: int | None = None  # bytes, one cache shared by every DB of a backend
    compression: str | None = None
    periodic_compaction_ms: int | None = None
    statistics: bool = True  # RocksDB statistics on every DB: needed by rocksdb_stats()
    state_layout: str = COLUMN_FAMILY

    def __post_init__(self) -> None:
        for name, (low, high) in _INT_BOUNDS.items():
            value = getattr(self, name)
            if value is None:
                continue
            if type(value) is not int or not low <= value <= high:
                raise ValueError(
                    f"rocksdb option {name} must be an integer in [{low}, {high}], got {value!r}")
        if self.compression is not None and self.compression not in COMPRESSIONS:
            raise ValueError(
                f"rocksdb option compression must be one of {', '.join(COMPRESSIONS)}, got "
                f"{self.compression!r}")
        if type(self.statistics) is not bool:
            raise ValueError(f"rocksdb option statistics must be true or false, got "
                             f"{self.statistics!r}")
        if self.state_layout not in STATE_LAYOUTS:
            raise ValueError(
                f"rocksdb option state_layout must be one of {', '.join(STATE_LAYOUTS)}, got "
                f"{self.state_layout!r}")

    @classmethod
    def of(cls, value: RocksDBOptions | Mapping[str, Any] | None) -> RocksDBOptions:
        """The options from a mapping (a spec's [rocksdb] table), refusing unknown names."""
        if value is None:
            return cls()
        if isinstance(value, RocksDBOptions):
            return value
        if not isinstance(value, Mapping):
            raise ValueError(f"rocksdb_options must be a mapping, got {value!r}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(k) for k in value if k not in known)
        if unknown:
            raise ValueError(
                f"unknown rocksdb option(s) {unknown}; expected some of {sorted(known)}")
        return cls(**value)

    def as_dict(self) -> dict[str, Any]:
        """Every option with its value (None: RocksDB's default), e.g. for run.json."""
        return asdict(self)

    def new_cache(self) -> Any:
        """The block cache every DB of one backend shares, or None for RocksDB's default."""
        return None if self.block_cache_size is None else rocksdict.Cache(self.block_cache_size)

    def apply(self, opts: rocksdict.Options, cache: Any = None) -> None:
        """Set these options on a DB's or a column family's Options."""
        if self.write_buffer_size is not None:
            opts.set_write_buffer_size(self.write_buffer_size)
        if self.max_write_buffer_number is not None:
            opts.set_max_write_buffer_number(self.max_write_buffer_number)
        if self.target_file_size_base is not None:
            opts.set_target_file_size_base(self.target_file_size_base)
        if self.level0_file_num_compaction_trigger is not None:
            opts.set_level_zero_file_num_compaction_trigger(
                self.level0_file_num_compaction_trigger)
        if self.compression is not None:
            opts.set_compression_type(COMPRESSIONS[self.compression]())
        if cache is not None:
            table = rocksdict.BlockBasedOptions()
            table.set_block_cache(cache)
            opts.set_block_based_table_factory(table)


# --------------------------------------------------------------------------- reading back
FLUSH_MICROS = "rocksdb.db.flush.micros"
COMPACTION_MICROS = "rocksdb.compaction.times.micros"
FLUSH_WRITE_BYTES = "rocksdb.flush.write.bytes"
COMPACT_READ_BYTES = "rocksdb.compact.read.bytes"
COMPACT_WRITE_BYTES = "rocksdb.compact.write.bytes"
KEY_DROP_USER = "rocksdb.compaction.key.drop.user"


def statistic(text: str, name: str) -> int:
    """A ticker's count, or a histogram's number of samples, from `Options.get_statistics()`."""
    match = re.search(rf"^{re.escape(name)} (?:COUNT : (\d+)$|P50 .*? COUNT : (\d+) )", text,
                      re.M)
    if match is None:
        return 0
    return int(match.group(1) or match.group(2))


def summed_statistics(texts: list[str]) -> dict[str, int]:
    """Flushes, compactions and their bytes, summed over several DBs' statistics."""
    names = {"flushes": FLUSH_MICROS, "compactions": COMPACTION_MICROS,
             "flush_bytes_written": FLUSH_WRITE_BYTES,
             "compaction_bytes_read": COMPACT_READ_BYTES,
             "compaction_bytes_written": COMPACT_WRITE_BYTES,
             "compaction_keys_dropped": KEY_DROP_USER}
    return {key: sum(statistic(t, name) for t in texts) for key, name in names.items()}
