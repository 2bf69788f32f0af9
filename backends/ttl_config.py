"""StateTtlConfig: Flink 2.x's TTL configuration with PyFlink's method names.

Defaults and validation follow Flink 2.x (docs/ttl.md, "Flink's rules"): OnCreateAndWrite,
NeverReturnExpired, ProcessingTime, background cleanup on (incremental 5/false on heap, the
compaction filter on RocksDB), queryTimeAfterNumEntries 1000, periodic compaction 30 days.
statebench adds the EventTime characteristic and timer (expiry-index) cleanup, which Flink only
proposed.
"""

from __future__ import annotations

import datetime as _dt
import enum
from dataclasses import dataclass, field, replace

from backends.types import INT64_MAX

DEFAULT_INCREMENTAL_CLEANUP_SIZE = 5
DEFAULT_QUERY_TIME_AFTER_NUM_ENTRIES = 1000
DEFAULT_PERIODIC_COMPACTION_MS = 30 * 24 * 3600 * 1000


def _to_ms(value: int | _dt.timedelta, setting: str) -> int:
    """Accept int milliseconds or a timedelta; sub-millisecond durations count as 0 (as Flink)."""
    if isinstance(value, _dt.timedelta):
        return value // _dt.timedelta(milliseconds=1)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{setting} must be int milliseconds or datetime.timedelta, got {value!r}")
    return value


def _positive_ttl(ttl: int | _dt.timedelta) -> int:
    ms = _to_ms(ttl, "ttl")
    if ms <= 0:
        raise ValueError(f"ttl is expected to be positive (got {ms} ms)")
    if ms > INT64_MAX:  # Flink's Duration.toMillis() overflows there; timestamps are int64
        raise ValueError(f"ttl must fit in a signed 64-bit count of milliseconds (<= {INT64_MAX}),"
                         f" got {ms} ms")
    return ms


@dataclass(frozen=True)
class IncrementalCleanupStrategy:
    """Heap only: a lazy global iterator visits `cleanup_size` entries per state access."""

    cleanup_size: int = DEFAULT_INCREMENTAL_CLEANUP_SIZE
    run_cleanup_for_every_record: bool = False

    def get_cleanup_size(self) -> int:
        return self.cleanup_size

    def run_cleanup_for_every_record_(self) -> bool:
        return self.run_cleanup_for_every_record


@dataclass(frozen=True)
class RocksdbCompactFilterCleanupStrategy:
    """RocksDB only: expired entries are dropped inside RocksDB's own compactions."""

    query_time_after_num_entries: int = DEFAULT_QUERY_TIME_AFTER_NUM_ENTRIES
    periodic_compaction_time_ms: int = DEFAULT_PERIODIC_COMPACTION_MS

    def get_query_time_after_num_entries(self) -> int:
        return self.query_time_after_num_entries

    def get_periodic_compaction_time(self) -> _dt.timedelta:
        return _dt.timedelta(milliseconds=self.periodic_compaction_time_ms)


@dataclass(frozen=True)
class TimerCleanupStrategy:
    """Both backends: an expiry-ordered index removes entries once the clock passes their expiry.

    `granularity_ms` buckets expiry times (0 = exact per-millisecond buckets) so that the index
    costs one dict append per write; an entry is never removed before it is really expired.
    """

    granularity_ms: int = 0


@dataclass(frozen=True)
class CleanupStrategies:
    """Which background cleanups a state uses, and whether defaults apply (PyFlink's shape)."""

    cleanup_in_background: bool = True
    full_snapshot: bool = False
    incremental: IncrementalCleanupStrategy | None = None
    rocksdb_compact_filter: RocksdbCompactFilterCleanupStrategy | None = None
    timers: TimerCleanupStrategy | None = None
    #: the registered strategy (``backends.strategies``) that configured these, if one did: a
    #: reference lane asks it for its own configuration rather than reading only the flags it
    #: knows (not part of equality or of ``to_dict``: it names, it does not configure)
    registered: str | None = field(default=None, compare=False)

    def is_cleanup_in_background(self) -> bool:
        return self.cleanup_in_background

    def in_full_snapshot(self) -> bool:
        return self.full_snapshot

    def get_incremental_cleanup_strategy(self) -> IncrementalCleanupStrategy | None:
        """The explicit strategy, else Flink's default (5, False) when background cleanup is on."""
        if self.incremental is not None:
            return self.incremental
        return IncrementalCleanupStrategy() if self.cleanup_in_background else None

    def get_rocksdb_compact_filter_cleanup_strategy(
        self,
    ) -> RocksdbCompactFilterCleanupStrategy | None:
        if self.rocksdb_compact_filter is not None:
            return self.rocksdb_compact_filter
        return RocksdbCompactFilterCleanupStrategy() if self.cleanup_in_background else None

    def get_timer_cleanup_strategy(self) -> TimerCleanupStrategy | None:
        return self.timers

    def is_explicit_incremental(self) -> bool:
        return self.incremental is not None

    def is_explicit_compact_filter(self) -> bool:
        return self.rocksdb_compact_filter is not None


