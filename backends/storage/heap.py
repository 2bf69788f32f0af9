"""The heap backend's raw storage: Python dicts per key group, stored objects kept as they are.

Each state keeps one dict per key group (`tables[kg][key] -> container`), as Flink's heap state
table is split by key group, so snapshots and rescaling read whole key groups. The slot after the
last key group holds a dict that raises NoCurrentKeyError: with no key selected the backend points
at it, so the hot path needs no "is a key set?" branch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from backends.errors import NoCurrentKeyError
from backends.storage.base import ABSENT
from backends.storage.spec import RawStateSpec


class NoKeyTable(dict):
    """Stands in for a key group's dict while no current key is set: every access raises."""

    def __init__(self, state_name: str) -> None:
        super().__init__()
        self.state_name = state_name

    def _raise(self, *_: Any, **__: Any) -> Any:
        raise NoCurrentKeyError(self.state_name)

    get = __getitem__ = __setitem__ = __delitem__ = __contains__ = pop = setdefault = _raise


class _HeapRaw:
    """Shared plumbing: per-key-group tables, references and bulk access."""

    def __init__(self, backend: Any, spec: RawStateSpec) -> None:
        self._b = backend
        self.spec = spec
        self.name = spec.name
        self._tables: list[dict] = [{} for _ in range(backend.max_parallelism)]
        self._tables.append(NoKeyTable(spec.name))

    def table(self, key_group: int) -> dict:
        return self._tables[key_group]

    def current_ref(self) -> tuple[int, Any]:
        b = self._b
        if b._cur_key is None:
            raise NoCurrentKeyError(self.name)
        return (b._cur_kg, b._cur_key)

    def ref_get(self, ref: tuple[int, Any]) -> Any:
        return self._tables[ref[0]].get(ref[1])

    def ref_put(self, ref: tuple[int, Any], container: Any) -> None:
        if container is None or (self.spec.shape != "value" and not container):
            self._tables[ref[0]].pop(ref[1], None)
        else:
            self._tables[ref[0]][ref[1]] = container

    def ref_delete(self, ref: tuple[int, Any]) -> None:
        self._tables[ref[0]].pop(ref[1], None)

    def iter_refs(self, key_group: int) -> list[tuple[int, Any]]:
        return [(key_group, k) for k in self._tables[key_group]]

    def iter_key_group(self, key_group: int) -> Iterator[tuple[Any, Any]]:
        return iter(list(self._tables[key_group].items()))

    def load(self, key_group: int, key: Any, container: Any) -> None:
        self.ref_put((key_group, key), container)

    def count_keys(self) -> int:
        return sum(len(t) for t in self._tables[:-1])

    def drop_all(self) -> None:
        for t in self._tables[:-1]:
            t.clear()

    def key_groups_with_data(self) -> list[int]:
        return [kg for kg, t in enumerate(self._tables[:-1]) if t]


class HeapRawValue(_HeapRaw):
    """Current key -> one stored object."""

    kind = "value"

    def value(self) -> Any:
        b = self._b
        return self._tables[b._cur_kg].get(b._cur_key)

    def update(self, stored: Any) -> None:
        b = self._b
        self._tables[b._cur_kg][b._cur_key] = stored

    def clear(self) -> None:
        b = self._b
        self._tables[b._cur_kg].pop(b._cur_key, None)


class HeapRawList(_HeapRaw):
    """Current key -> a Python list of stored elements (appended in place)."""

    kind = "list"

    def get(self) -> list | None:
        """The stored list itself: callers must treat it as read-only."""
        b = self._b
        return self._tables[b._cur_kg].get(b._cur_key)

    def add(self, element: Any) -> None:
        b = self._b
        table = self._tables[b._cur_kg]
        lst = table.get(b._cur_key)
        if lst is None:
            table[b._cur_key] = [element]
        else:
            lst.append(element)

    def add_all(self, elements: list) -> None:
        if not elements:
            return
        b = self._b
        table = self._tables[b._cur_kg]
        lst = table.get(b._cur_key)
        if lst is None:
            table[b._cur_key] = list(elements)
        else:
            lst.extend(elements)

    def update(self, elements: list) -> None:
        b = self._b
        if elements:
            self._tables[b._cur_kg][b._cur_key] = list(elements)
        else:
            self._tables[b._cur_kg].pop(b._cur_key, None)

    def clear(self) -> None:
        b = self._b
        self._tables[b._cur_kg].pop(b._cur_key, None)


class HeapRawMap(_HeapRaw):
    """Current key -> a dict user key -> stored value; an emptied map is removed."""

    kind = "map"

    def get(self, user_key: Any) -> Any:
        b = self._b
        m = self._tables[b._cur_kg].get(b._cur_key)
        return ABSENT if m is None else m.get(user_key, ABSENT)

    def put(self, user_key: Any, stored: Any) -> None:
        b = self._b
        table = self._tables[b._cur_kg]
        m = table.get(b._cur_key)
        if m is None:
            table[b._cur_key] = {user_key: stored}
        else:
            m[user_key] = stored

    def put_all(self, entries: dict) -> None:
        if not entries:
            return
        b = self._b
        table = self._tables[b._cur_kg]
        m = table.get(b._cur_key)
        if m is None:
            table[b._cur_key] = dict(entries)
        else:
            m.update(entries)

    def remove(self, user_key: Any) -> None:
        b = self._b
        table = self._tables[b._cur_kg]
        m = table.get(b._cur_key)
        if m is not None and m.pop(user_key, ABSENT) is not ABSENT and not m:
            del table[b._cur_key]

    def contains(self, user_key: Any) -> bool:
        b = self._b
        m = self._tables[b._cur_kg].get(b._cur_key)
        return m is not None and user_key in m

    def items(self) -> list[tuple[Any, Any]]:
        b = self._b
        m = self._tables[b._cur_kg].get(b._cur_key)
        return [] if m is None else list(m.items())

    def is_empty(self) -> bool:
        b = self._b
        return not self._tables[b._cur_kg].get(b._cur_key)

    def clear(self) -> None:
        b = self._b
        self._tables[b._cur_kg].pop(b._cur_key, None)

    def ref_get_entry(self, ref: tuple[int, Any], user_key: Any) -> Any:
        m = self._tables[ref[0]].get(ref[1])
        return ABSENT if m is None else m.get(user_key, ABSENT)

    def ref_put_entry(self, ref: tuple[int, Any], user_key: Any, stored: Any) -> None:
        table = self._tables[ref[0]]
        m = table.get(ref[1])
        if m is None:
            table[ref[1]] = {user_key: stored}
        else:
            m[user_key] = stored

    def ref_remove_entries(self, ref: tuple[int, Any], user_keys: Iterable[Any]) -> None:
        table = self._tables[ref[0]]
        m = table.get(ref[1])
        if m is None:
            return
        for uk in user_keys:
            m.pop(uk, None)
        if not m:
            del table[ref[1]]


HEAP_RAW_BY_SHAPE = {"value": HeapRawValue, "list": HeapRawList, "map": HeapRawMap}
