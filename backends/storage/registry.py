"""statebench's own storage backends, registered here and nowhere else: each is one
:class:`~backends.storage.kind.StorageBackend` object that says what it is called, how a run
opens one, what it offers the cleanup strategies (``backends.cleanup.strategy``'s
capabilities), which options of a spec it reads and what the report may assume of its numbers.
The planner, the operator, the lanes and the report ask it; none of them compares a backend's
name.

Model: Flink's ``StateBackendFactory`` (a backend is a name and a factory; the job asks the
factory, not the name). Adding a backend is a module with its ``KeyedStateBackend`` subclass and
its ``StorageBackend``, and one registration: a line in :data:`BUILTIN` (statebench's lanes are
made from this registry, so it is a lane too), or :func:`register` and a lane
(``workloads.lanes.register_lane``) for a test's throwaway one.
"""

from __future__ import annotations

from collections.abc import Mapping

from backends.cleanup.strategy import COMPACTIONS, ENTRY_ITERATOR
from backends.heap_backend import HeapKeyedStateBackend
from backends.registry import Registry
from backends.rocksdb_backend import RocksDBKeyedStateBackend
from backends.storage.kind import StorageBackend

HEAP = StorageBackend(
    "heap", "heap", HeapKeyedStateBackend, frozenset({ENTRY_ITERATOR}),
    copy_on_write_sizes=True, records_per_s=100_000.0)
ROCKSDB = StorageBackend(
    "rocksdb", "RocksDB", RocksDBKeyedStateBackend, frozenset({COMPACTIONS}),
    keeps_files=True, takes_rocksdb_options=True, holds_native_handles=True,
    rocksdb_statistics=True, background_compactions=True, records_per_s=50_000.0)

#: The backends statebench ships.
BUILTIN: tuple[StorageBackend, ...] = (HEAP, ROCKSDB)


def _check(found: StorageBackend) -> None:
    """Its class must carry its name (``KeyedStateBackend.kind``: snapshots record it,
    restores ask the registry by it)."""
    if found.factory.kind != found.name:
        raise ValueError(f"backend kind '{found.name}': its class {found.factory.__name__} has "
                         f"kind '{found.factory.kind}'")


REGISTRY: Registry[StorageBackend] = Registry(
    "backend kind",
    lambda name, known: f"unknown backend kind '{name}'; expected one of {known}", _check)
REGISTRY.builtin(BUILTIN)
#: Backend name -> its :class:`StorageBackend`, in registration order (read-only).
STORAGE_BACKENDS: Mapping[str, StorageBackend] = REGISTRY.items
#: Add a backend (ValueError for a name taken, or one its class does not carry).
register = REGISTRY.register
#: Remove a throwaway backend; built-in ones stay.
unregister = REGISTRY.unregister
#: The registered backend ``name``; ValueError names the known ones.
storage_backend = REGISTRY.get
#: Every registered backend's name, now (a throwaway one registered since included).
backend_kinds = REGISTRY.names


#: statebench's own backends when the package was imported (``backends.BACKEND_KINDS``).
BACKEND_KINDS: tuple[str, ...] = backend_kinds()
