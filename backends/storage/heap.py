"""The heap backend's raw storage: one Python dict per state, stored objects kept as they are.

Flink's heap state table is split by key group; here a state is one flat dict `key -> container`
and a key's group is computed (and cached by the backend) only when a snapshot, a restore or a
rescale needs it. A per-key-group dict costs a second random dict lookup on every access (the
key's group), which measured 0.27x of a raw dict loop against 0.5x+ for the flat dict (README,
"Design choices"). With no current key the backend's current key is NO_KEY, whose hash raises
NoCurrentKeyError, so the hot path needs no "is a key set?" branch.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from backends.errors import NoCurrentKeyError
from backends.storage.base import ABSENT
from backends.storage.spec import RawStateSpec


class _NoKey:
    """The current key while none is set: any dict lookup with it raises NoCurrentKeyError."""

    __slots__ = ()

    def __hash__(self) -> int:
        raise NoCurrentKeyError()

    def __repr__(self) -> str:
        return "NO_KEY"


NO_KEY: Any = _NoKey()


class _HeapRaw:
    """Shared plumbing: the state's dict, references (the key itself) and bulk access."""

    def __init__(self, backend: Any, spec: RawStateSpec) -> None:
        self._b = backend
        self.spec = spec
        self.name = spec.name
        self.table: dict = {}

    def current_ref(self) -> Any:
        key = self._b._cur_key
        if key is NO_KEY:
            raise NoCurrentKeyError(self.name)
        return key

    def ref_get(self, ref: Any) -> Any:
        return self.table.get(ref)

    def ref_put(self, ref: Any, container: Any) -> None:
        if container is None or (self.spec.shape != "value" and not container):
            self.table.pop(ref, None)
        else:
            self.table[ref] = container

    def ref_delete(self, ref: Any) -> None:
        self.table.pop(ref, None)

    def iter_entries(self, key_groups: Any = None) -> Iterator[tuple[int, Any, Any]]:
        """(key group, key, container) of every key with data (in key_groups, if given)."""
        key_group = self._b.key_group
        for key, container in list(self.table.items()):
            kg = key_group(key)
            if key_groups is None or kg in key_groups:
                yield kg, key, container

    def load(self, key_group: int, key: Any, container: Any) -> None:
        self.ref_put(key, container)

    def count_keys(self) -> int:
        return len(self.table)

    def footprint_bytes(self, seen: set[int]) -> int:
        """Bytes of the Python objects this state holds: its dict, keys, containers, TTL
        tuples and values, each object counted once (`seen` holds ids already counted, so a
        payload shared by many entries counts once). Allocator slack is not included."""
        size = sys.getsizeof
        shape = self.spec.shape

        def obj(o: Any) -> int:
            if id(o) in seen:
                return 0
            seen.add(id(o))
            return size(o)

        unit = _unit_size_ttl if self.spec.ttl_layout else obj
        total = size(self.table)
        for key, container in self.table.items():
            total += obj(key)
            if shape == "value":
                total += unit(container) if unit is obj else unit(container, obj)
            elif shape == "list":
                total += size(container) + sum(
                    unit(e) if unit is obj else unit(e, obj) for e in container)
            else:
                total += size(container) + sum(
                    obj(uk) + (unit(s) if unit is obj else unit(s, obj))
                    for uk, s in container.items())
        return total

    def drop_all(self) -> None:
        self.table.clear()


def _unit_size_ttl(stored: tuple, obj: Callable[[Any], int]) -> int:
    """A TTL unit: the (value, ts) tuple itself plus its value and timestamp objects."""
    return sys.getsizeof(stored) + obj(stored[0]) + obj(stored[1])


