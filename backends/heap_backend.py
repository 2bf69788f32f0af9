"""The heap backend: state in Python dicts (Flink's HashMapStateBackend)."""

from __future__ import annotations

from typing import Any

from backends import descriptors as d
from backends.cleanup.incremental import IncrementalCleanup
from backends.keyed_backend import KeyedStateBackend
from backends.keygroups import check_key
from backends.storage.heap import HEAP_RAW_BY_SHAPE, NO_KEY
from backends.storage.layout import RawStateSpec
from backends.ttl.context import TtlContext


class HeapKeyedStateBackend(KeyedStateBackend):
    """Keyed state in per-key-group dicts; every snapshot is a full one."""

    kind = "heap"

    def __init__(self, clock: Any = None, max_parallelism: int = 128, **kwargs: Any) -> None:
        super().__init__(clock, max_parallelism, kwargs.pop("key_group_range", None))
        if kwargs:
            raise ValueError(f"unknown option(s) for the heap backend: {sorted(kwargs)}")
        self._cur_key = NO_KEY
        self._make_key_selector()

    def _make_key_selector(self) -> None:
        """Build set_current_key as a closure: it runs once per record. With the full key-group
        range no key group is needed here at all (the flat dicts do not use it); with a partial
        range (a task of a parallel job) the key's cached group is checked inline."""
        hooks, backend, key_group_of = self._record_hooks, self, self.key_group
        cache = self._kg_cache
        full_range = len(self.key_group_range) == self.max_parallelism
        low, high = self.key_group_range.start, self.key_group_range.end

        def set_current_key(key: Any) -> None:
            cls = key.__class__
            if cls is not int and cls is not str and cls is not bytes:
                check_key(key)  # raises: not a valid key type
            if not full_range:
                kg = cache.get(key)
                if kg is None:
                    check_key(key)
                    kg = key_group_of(key)
                if kg < low or kg > high:
                    raise ValueError(
                        f"key {key!r} is in key group {kg}, outside this backend's "
                        f"{backend.key_group_range}"
                    )
            backend._cur_key = key
            if hooks:
                for hook in hooks:
                    hook()

        self.set_current_key = set_current_key  # type: ignore[method-assign]

    def _create_raw(self, spec: RawStateSpec, replacing: Any = None) -> Any:
        return HEAP_RAW_BY_SHAPE[spec.shape](self, spec)

    def _drop_raw(self, raw: Any) -> None:
        raw.drop_all()

    def _install_backend_cleanups(
        self, desc: d.StateDescriptor, raw: Any, ctx: TtlContext
    ) -> None:
        strategies = ctx.config.get_cleanup_strategies()
        incremental = strategies.get_incremental_cleanup_strategy()
        if incremental is not None:
            cleaner = IncrementalCleanup(raw, ctx, incremental.cleanup_size)
            ctx.on_access = cleaner.step
            if incremental.run_cleanup_for_every_record:
                self._hook(desc.name, cleaner.step)
        if strategies.is_explicit_compact_filter():
            self.note_not_applicable(
                desc.name, "compaction_filter: the heap backend has no compactions"
            )

    def resolve_restored(self, desc: d.StateDescriptor) -> None:
        """Heap: a restore has deserialized every entry anyway, so a restored state is
        migrated (if its spec differs) and registered now rather than on first access."""
        super().resolve_restored(desc)
        raw = self._raw.get(desc.name)
        if raw is None:
            return
        spec = self._spec_for(desc)
        if raw.spec != spec:
            self._raw[desc.name] = self._measured_migrate(raw, spec, "restore")
        self._register(desc, desc.kind)

    def physical_bytes(self) -> int:
        """In-memory footprint of every state: the bytes of the Python objects held, each
        counted once (deterministic, unlike a share of the process RSS; scans all entries)."""
        seen: set[int] = set()
        return sum(raw.footprint_bytes(seen) for raw in self._raw.values())

    def close(self) -> None:
        if not self._closed:
            self._end_snapshots()
            for raw in self._raw.values():
                raw.drop_all()
        super().close()
