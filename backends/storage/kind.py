"""What one of statebench's storage backends is to the rest of the harness
(:class:`StorageBackend`), apart from the registry (``backends.storage.registry``) so that a
backend's own module can define one and the registry import it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backends.keyed_backend import KeyedStateBackend


@dataclass(frozen=True)
class StorageBackend:
    """One of statebench's keyed-state backends, as the rest of the harness sees it."""

    #: the name a run gives (``--backend``) and ``KeyedStateBackend.kind``
    name: str
    #: how a sentence names it ("heap", "RocksDB")
    title: str
    #: its class: ``factory(clock=..., **options)`` makes an empty one
    factory: type[KeyedStateBackend]
    #: what it offers the cleanup strategies (``backends.strategies.ENTRY_ITERATOR``, ...)
    capabilities: frozenset[str] = frozenset()
    #: whether it keeps its state in a folder of its own (``path=``), one per task
    keeps_files: bool = False
    #: whether it reads a spec's ``[rocksdb]`` table (``rocksdb_options=``)
    takes_rocksdb_options: bool = False
    #: whether it holds native handles that must be freed (a garbage collection) before its
    #: folder is deleted
    holds_native_handles: bool = False
    #: whether it reports RocksDB's own counters and sizes (``rocksdb_stats()``)
    rocksdb_statistics: bool = False
    #: whether its files at any moment depend on background flushes and compactions (the
    #: report's class of its file sizes, incremental checkpoints and compaction-filter counts)
    background_compactions: bool = False
    #: whether its physical sizes move with copy-on-write during asynchronous snapshots
    copy_on_write_sizes: bool = False
    #: whole-job records/s per task slot for key-value and for ``[operator]`` specs, what the
    #: run's estimate assumes: the slowest shipped workload of each, rounded down
    #: (docs/guide.md, "The estimate's rates")
    records_per_s: float = 30_000.0
    operator_records_per_s: float = 30_000.0

    @property
    def serialized_storage(self) -> bool:
        """Whether it stores keys and values as bytes (RocksDB), not as Python objects."""
        return self.factory.serialized_storage

    def options(self, path: str | Path | None, rocksdb_options: Mapping[str, Any] | None
                ) -> dict[str, Any]:
        """What :meth:`open` takes of a task's folder and a spec's [rocksdb] options: only what
        this backend reads."""
        out: dict[str, Any] = {}
        if self.keeps_files and path is not None:
            out["path"] = path
        if self.takes_rocksdb_options and rocksdb_options is not None:
            out["rocksdb_options"] = dict(rocksdb_options)
        return out

    def open(self, clock: Any = None, **options: Any) -> KeyedStateBackend:
        """A new, empty backend; options it does not read (``path``, ``rocksdb_options``) are
        dropped, so one set of options can create any backend."""
        if not self.keeps_files:
            options.pop("path", None)
        if not self.takes_rocksdb_options:
            options.pop("rocksdb_options", None)
        return self.factory(clock=clock, **options)
