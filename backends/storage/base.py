"""The raw-state contract shared by the heap and RocksDB backends (see package docstring).

A *container* is everything one key holds in one state: the stored value (value state), the list
of stored elements (list state) or the dict user-key -> stored value (map state).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol


class _Absent:
    """Marks a missing map entry (a map's stored value may legitimately be None)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Any = _Absent()


class RawState(Protocol):
    """What every raw state (value, list or map) offers beyond its current-key operations."""

    name: str
    kind: str

    def current_ref(self) -> Any:
        """A hashable reference to the current key's container, valid until it is deleted."""

    def ref_get(self, ref: Any) -> Any:
        """The container behind `ref`, or None if the key holds nothing."""

    def ref_put(self, ref: Any, container: Any) -> None:
        """Replace the container behind `ref` (an empty list/map deletes it)."""

    def ref_delete(self, ref: Any) -> None: ...

    def iter_entries(self, key_groups: Any = None) -> Iterator[tuple[int, Any, Any]]:
        """(key group, user key, container) for every key with data (in key_groups if given).

        Safe to modify the state while iterating (each backend iterates a stable view)."""

    def load(self, key_group: int, key: Any, container: Any) -> None:
        """Write a whole container for a key (restore, migration)."""

    def count_keys(self) -> int:
        """Exact number of keys holding non-empty data (may scan)."""

    def drop_all(self) -> None:
        """Remove every entry of this state."""