class StateTtlConfig:
    """Immutable TTL configuration of one state descriptor. Build with `new_builder(ttl)`."""

    class UpdateType(enum.Enum):
        Disabled = 0
        OnCreateAndWrite = 1
        OnReadAndWrite = 2

    class StateVisibility(enum.Enum):
        ReturnExpiredIfNotCleanedUp = 0
        NeverReturnExpired = 1

    class TtlTimeCharacteristic(enum.Enum):
        ProcessingTime = 0
        EventTime = 1  # statebench extension: the timestamp of the record being processed

    def __init__(
        self,
        update_type: StateTtlConfig.UpdateType,
        state_visibility: StateTtlConfig.StateVisibility,
        ttl_time_characteristic: StateTtlConfig.TtlTimeCharacteristic,
        ttl: int | _dt.timedelta,
        cleanup_strategies: CleanupStrategies,
    ) -> None:
        for setting, val, typ in (
            ("update_type", update_type, StateTtlConfig.UpdateType),
            ("state_visibility", state_visibility, StateTtlConfig.StateVisibility),
            ("ttl_time_characteristic", ttl_time_characteristic,
             StateTtlConfig.TtlTimeCharacteristic),
        ):
            if not isinstance(val, typ):
                raise ValueError(f"{setting} must be a {typ.__qualname__}, got {val!r}")
        self._update_type = update_type
        self._state_visibility = state_visibility
        self._ttl_time_characteristic = ttl_time_characteristic
        self._ttl = _positive_ttl(ttl)
        self._cleanup_strategies = cleanup_strategies

    @staticmethod
    def new_builder(ttl: int | _dt.timedelta) -> StateTtlConfig.Builder:
        return StateTtlConfig.Builder(ttl)

    def get_update_type(self) -> StateTtlConfig.UpdateType:
        return self._update_type

    def get_state_visibility(self) -> StateTtlConfig.StateVisibility:
        return self._state_visibility

    def get_ttl(self) -> int:
        """The TTL in milliseconds."""
        return self._ttl

    def get_ttl_time_characteristic(self) -> StateTtlConfig.TtlTimeCharacteristic:
        return self._ttl_time_characteristic

    def is_enabled(self) -> bool:
        return self._update_type is not StateTtlConfig.UpdateType.Disabled

    def get_cleanup_strategies(self) -> CleanupStrategies:
        return self._cleanup_strategies

    def to_dict(self) -> dict:
        """A JSON-able description, for run metadata and reports (never persisted in snapshots:
        as in Flink, TTL config is how the running job treats the state, not part of it)."""
        cs = self._cleanup_strategies
        return {
            "ttl_ms": self._ttl,
            "update_type": self._update_type.name,
            "state_visibility": self._state_visibility.name,
            "ttl_time_characteristic": self._ttl_time_characteristic.name,
            "cleanup_in_background": cs.cleanup_in_background,
            "full_snapshot": cs.full_snapshot,
            "incremental": None if cs.incremental is None else vars(cs.incremental).copy(),
            "rocksdb_compact_filter": None
            if cs.rocksdb_compact_filter is None
            else vars(cs.rocksdb_compact_filter).copy(),
            "timers": None if cs.timers is None else vars(cs.timers).copy(),
        }

    def __repr__(self) -> str:
        return f"StateTtlConfig({self.to_dict()})"

    class Builder:
        """Fluent builder with PyFlink's method names; validation happens where Flink does it."""

        def __init__(self, ttl: int | _dt.timedelta) -> None:
            self._ttl = _positive_ttl(ttl)
            self._update_type = StateTtlConfig.UpdateType.OnCreateAndWrite
            self._visibility = StateTtlConfig.StateVisibility.NeverReturnExpired
            self._characteristic = StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
            self._strategies = CleanupStrategies()

        def set_update_type(self, update_type: StateTtlConfig.UpdateType) -> StateTtlConfig.Builder:
            self._update_type = update_type
            return self

        def update_ttl_on_create_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)

        def update_ttl_on_read_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)

        def set_state_visibility(
            self, visibility: StateTtlConfig.StateVisibility
        ) -> StateTtlConfig.Builder:
            self._visibility = visibility
            return self

        def return_expired_if_not_cleaned_up(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(
                StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
            )

        def never_return_expired(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)

        def set_ttl_time_characteristic(
            self, characteristic: StateTtlConfig.TtlTimeCharacteristic
        ) -> StateTtlConfig.Builder:
            self._characteristic = characteristic
            return self

        def use_processing_time(self) -> StateTtlConfig.Builder:
            return self.set_ttl_time_characteristic(
                StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
            )

        def use_event_time(self) -> StateTtlConfig.Builder:
            return self.set_ttl_time_characteristic(StateTtlConfig.TtlTimeCharacteristic.EventTime)

        def set_ttl(self, ttl: int | _dt.timedelta) -> StateTtlConfig.Builder:
            self._ttl = _positive_ttl(ttl)
            return self

        def cleanup_full_snapshot(self) -> StateTtlConfig.Builder:
            self._strategies = replace(self._strategies, full_snapshot=True)
            return self

        def cleanup_incrementally(
            self, cleanup_size: int, run_cleanup_for_every_record: bool
        ) -> StateTtlConfig.Builder:
            if isinstance(cleanup_size, bool) or not isinstance(cleanup_size, int):
                raise TypeError(f"cleanup_size must be an int, got {cleanup_size!r}")
            if cleanup_size <= 0:
                raise ValueError(
                    "cleanup_size: number of incrementally cleaned up state entries should be "
                    f"positive (got {cleanup_size})"
                )
            self._strategies = replace(
                self._strategies,
                incremental=IncrementalCleanupStrategy(
                    cleanup_size, bool(run_cleanup_for_every_record)
                ),
            )
            return self

        def cleanup_in_rocksdb_compact_filter(
            self,
            query_time_after_num_entries: int = DEFAULT_QUERY_TIME_AFTER_NUM_ENTRIES,
            periodic_compaction_time: int | _dt.timedelta = DEFAULT_PERIODIC_COMPACTION_MS,
        ) -> StateTtlConfig.Builder:
            if isinstance(query_time_after_num_entries, bool) or not isinstance(
                query_time_after_num_entries, int
            ):
                raise TypeError(
                    "query_time_after_num_entries must be an int, got "
                    f"{query_time_after_num_entries!r}"
                )
            if query_time_after_num_entries < 0:
                raise ValueError(
                    "query_time_after_num_entries must be >= 0 "
                    f"(got {query_time_after_num_entries})"
                )
            period = _to_ms(periodic_compaction_time, "periodic_compaction_time")
            if period < 0:
                raise ValueError(f"periodic_compaction_time must be >= 0 (got {period} ms)")
            self._strategies = replace(
                self._strategies,
                rocksdb_compact_filter=RocksdbCompactFilterCleanupStrategy(
                    query_time_after_num_entries, period
                ),
            )
            return self

        def cleanup_with_timers(self, granularity_ms: int = 0) -> StateTtlConfig.Builder:
            """statebench extension: expiry-index cleanup (see TimerCleanupStrategy)."""
            if isinstance(granularity_ms, bool) or not isinstance(granularity_ms, int):
                raise TypeError(f"granularity_ms must be an int, got {granularity_ms!r}")
            if granularity_ms < 0:
                raise ValueError(f"granularity_ms must be >= 0 (got {granularity_ms})")
            self._strategies = replace(
                self._strategies, timers=TimerCleanupStrategy(granularity_ms)
            )
            return self

        def disable_cleanup_in_background(self) -> StateTtlConfig.Builder:
            """Drops only the *default* background strategies; explicit ones stay (as Flink)."""
            self._strategies = replace(self._strategies, cleanup_in_background=False)
            return self

        def registered_as(self, name: str) -> StateTtlConfig.Builder:
            """Record which registered strategy (``backends.strategies``) configured this."""
            self._strategies = replace(self._strategies, registered=name)
            return self

        def build(self) -> StateTtlConfig:
            return StateTtlConfig(
                self._update_type,
                self._visibility,
                self._characteristic,
                self._ttl,
                self._strategies,
            )


StateTtlConfig.DISABLED = StateTtlConfig(  # type: ignore[attr-defined]
    StateTtlConfig.UpdateType.Disabled,
    StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp,
    StateTtlConfig.TtlTimeCharacteristic.ProcessingTime,
    INT64_MAX,
    CleanupStrategies(cleanup_in_background=False),
)

__all__ = [
    "INT64_MAX",
    "CleanupStrategies",
    "IncrementalCleanupStrategy",
    "RocksdbCompactFilterCleanupStrategy",
    "StateTtlConfig",
    "TimerCleanupStrategy",
]