class HeapRawValue(_HeapRaw):
    """Current key -> one stored object.

    value/update/clear are closures over the dict and the backend: on the hot path a closure
    cell read is cheaper than `self.` lookups, and this is most of a heap state access."""

    kind = "value"

    def __init__(self, backend: Any, spec: RawStateSpec) -> None:
        super().__init__(backend, spec)
        table, b = self.table, backend

        def value() -> Any:
            return table.get(b._cur_key)

        def update(stored: Any) -> None:
            table[b._cur_key] = stored

        def clear() -> None:
            table.pop(b._cur_key, None)

        self.value, self.update, self.clear = value, update, clear

    def stamped_writer(
        self, check: Callable[[Any], Any], stamp: Callable[[], int]
    ) -> Callable[[Any], None]:
        """`write(v)`: store the unit `(check(v), stamp())` for the current key, or clear it when
        v is None. The one place storage writes a stamped unit itself, for speed: it is the whole
        of a heap TTL value update in one call, where the TTL layer's own closure over `update`
        costs one more call: the heap ttl_nobg value_update loop of bench/state_ops.py ran
        1.07-1.10x slower with that closure (medians of 11 interleaved rounds, two runs). For
        integer types an in-range int is checked inline, saving the call to `check` as well.
        Storage still knows nothing of expiry: `stamp` is whatever the caller stamps with."""
        table, b = self.table, self._b
        bounds = self.spec.value_type.int_bounds
        if bounds is None:

            def write(value: Any) -> None:
                if value is None:
                    table.pop(b._cur_key, None)
                else:
                    table[b._cur_key] = (check(value), stamp())

            return write
        low, high = bounds

        def write_int(value: Any) -> None:
            if value.__class__ is int and low <= value <= high:
                table[b._cur_key] = (value, stamp())
            elif value is None:
                table.pop(b._cur_key, None)
            else:
                table[b._cur_key] = (check(value), stamp())

        return write_int


class HeapRawList(_HeapRaw):
    """Current key -> a Python list of stored elements (appended in place)."""

    kind = "list"

    def get(self) -> list | None:
        """The stored list itself: callers must treat it as read-only."""
        return self.table.get(self._b._cur_key)

    def add(self, element: Any) -> None:
        key = self._b._cur_key
        lst = self.table.get(key)
        if lst is None:
            self.table[key] = [element]
        else:
            lst.append(element)

    def add_all(self, elements: list) -> None:
        if not elements:
            return
        key = self._b._cur_key
        lst = self.table.get(key)
        if lst is None:
            self.table[key] = list(elements)
        else:
            lst.extend(elements)

    def update(self, elements: list) -> None:
        if elements:
            self.table[self._b._cur_key] = list(elements)
        else:
            self.table.pop(self._b._cur_key, None)

    def clear(self) -> None:
        self.table.pop(self._b._cur_key, None)


class HeapRawMap(_HeapRaw):
    """Current key -> a dict user key -> stored value; an emptied map is removed."""

    kind = "map"

    def get(self, user_key: Any) -> Any:
        m = self.table.get(self._b._cur_key)
        return ABSENT if m is None else m.get(user_key, ABSENT)

    def put(self, user_key: Any, stored: Any) -> None:
        key = self._b._cur_key
        m = self.table.get(key)
        if m is None:
            self.table[key] = {user_key: stored}
        else:
            m[user_key] = stored

    def put_all(self, entries: dict) -> None:
        if not entries:
            return
        key = self._b._cur_key
        m = self.table.get(key)
        if m is None:
            self.table[key] = dict(entries)
        else:
            m.update(entries)

    def remove(self, user_key: Any) -> None:
        key = self._b._cur_key
        m = self.table.get(key)
        if m is not None and m.pop(user_key, ABSENT) is not ABSENT and not m:
            del self.table[key]

    def contains(self, user_key: Any) -> bool:
        m = self.table.get(self._b._cur_key)
        return m is not None and user_key in m

    def items(self) -> list[tuple[Any, Any]]:
        m = self.table.get(self._b._cur_key)
        return [] if m is None else list(m.items())

    def is_empty(self) -> bool:
        return not self.table.get(self._b._cur_key)

    def clear(self) -> None:
        self.table.pop(self._b._cur_key, None)

    def ref_get_entry(self, ref: Any, user_key: Any) -> Any:
        m = self.table.get(ref)
        return ABSENT if m is None else m.get(user_key, ABSENT)

    def ref_put_entry(self, ref: Any, user_key: Any, stored: Any) -> None:
        m = self.table.get(ref)
        if m is None:
            self.table[ref] = {user_key: stored}
        else:
            m[user_key] = stored

    def ref_remove_entries(self, ref: Any, user_keys: Iterable[Any]) -> None:
        m = self.table.get(ref)
        if m is None:
            return
        for uk in user_keys:
            m.pop(uk, None)
        if not m:
            del self.table[ref]


HEAP_RAW_BY_SHAPE = {"value": HeapRawValue, "list": HeapRawList, "map": HeapRawMap}
