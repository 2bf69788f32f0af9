"""The keyed state backend: current key, state registration, TTL decoration and cleanups.

Everything here is shared by both backends; `HeapKeyedStateBackend` and
`RocksDBKeyedStateBackend` add only how a key is selected and where raw states live. A state is
registered by descriptor: a plain one wraps the raw state directly, a TTL one wraps it with the
TTL layer and installs the cleanup mechanisms its config asks for. Re-registering a restored
state whose physical shape differs (TTL switched on or off, compaction-filter placement) migrates
its entries; an incompatible type raises StateMigrationError.

Snapshots follow Flink's checkpoint model (backends/snapshot/writer.py): `snapshot_async(...)`
runs the synchronous part in the caller's thread and returns a SnapshotFuture whose asynchronous
part runs on the backend's snapshot thread (one per backend, started on first use, stopped by
close()); `snapshot(...)` is `snapshot_async(...).result()`. Up to `max_in_flight` snapshots may
be in flight (synchronous part done, asynchronous part running or queued): their asynchronous
parts run one at a time, in order, on the one snapshot thread; a new snapshot waits only when
`max_in_flight` are already in flight (for the oldest one, stats.wait_ms). A migration (it drops
a state's storage) waits for all of them; `close()` cancels them all first. The full-snapshot
cleanup's counts and lags are written from the snapshot's thread under `stats_lock`;
`cleanup_counts()` and `cleanup_lags()` read them under it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from backends import descriptors as d
from backends.cleanup.counters import LAG_MECHANISMS, CleanupCounters, LagHistogram, merge_buckets
from backends.cleanup.timers import ExpiryIndex
from backends.clocks import EventTimeClock, SystemClock
from backends.errors import StateMigrationError
from backends.keygroups import (
    DEFAULT_MAX_PARALLELISM,
    KeyGroupRange,
    check_max_parallelism,
    key_group_for,
)
from backends.schema import resolve_compatibility
from backends.snapshot.migration import measure_migration
from backends.snapshot.operator_state import OperatorStateBackend, OperatorStateData
from backends.snapshot.pending import SnapshotFuture
from backends.snapshot.writer import take_snapshot_async
from backends.state import plain
from backends.storage.layout import RawStateSpec
from backends.ttl.context import TtlContext
from backends.ttl.migration import ttl_layout_transform
from backends.ttl.states import ttl_state
from backends.ttl_config import StateTtlConfig

_EVENT_TIME = StateTtlConfig.TtlTimeCharacteristic.EventTime
KEY_CACHE_LIMIT = 1 << 21


class KeyedStateBackend:
    """Base class: the public API (``backends/__init__.py``) minus the storage specifics."""

    #: its name in the storage-backend registry (``backends.storage.registry``)
    kind = ""
    #: whether its checkpoints can be its own files (RocksDB's SSTs: incremental checkpoints,
    #: a restore that adopts them in its folder ``path``) besides canonical full snapshots
    native_checkpoints = False
    #: whether it stores keys and values as bytes (RocksDB), so what it holds is counted from
    #: them; otherwise as Python objects (heap)
    serialized_storage = False

    def __init__(
        self,
        clock: Any = None,
        max_parallelism: int = DEFAULT_MAX_PARALLELISM,
        key_group_range: KeyGroupRange | None = None,
    ) -> None:
        clock = SystemClock() if clock is None else clock
        if not callable(getattr(clock, "now", None)):
            raise ValueError(f"clock must have a now() -> int ms method, got {clock!r}")
        self.clock = clock
        self.event_clock = EventTimeClock()
        self.max_parallelism = check_max_parallelism(max_parallelism)
        self.key_group_range = key_group_range or KeyGroupRange.all(self.max_parallelism)
        if not (self.key_group_range.start >= 0 and self.key_group_range.end < max_parallelism):
            raise ValueError(
                f"key_group_range {self.key_group_range} is outside [0, {max_parallelism - 1}]"
            )
        self._raw: dict[str, Any] = {}
        self._states: dict[str, tuple[d.StateDescriptor, Any]] = {}
        self._counters: dict[str, CleanupCounters] = {}
        self._record_hooks: list[Callable[[], None]] = []
        self._hooks_by_state: dict[str, list[Callable[[], None]]] = {}
        self._timer_indexes: dict[str, ExpiryIndex] = {}
        self._timer_clocks: dict[str, Any] = {}
        self._timer_check: Callable[[], None] | None = None
        self.not_applicable: dict[str, list[str]] = {}
        self._cur_key: Any = None
        self._kg_cache: dict = {}
        self._closed = False
        # Snapshots (backends/snapshot): operator state, and what restores and migrations cost.
        self._operator_state: Any = None
        self.restore_stats: Any = None
        self.migration_stats: dict[str, Any] = {}
        self.stats_lock = threading.Lock()  # counters written by a snapshot's thread
        self._pending_snapshots: list[SnapshotFuture] = []  # in flight, oldest first
        self._snapshot_thread: ThreadPoolExecutor | None = None  # started on first use

    # ----------------------------------------------------------------- keys and time
    def get_current_key(self) -> Any:
        key = self._cur_key
        return None if key is None or key.__class__ not in (int, str, bytes) else key

    def key_group(self, key: Any) -> int:
        """The key group of a key (cached: snapshots and rescaling ask for every key)."""
        kg = self._kg_cache.get(key)
        if kg is None:
            kg = key_group_for(key, self.max_parallelism)
            if len(self._kg_cache) >= KEY_CACHE_LIMIT:
                self._kg_cache.clear()
            self._kg_cache[key] = kg
        return kg

    def set_event_time(self, timestamp_ms: int) -> None:
        """The timestamp of the record being processed: the clock of EventTime TTL states."""
        self.event_clock.set(timestamp_ms)

    def _install_timer_check(self) -> None:
        """One per-record hook for every timer index: each TTL clock is read once per record
        (not once per state) and an index fires only when that time passed its earliest bucket."""
        if self._timer_check is not None:
            self._record_hooks.remove(self._timer_check)
            self._timer_check = None
        groups: dict[int, tuple[Callable[[], int], list[ExpiryIndex]]] = {}
        for name, index in self._timer_indexes.items():
            clock = self._timer_clocks[name]
            groups.setdefault(id(clock), (clock.now, []))[1].append(index)
        if not groups:
            return
        plan = tuple((now, tuple(indexes)) for now, indexes in groups.values())

        def check_timers() -> None:
            for now_fn, indexes in plan:
                now = now_fn()
                for index in indexes:
                    if now >= index.next_due:
                        index.fire()

        self._timer_check = check_timers
        self._record_hooks.append(check_timers)

    def fire_timers(self) -> int:
        """Run timer cleanup now for every state (also happens on each set_current_key)."""
        return sum(idx.fire() for idx in self._timer_indexes.values())

    # ----------------------------------------------------------------- registration
    def get_state(self, descriptor: d.ValueStateDescriptor) -> Any:
        return self._register(descriptor, d.VALUE)

    def get_list_state(self, descriptor: d.ListStateDescriptor) -> Any:
        return self._register(descriptor, d.LIST)

    def get_map_state(self, descriptor: d.MapStateDescriptor) -> Any:
        return self._register(descriptor, d.MAP)

    def get_reducing_state(self, descriptor: d.ReducingStateDescriptor) -> Any:
        return self._register(descriptor, d.REDUCING)

    def get_aggregating_state(self, descriptor: d.AggregatingStateDescriptor) -> Any:
        return self._register(descriptor, d.AGGREGATING)

    def _register(self, desc: d.StateDescriptor, kind: str) -> Any:
        self._check_open()
        if not isinstance(desc, d.StateDescriptor) or desc.kind != kind:
            raise TypeError(f"expected a {kind} state descriptor, got {desc!r}")
        existing = self._states.get(desc.name)
        if existing is not None and existing[0] is desc:
            return existing[1]
        spec = self._spec_for(desc)
        raw = self._raw.get(desc.name)
        if raw is None:
            raw = self._create_raw(spec)
        elif raw.spec != spec:
            raw = self._measured_migrate(raw, spec)
        self._raw[desc.name] = raw
        self._unhook(desc.name)
        state = self._build_state(desc, raw)
        self._states[desc.name] = (desc, state)
        return state

    def _spec_for(self, desc: d.StateDescriptor) -> RawStateSpec:
        key_type = desc.key_type_info if isinstance(desc, d.MapStateDescriptor) else None
        spec = RawStateSpec(desc.name, desc.kind, desc.type_info, key_type, desc.ttl_enabled)
        if desc.ttl_enabled:
            self._check_compaction_filter_clock(desc)
        return spec

    def _check_compaction_filter_clock(self, desc: d.StateDescriptor) -> None:
        """An explicit compaction filter needs a wall-clock-driven processing-time clock."""
        cfg = desc.ttl_config
        assert cfg is not None
        if not cfg.get_cleanup_strategies().is_explicit_compact_filter():
            return
        if cfg.get_ttl_time_characteristic() is _EVENT_TIME:
            raise ValueError(
                f"state '{desc.name}': cleanup_in_rocksdb_compact_filter needs processing time; "
                "RocksDB's TTL compaction cannot follow event time"
            )
        if not getattr(self.clock, "wall_clock_driven", False):
            raise ValueError(
                f"state '{desc.name}': cleanup_in_rocksdb_compact_filter reads the wall clock, "
                f"so it needs SystemClock or ScaledClock, not {self.clock!r}"
            )

    def _migrate(self, old: Any, spec: RawStateSpec) -> Any:
        # Resolving first raises (kind or type incompatible) before anything is created.
        transform = self._resolve_migration(old.spec, spec)
        self.wait_for_snapshot()  # a snapshot in flight may still read the old storage
        new = self._create_raw(spec, replacing=old)
        for kg, key, container in old.iter_entries():
            new.load(kg, key, transform(container))
        self._drop_raw(old)
        return new

    def _measured_migrate(self, old: Any, spec: RawStateSpec, phase: str = "registration"
                          ) -> Any:
        """_migrate, timed and sized into migration_stats (lazily at registration, or eagerly
        at restore)."""
        return measure_migration(self, old, spec, self._migrate, phase)

    def _resolve_migration(self, old: RawStateSpec, new: RawStateSpec) -> Callable[[Any], Any]:
        """How stored containers of `old` become containers of `new`; raises if incompatible."""
        from backends.schema import resolve_value_migration

        value_fn = resolve_value_migration(old, new)
        shape = new.shape
        if old.ttl_layout != new.ttl_layout:
            layout = ttl_layout_transform(shape, new.ttl_layout, self.clock.now())
        else:
            layout = None
        if value_fn is None and layout is None:
            return lambda c: c
        return _compose_container_migration(shape, old.ttl_layout, value_fn, layout)

    def _build_state(self, desc: d.StateDescriptor, raw: Any) -> Any:
        if not desc.ttl_enabled:
            return _plain_state(desc, raw)
        cfg = desc.ttl_config
        assert cfg is not None
        clock = self.event_clock if cfg.get_ttl_time_characteristic() is _EVENT_TIME else self.clock
        counters = self._counters.setdefault(desc.name, CleanupCounters())
        ctx = TtlContext(cfg, clock.now, counters)
        strategies = cfg.get_cleanup_strategies()
        self._install_backend_cleanups(desc, raw, ctx)
        timer_strategy = strategies.get_timer_cleanup_strategy()
        if timer_strategy is not None:
            index = ExpiryIndex(raw, ctx, timer_strategy.granularity_ms)
            ctx.timers = index
            self._timer_indexes[desc.name] = index
            self._timer_clocks[desc.name] = clock
            self._install_timer_check()
        return ttl_state(desc, raw, ctx)

    def _hook(self, name: str, hook: Callable[[], None]) -> None:
        self._hooks_by_state.setdefault(name, []).append(hook)
        self._record_hooks.append(hook)

    def _unhook(self, name: str) -> None:
        for hook in self._hooks_by_state.pop(name, []):
            self._record_hooks.remove(hook)
        if self._timer_indexes.pop(name, None) is not None:
            del self._timer_clocks[name]
            self._install_timer_check()
        self.not_applicable.pop(name, None)

    def note_not_applicable(self, name: str, reason: str) -> None:
        """Record that a cleanup state `name` asked for does not apply here (and why)."""
        reasons = self.not_applicable.setdefault(name, [])
        if reason not in reasons:
            reasons.append(reason)

    # ----------------------------------------------------------------- inspection
    def registered_state_names(self) -> list[str]:
        return sorted(self._raw)

    def descriptor(self, name: str) -> d.StateDescriptor | None:
        entry = self._states.get(name)
        return entry[0] if entry else None

    def raw_state(self, name: str) -> Any:
        try:
            return self._raw[name]
        except KeyError:
            raise ValueError(
                f"no state named '{name}' in this backend; known: {sorted(self._raw)}"
            ) from None

    def physical_entries(self, name: str) -> int:
        """Exact number of keys physically holding data for the state, expired or not."""
        return self.raw_state(name).count_keys()

    def cleanup_counts(self) -> dict[str, dict[str, int | float]]:
        """Units removed per state and mechanism (read, incremental, timer, ...)."""
        with self.stats_lock:
            return {name: c.as_dict() for name, c in sorted(self._counters.items())}

    def cleanup_lags(self) -> dict[str, LagHistogram]:
        """Per mechanism that measures it, the cleanup lag of every state together (a new,
        folded histogram; mechanisms that removed nothing are left out)."""
        out: dict[str, LagHistogram] = {}
        with self.stats_lock:
            for mechanism in LAG_MECHANISMS:
                parts = [c.lags[mechanism] for c in self._counters.values()]
                merged = LagHistogram()
                merged.buckets = merge_buckets(h.snapshot() for h in parts)
                merged.max = max((h.max for h in parts), default=0)
                if merged.buckets:
                    out[mechanism] = merged
        return out

    def counters(self, name: str) -> CleanupCounters:
        return self._counters.setdefault(name, CleanupCounters())

    # ----------------------------------------------------------------- snapshots
    def snapshot(self, checkpoint_id: int, target: Any, mode: str = "full", **options: Any) -> Any:
        """Take a snapshot and return its SnapshotHandle once it is committed."""
        return self.snapshot_async(checkpoint_id, target, mode=mode, **options).result()

    def snapshot_async(self, checkpoint_id: int, target: Any, mode: str = "full",
                       max_in_flight: int = 1, **options: Any) -> SnapshotFuture:
        """Run a snapshot's synchronous part now and queue its asynchronous part on this
        backend's snapshot thread (behind the snapshots already in flight, run in order);
        returns a SnapshotFuture (`result()` -> SnapshotHandle, raising what the asynchronous
        part raised). When `max_in_flight` snapshots are already in flight it first waits
        until the oldest ones finished and fewer are (stats.wait_ms; 1: Flink's default of
        one concurrent checkpoint, every snapshot waits for the previous one)."""
        self._check_open()
        if (isinstance(max_in_flight, bool) or not isinstance(max_in_flight, int)
                or max_in_flight < 1):
            raise ValueError(f"max_in_flight must be an int >= 1, got {max_in_flight!r}")
        start = time.perf_counter()
        pending = self._in_flight()
        while len(pending) >= max_in_flight:
            pending[0].wait()
            pending = self._in_flight()
        waited = (time.perf_counter() - start) * 1e3
        if self._snapshot_thread is None:
            self._snapshot_thread = ThreadPoolExecutor(
                1, thread_name_prefix=f"statebench-snapshot-{self.kind}")
        future = take_snapshot_async(self, checkpoint_id, target, mode=mode,
                                     executor=self._snapshot_thread,
                                     busy=[f.folder for f in pending], **options)
        future.stats.wait_ms = waited
        pending.append(future)
        return future

    def _in_flight(self) -> list[SnapshotFuture]:
        """The snapshots whose asynchronous part has not ended, oldest first."""
        pending = self._pending_snapshots = [f for f in self._pending_snapshots if not f.done()]
        return pending

    def snapshots_in_flight(self) -> int:
        """How many snapshots' asynchronous parts are running or queued."""
        return len(self._in_flight())

    def wait_for_snapshot(self) -> None:
        """Wait until the asynchronous parts of every snapshot in flight have ended; their
        outcomes stay with their SnapshotFutures (result() raises there, not here)."""
        for pending in list(self._pending_snapshots):
            pending.wait()
        self._pending_snapshots = []

    def _end_snapshots(self) -> None:
        """On close: cancel every snapshot in flight and wait until the thread let go of this
        backend's storage (RocksDB iterators, the heap's copy-on-write methods)."""
        for pending in self._pending_snapshots:
            pending.cancel()
        self.wait_for_snapshot()
        if self._snapshot_thread is not None:
            self._snapshot_thread.shutdown(wait=True)
            self._snapshot_thread = None

    def operator_state(self) -> Any:
        """This task's operator state (list, union list and broadcast state), snapshotted and
        restored with the keyed state; see backends/snapshot/operator_state.py."""
        if self._operator_state is None:
            self._operator_state = OperatorStateBackend()
        return self._operator_state

    # ------------------------------------------------- the interface snapshots and restores use
    # backends/snapshot reads and fills a backend only through these methods (and raw states'
    # own public methods), so how a backend keeps its states stays its own business.
    def raw_states(self) -> list[tuple[str, Any]]:
        """(name, raw state) of every state, by name; `raw.spec` says how it is stored."""
        return sorted(self._raw.items())

    def operator_state_data(self) -> list[OperatorStateData]:
        """What a snapshot writes of the operator state (nothing if it was never used)."""
        return [] if self._operator_state is None else self._operator_state.snapshot_data()

    def load_restored(self, spec: RawStateSpec, entries: Iterable[tuple[int, Any, Any]]
                      ) -> int:
        """Install restored (key group, key, container) entries of a state written with
        `spec`, creating its raw state on first use; returns the keys loaded."""
        load = self._restored_raw(spec).load
        keys = 0
        for kg, key, container in entries:
            load(kg, key, container)
            keys += 1
        return keys

    def copy_restored(self, source: Any, key_groups: Iterable[int]) -> int:
        """Copy the `key_groups` of another store's raw state `source` (a RocksDB checkpoint
        opened for restore) into this backend; returns the keys copied."""
        return self.load_restored(source.spec, source.iter_entries(key_groups))

    def resolve_restored(self, desc: d.StateDescriptor) -> None:
        """Check now that restored state `desc.name` can be read as `desc` (raises
        StateMigrationError if not); the heap backend also migrates and registers it now."""
        raw = self._raw.get(desc.name)
        if raw is None:
            return
        if raw.spec.kind != desc.kind:
            raise StateMigrationError(
                f"state '{desc.name}' holds {raw.spec.kind} state and cannot be registered as "
                f"{desc.kind} state")
        resolve_compatibility(raw.spec, self._spec_for(desc))

    def _restored_raw(self, spec: RawStateSpec) -> Any:
        spec = self._placement(spec)
        raw = self._raw.get(spec.name)
        if raw is None:
            raw = self._raw[spec.name] = self._create_raw(spec)
        elif raw.spec != spec:
            raise ValueError(
                f"state '{spec.name}' differs between the snapshots being restored "
                f"({raw.spec} vs {spec})")
        return raw

    def _placement(self, spec: RawStateSpec) -> RawStateSpec:
        """A restored spec as this backend stores it: only RocksDB keeps states in native-TTL
        DBs of their own (rocksdb_backend.py)."""
        if spec.native_ttl_ms is None:
            return spec
        return replace(spec, native_ttl_ms=None, native_ttl_speedup=1.0)

    # ----------------------------------------------------------------- lifecycle
    def compact(self) -> None:
        """Heap: nothing to compact."""

    def flush(self) -> None:
        """Heap: no memtables to flush."""

    def close(self) -> None:
        self._end_snapshots()
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"this {self.kind} backend is closed")

    def __enter__(self) -> KeyedStateBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- to implement
    def set_current_key(self, key: Any) -> None:  # pragma: no cover - replaced per instance
        raise NotImplementedError

    def _create_raw(self, spec: RawStateSpec, replacing: Any = None) -> Any:  # pragma: no cover
        raise NotImplementedError

    def _drop_raw(self, raw: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _install_backend_cleanups(self, desc: d.StateDescriptor, raw: Any, ctx: TtlContext):
        raise NotImplementedError  # pragma: no cover


def _compose_container_migration(
    shape: str, old_ttl: bool, value_fn: Callable | None, layout: Callable | None
) -> Callable[[Any], Any]:
    """Apply a value migration to each unit (inside its TTL wrapper), then a layout change."""

    def unit(u: Any) -> Any:
        if value_fn is None:
            return u
        if old_ttl:
            return (None if u[0] is None else value_fn(u[0]), u[1])
        return None if u is None else value_fn(u)

    def apply(c: Any) -> Any:
        if shape == "value":
            c = unit(c)
        elif shape == "list":
            c = [unit(e) for e in c]
        else:
            c = {k: unit(v) for k, v in c.items()}
        return c if layout is None else layout(c)

    return apply


def _plain_state(desc: d.StateDescriptor, raw: Any) -> Any:
    if isinstance(desc, d.MapStateDescriptor):
        return plain.MapState(raw, desc.key_type_info, desc.type_info)
    if isinstance(desc, d.ListStateDescriptor):
        return plain.ListState(raw, desc.type_info)
    if isinstance(desc, d.ReducingStateDescriptor):
        return plain.ReducingState(raw, desc.type_info, desc.reduce)
    if isinstance(desc, d.AggregatingStateDescriptor):
        return plain.AggregatingState(raw, desc.type_info, desc.agg_function)
    return plain.ValueState(raw, desc.type_info)
