"""statebench descriptors and TTL configs, mapped 1:1 onto the worker's REGISTER command.

The mapping is Flink's StateTtlConfig builder call for call: update type, visibility,
disableCleanupInBackground(), cleanupFullSnapshot(), cleanupIncrementally(size, per_record),
cleanupInRocksdbCompactFilter(n). Settings Flink does not have raise NotApplicableError with
Flink's reason, so a comparison never silently runs a different strategy: a config made by a
registered strategy (``backends.strategies``) without a Flink configuration is refused, not
encoded by the flags it happens to set (it would run as ``none``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from backends.descriptors import StateDescriptor
from backends.flink import wire
from backends.flink.errors import NotApplicableError
from backends.strategies import STRATEGIES, TIMER_REASON
from backends.ttl_config import DEFAULT_PERIODIC_COMPACTION_MS, StateTtlConfig

KINDS = {"value": 1, "list": 2, "map": 3, "reducing": 4, "aggregating": 5}
REDUCE_FUNCTIONS = {"sum": 1, "max": 3, "min": 4}
AGGREGATE_FUNCTIONS = {"sum": 1, "count": 2}
# INT and FLOAT travel as Flink LONG / DOUBLE: the visible values are the same Python numbers.
TYPE_CODES = {"LONG": wire.T_LONG, "INT": wire.T_LONG, "STRING": wire.T_STRING,
              "DOUBLE": wire.T_DOUBLE, "FLOAT": wire.T_DOUBLE, "BOOLEAN": wire.T_BOOL}

EVENT_TIME_REASON = (
    "Flink's TTL is processing time only (TtlTimeCharacteristic.ProcessingTime is its single "
    "value), so event-time TTL has no Flink lane"
)

#: statebench's RocksDB option -> Flink's configuration key (RocksDBConfigurableOptions), or the
#: worker's own key for what Flink sets only through a RocksDBOptionsFactory.
ROCKSDB_CONFIG_KEYS = {
    "write_buffer_size": "state.backend.rocksdb.writebuffer.size",
    "max_write_buffer_number": "state.backend.rocksdb.writebuffer.count",
    "target_file_size_base": "state.backend.rocksdb.compaction.level.target-file-size-base",
    "block_cache_size": "state.backend.rocksdb.block.cache-size",
    "compression": "state.backend.rocksdb.compression.per.level",
    "level0_file_num_compaction_trigger": "statebench.level0-file-num-compaction-trigger",
}
#: statebench's compression names -> RocksDB's CompressionType names (Flink's list values).
FLINK_COMPRESSIONS = {
    "none": "NO_COMPRESSION", "snappy": "SNAPPY_COMPRESSION", "lz4": "LZ4_COMPRESSION",
    "lz4hc": "LZ4HC_COMPRESSION", "zstd": "ZSTD_COMPRESSION", "zlib": "ZLIB_COMPRESSION",
    "bz2": "BZLIB2_COMPRESSION",
}


def rocksdb_configuration(options: dict[str, Any]) -> dict[str, str]:
    """A spec's [rocksdb] options as the Flink configuration of Flink's RocksDB backend.

    Sizes are bytes ("<n>b", Flink's MemorySize syntax); compression applies to every level, as
    statebench's does. `periodic_compaction_ms` is not here: Flink sets it with the compaction
    filter (see `ttl_fields`). Unknown names raise, so nothing is silently left at Flink's
    default."""
    out: dict[str, str] = {}
    for name, value in sorted(options.items()):
        if name == "periodic_compaction_ms":
            continue
        if name not in ROCKSDB_CONFIG_KEYS:
            raise ValueError(f"rocksdb option {name!r} has no Flink equivalent")
        if name == "compression":
            text = FLINK_COMPRESSIONS[value]
        elif name.endswith(("_size", "_size_base")):
            text = f"{int(value)}b"
        else:
            text = str(int(value))
        out[ROCKSDB_CONFIG_KEYS[name]] = text
    return out


#: statebench's RocksDB option -> ForSt's configuration key (ForStConfigurableOptions), the
#: same mapping as ROCKSDB_CONFIG_KEYS: every [rocksdb] option has a ForSt equivalent (ForSt is
#: RocksDB 8.10 underneath, with Flink's state.backend.rocksdb.* options renamed
#: state.backend.forst.*). level0_file_num_compaction_trigger has no Flink option on either
#: backend; the worker sets it through a ForStOptionsFactory, as it does for RocksDB.
#: periodic_compaction_ms goes with the compaction filter (per backend), as on RocksDB.
FORST_CONFIG_KEYS = {
    "write_buffer_size": "state.backend.forst.writebuffer.size",
    "max_write_buffer_number": "state.backend.forst.writebuffer.count",
    "target_file_size_base": "state.backend.forst.compaction.level.target-file-size-base",
    "block_cache_size": "state.backend.forst.block.cache-size",
    "compression": "state.backend.forst.compression.per.level",
    "level0_file_num_compaction_trigger": "statebench.forst.level0-file-num-compaction-trigger",
}
#: The worker's key for ForSt's primary ("remote") folder: Flink's own option name.
FORST_PRIMARY_DIR = "state.backend.forst.primary-dir"


def forst_configuration(options: dict[str, Any]) -> dict[str, str]:
    """A spec's [rocksdb] options as the Flink configuration of ForSt's keyed backend: the same
    values as `rocksdb_configuration`, under ForSt's keys (FORST_CONFIG_KEYS)."""
    renamed = {ROCKSDB_CONFIG_KEYS[name]: FORST_CONFIG_KEYS[name] for name in FORST_CONFIG_KEYS}
    return {renamed[key]: value for key, value in rocksdb_configuration(options).items()}


_REGISTER = struct.Struct(">BHB")
_REGISTER_TAIL = struct.Struct(">BBBqBBBiBq")


@dataclass(frozen=True)
class FlinkState:
    """A state registered in a worker: what the batch encoder needs to address it."""

    sid: int
    kind: str
    name: str
    value_code: int
    key_code: int


def _type_code(type_info: Any, what: str) -> int:
    name = getattr(type_info, "type_name", None)
    if name not in TYPE_CODES:
        raise ValueError(
            f"{what} has type {type_info!r}; the Flink worker supports "
            f"{', '.join(sorted(TYPE_CODES))}"
        )
    return TYPE_CODES[name]


def _function_code(kind: str, function: str | None, name: str) -> int:
    if kind == "reducing":
        table = REDUCE_FUNCTIONS
    elif kind == "aggregating":
        table = AGGREGATE_FUNCTIONS
    else:
        if function is not None:
            raise ValueError(f"state '{name}': function= applies to reducing/aggregating states")
        return 0
    if function not in table:
        raise ValueError(
            f"{kind} state '{name}' runs a Java function in the worker: pass "
            f"function= one of {', '.join(table)} (got {function!r})"
        )
    return table[function]


def ttl_fields(cfg: StateTtlConfig | None, query_time_after_num_entries: int,
               periodic_compaction_ms: int | None) -> tuple[int, int, int, int, int, int, int]:
    """(ttl_ms, update, visibility, flags, inc_size, inc_per_record, query_time); ttl_ms 0 = off.

    flags: 1 disableCleanupInBackground, 2 cleanupFullSnapshot, 4 cleanupIncrementally,
    8 cleanupInRocksdbCompactFilter. Flink 2.x sets the compaction filter's query interval and
    periodic compaction per backend, so a state asking for other values than the worker's is an
    error rather than a silently different run.
    """
    if cfg is None or not cfg.is_enabled():
        return 0, 0, 0, 0, 0, 0, 0
    if cfg.get_ttl_time_characteristic() is not StateTtlConfig.TtlTimeCharacteristic.ProcessingTime:
        raise NotApplicableError(EVENT_TIME_REASON)
    cs = cfg.get_cleanup_strategies()
    if cs.get_timer_cleanup_strategy() is not None:
        raise NotApplicableError(TIMER_REASON)
    if cs.registered is not None:  # a registered strategy: its own Flink configuration
        registered = STRATEGIES.get(cs.registered)
        if registered is None:
            raise NotApplicableError(f"cleanup strategy '{cs.registered}' is not registered")
        if registered.flink_refused is not None:
            raise NotApplicableError(registered.flink_refused)
    update = 2 if cfg.get_update_type() is StateTtlConfig.UpdateType.OnReadAndWrite else 1
    visibility = (2 if cfg.get_state_visibility()
                  is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp else 1)
    flags = 0 if cs.is_cleanup_in_background() else 1
    if cs.in_full_snapshot():
        flags |= 2
    inc_size, per_record = 0, 0
    if cs.is_explicit_incremental():
        flags |= 4
        inc_size = cs.incremental.cleanup_size
        per_record = 1 if cs.incremental.run_cleanup_for_every_record else 0
    query_time = 0
    if cs.is_explicit_compact_filter():
        flags |= 8
        query_time = cs.rocksdb_compact_filter.query_time_after_num_entries
        if query_time != query_time_after_num_entries:
            raise ValueError(
                f"compaction_filter({query_time}): Flink 2.x sets query_time_after_num_entries per "
                f"backend (state.backend.rocksdb.compaction.filter.query-time-after-num-entries); "
                f"open the worker with query_time_after_num_entries={query_time} "
                f"(it has {query_time_after_num_entries})"
            )
        periodic = cs.rocksdb_compact_filter.periodic_compaction_time_ms
        worker_periodic = (DEFAULT_PERIODIC_COMPACTION_MS if periodic_compaction_ms is None
                           else periodic_compaction_ms)
        if periodic != worker_periodic:
            raise ValueError(
                f"compaction filter periodic compaction {periodic} ms: Flink 2.x sets it per "
                f"backend (state.backend.rocksdb.compaction.filter.periodic-compaction-time); "
                f"open the worker with periodic_compaction_ms={periodic}"
            )
    return cfg.get_ttl(), update, visibility, flags, inc_size, per_record, query_time


def encode_register(buf: bytearray, sid: int, desc: StateDescriptor, function: str | None,
                    query_time_after_num_entries: int,
                    periodic_compaction_ms: int | None) -> FlinkState:
    """Appends REGISTER for a statebench descriptor; returns the handle for later ops."""
    if not isinstance(desc, StateDescriptor):
        raise TypeError(f"expected a statebench state descriptor, got {desc!r}")
    kind = desc.kind
    name = desc.get_name()
    value_code = _type_code(desc.type_info, f"state '{name}'")
    key_code = (_type_code(desc.key_type_info, f"map keys of state '{name}'")
                if kind == "map" else 0)
    if kind in ("reducing", "aggregating") and value_code != wire.T_LONG:
        raise ValueError(f"{kind} state '{name}': the worker's Java functions take LONG values")
    fn = _function_code(kind, function, name)
    ttl = ttl_fields(desc.get_ttl_config(), query_time_after_num_entries, periodic_compaction_ms)
    buf += _REGISTER.pack(wire.REGISTER, sid, KINDS[kind])
    wire.put_str(buf, name)
    buf += _REGISTER_TAIL.pack(value_code, key_code, fn, *ttl)
    return FlinkState(sid, kind, name, value_code, key_code)
