"""The raw-state contract shared by the heap and RocksDB backends (see package docstring).

A *container* is everything one key holds in one state: the stored value (value state), the list
of stored elements (list state) or the dict user-key -> stored value (map state).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol, runtime_checkable

from backends.storage.layout import RawStateSpec


class _Absent:
    """Marks a missing map entry (a map's stored value may legitimately be None)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Any = _Absent()


@runtime_checkable
class RawState(Protocol):
    """What every raw state (value, list or map) offers: the contract the TTL layer, the
    cleanups and snapshots rely on, whatever the backend. tests/state/test_raw_contract.py
    checks both backends' raw classes against it and its three shapes below.

    Raw states store units as they are given (a TTL unit is a `(value, ts)` tuple, a plain one
    the value itself) and know nothing of expiry."""

    name: str
    kind: str
    spec: RawStateSpec

    def current_ref(self) -> Any:
        """A hashable reference to the current key's container, valid until it is deleted."""

    def ref_get(self, ref: Any) -> Any:
        """The container behind `ref`, or None if the key holds nothing."""

    def ref_put(self, ref: Any, container: Any) -> None:
        """Replace the container behind `ref` (an empty list/map deletes it)."""

    def ref_delete(self, ref: Any) -> None:
        """Delete the container behind `ref` (nothing happens if there is none)."""

    def iter_entries(self, key_groups: Any = None) -> Iterator[tuple[int, Any, Any]]:
        """(key group, user key, container) for every key with data (in key_groups if given).

        Safe to modify the state while iterating (each backend iterates a stable view)."""

    def load(self, key_group: int, key: Any, container: Any) -> None:
        """Write a whole container for a key (restore, migration)."""

    def count_keys(self) -> int:
        """Exact number of keys holding non-empty data (may scan)."""

    def drop_all(self) -> None:
        """Remove every entry of this state."""


@runtime_checkable
class RawValueState(RawState, Protocol):
    """One stored unit per key (value, reducing and aggregating states)."""

    def value(self) -> Any:
        """The current key's unit, or None."""

    def update(self, stored: Any) -> None:
        """Store the current key's unit."""

    def clear(self) -> None:
        """Delete the current key's unit."""


@runtime_checkable
class RawListState(RawState, Protocol):
    """A list of stored elements per key, in insertion order; an emptied list is deleted."""

    def get(self) -> list | None:
        """The current key's elements (read-only for the caller), or None."""

    def add(self, element: Any) -> None:
        """Append one element."""

    def add_all(self, elements: list) -> None:
        """Append elements (none: nothing happens)."""

    def update(self, elements: list) -> None:
        """Replace the current key's elements (none: the list is deleted)."""

    def clear(self) -> None:
        """Delete the current key's list."""


@runtime_checkable
class RawMapState(RawState, Protocol):
    """A map user key -> stored value per key; an emptied map is deleted."""

    def get(self, user_key: Any) -> Any:
        """The stored value, or ABSENT."""

    def put(self, user_key: Any, stored: Any) -> None:
        """Store one entry."""

    def put_all(self, entries: dict) -> None:
        """Store several entries."""

    def remove(self, user_key: Any) -> None:
        """Delete one entry (nothing happens if there is none)."""

    def contains(self, user_key: Any) -> bool:
        """Whether the entry is stored."""

    def items(self) -> list[tuple[Any, Any]]:
        """A snapshot of the current key's entries: safe to modify the map while using it."""

    def is_empty(self) -> bool:
        """Whether the current key holds no entry."""

    def clear(self) -> None:
        """Delete the current key's map."""

    def ref_get_entry(self, ref: Any, user_key: Any) -> Any:
        """The stored value of one entry of the map behind `ref`, or ABSENT."""

    def ref_put_entry(self, ref: Any, user_key: Any, stored: Any) -> None:
        """Store one entry in the map behind `ref`."""

    def ref_remove_entries(self, ref: Any, user_keys: Iterable[Any]) -> None:
        """Delete entries of the map behind `ref` (the map too, once empty)."""


RAW_STATE_BY_SHAPE: dict[str, type] = {
    "value": RawValueState, "list": RawListState, "map": RawMapState,
}
