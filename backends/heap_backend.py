"""The heap backend: state in Python dicts (Flink's HashMapStateBackend)."""

from __future__ import annotations

from typing import Any

from backends import descriptors as d
from backends.cleanup.incremental import IncrementalCleanup
from backends.keyed_backend import KeyedStateBackend
from backends.keygroups import check_key, key_group_for
from backends.storage.heap import HEAP_RAW_BY_SHAPE
from backends.storage.spec import RawStateSpec
from backends.ttl.context import TtlContext

_KEY_CACHE_LIMIT = 1 << 20


class HeapKeyedStateBackend(KeyedStateBackend):
    """Keyed state in per-key-group dicts; every snapshot is a full one."""

    kind = "heap"

    def __init__(self, clock: Any = None, max_parallelism: int = 128, **kwargs: Any) -> None:
        super().__init__(clock, max_parallelism, kwargs.pop("key_group_range", None))
        if kwargs:
            raise ValueError(f"unknown option(s) for the heap backend: {sorted(kwargs)}")
        self._cur_kg = self.max_parallelism  # the NoKeyTable slot

    def set_current_key(self, key: Any) -> None:
        kg = self._kg_cache.get(key)
        cls = key.__class__
        if kg is None or (cls is not int and cls is not str and cls is not bytes):
            kg = self._key_group_of(key)
        self._cur_key = key
        self._cur_kg = kg
        if self._record_hooks:
            for hook in self._record_hooks:
                hook()

    def _key_group_of(self, key: Any) -> int:
        check_key(key)
        kg = key_group_for(key, self.max_parallelism)
        if kg not in self.key_group_range:
            raise ValueError(
                f"key {key!r} is in key group {kg}, outside this backend's {self.key_group_range}"
            )
        if len(self._kg_cache) >= _KEY_CACHE_LIMIT:
            self._kg_cache.clear()
        self._kg_cache[key] = kg
        return kg

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
            cleaner = IncrementalCleanup(
                raw, ctx, incremental.cleanup_size, list(self.key_group_range)
            )
            ctx.on_access = cleaner.step
            if incremental.run_cleanup_for_every_record:
                self._hook(desc.name, cleaner.step)
        if strategies.is_explicit_compact_filter():
            self._note_not_applicable(
                desc.name, "compaction_filter: the heap backend has no compactions"
            )

    def close(self) -> None:
        if not self._closed:
            for raw in self._raw.values():
                raw.drop_all()
        super().close()
