"""A throwaway storage backend: statebench's heap under a name of its own. Registering it
(``backends.storage.registry.register``) and its lane (a ``StatebenchLane`` of its name) is all
it takes: the planner, the operator and the report ask the registries, never its name."""

from __future__ import annotations

from backends.cleanup.strategy import ENTRY_ITERATOR
from backends.heap_backend import HeapKeyedStateBackend
from backends.storage.kind import StorageBackend


class ThrowawayHeapBackend(HeapKeyedStateBackend):
    """The heap backend, another kind."""

    kind = "throwaway_heap"


THROWAWAY_HEAP = StorageBackend(
    "throwaway_heap", "throwaway heap", ThrowawayHeapBackend, frozenset({ENTRY_ITERATOR}),
    copy_on_write_sizes=True)
