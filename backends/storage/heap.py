"""The heap backend's raw storage: one Python dict per state, stored objects kept as they are.

Flink's heap state table is split by key group; here a state is one flat dict `key -> container`
and a key's group is computed (and cached by the backend) only when a snapshot, a restore or a
rescale needs it. A per-key-group dict costs a second random dict lookup on every access (the
key's group), which halves the hot loop's speed against the flat dict (docs/performance.md,
"Design choices"). With no current key the backend's current key is
NO_KEY, whose hash raises NoCurrentKeyError, so the hot path needs no "is a key set?" branch.

Snapshots (copy-on-write, as Flink's CopyOnWriteStateMap): `freeze()` is a snapshot's
synchronous part, a shallow copy of the state's dict (C speed, ~10-20 ns a key). Values are
immutable units, but list and map containers are changed in place by the state API, so while a
frozen view is alive a list or map state runs copy-on-write versions of its in-place writers
(instance attributes shadowing the class methods, installed by the first `freeze()` and removed
when the last view's `release()` ends): the first in-place write of a container that any alive
view still holds (the same object) copies it first, later writes go to the copy. Several views
may be alive at once (snapshots queued on the backend's snapshot thread, keyed_backend.py): the
copy-on-write methods check each of them, newest first, through a tuple that `freeze()` and
`release()` replace whole, so a release on the snapshot thread never changes a sequence the task
thread is iterating. With no snapshot in flight the class methods run unchanged, so the hot path
pays nothing. Containers are changed in place only by the methods in `_COW_METHODS` (the
incremental cleanup replaces a map instead of deleting from it, backends/cleanup/incremental.py).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from backends.errors import NoCurrentKeyError
from backends.storage.base import ABSENT
from backends.storage.layout import RawStateSpec
from backends.ttl.inline import inline
from backends.ttl.units import stamped


class _NoKey:
    """The current key while none is set: any dict lookup with it raises NoCurrentKeyError."""

    __slots__ = ()

    def __hash__(self) -> int:
        raise NoCurrentKeyError()

    def __repr__(self) -> str:
        return "NO_KEY"


NO_KEY: Any = _NoKey()


class HeapFrozen:
    """A heap state as of a snapshot's synchronous part: `table` is a shallow copy of its dict
    (read by the snapshot's asynchronous part); `release()` ends copy-on-write."""

    __slots__ = ("_raw", "table")

    def __init__(self, raw: _HeapRaw, table: dict) -> None:
        self._raw, self.table = raw, table

    def release(self) -> None:
        raw = self._raw
        if raw is not None:
            self._raw = None
            raw._thaw(self)
            self.table = {}


class _HeapRaw:
    """Shared plumbing: the state's dict, references (the key itself) and bulk access."""

    #: The methods that change a container in place (copy-on-write while a view is frozen).
    _COW_METHODS: tuple[str, ...] = ()

    def __init__(self, backend: Any, spec: RawStateSpec) -> None:
        self._b = backend
        self.spec = spec
        self.name = spec.name
        self.table: dict = {}
        self._frozen: list[HeapFrozen] = []  # alive views, oldest first
        #: [tables of the alive views, newest first]: one tuple, replaced whole (never mutated)
        self._shared_tables: list[tuple[dict, ...]] = [()]
        self._cow_lock = threading.Lock()  # freeze() (task) against release() (snapshot thread)

    # ------------------------------------------------------------- snapshots (copy-on-write)
    def freeze(self) -> HeapFrozen:
        """A snapshot's synchronous part for this state (see the module docstring); other
        views may still be alive (snapshots in flight before this one)."""
        view = HeapFrozen(self, dict(self.table))
        if self._COW_METHODS:
            with self._cow_lock:  # a release on the snapshot thread may run meanwhile
                frozen = self._frozen
                frozen.append(view)
                self._shared_tables[0] = tuple(v.table for v in reversed(frozen))
                if len(frozen) == 1:
                    for name, method in self._cow_methods(self._is_shared()).items():
                        setattr(self, name, method)
        return view

    def _thaw(self, view: HeapFrozen) -> None:
        """End `view` (called from its release(), possibly on the snapshot thread)."""
        with self._cow_lock:
            frozen = self._frozen
            for i, alive in enumerate(frozen):
                if alive is view:
                    del frozen[i]
                    break
            else:
                return
            self._shared_tables[0] = tuple(v.table for v in reversed(frozen))
            if not frozen:
                for name in self._COW_METHODS:
                    self.__dict__.pop(name, None)

    def _is_shared(self) -> Callable[[Any, Any], bool]:
        """`is_shared(key, container)`: does any alive view hold this very container?"""
        cell = self._shared_tables

        def is_shared(key: Any, container: Any) -> bool:
            for table in cell[0]:  # noqa: SIM110 - a loop is cheaper than any(<genexpr>)
                if table.get(key) is container:
                    return True
            return False

        return is_shared

    def _cow_methods(self, shared: Callable[[Any, Any], bool]) -> dict[str, Callable[..., None]]:
        return {}  # pragma: no cover - list and map states have in-place writers

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

    @inline(stamped)
    def stamped_writer(
        self, check: Callable[[Any], Any], stamp: Callable[[], int]
    ) -> Callable[[Any], None]:
        """`write(v)`: store the unit `(check(v), stamp())` for the current key, or clear it when
        v is None. The one place storage writes a stamped unit itself, for speed: it is the whole
        of a heap TTL value update in one call, where the TTL layer's own closure over `update`
        costs one more call on the hottest loop (docs/measurements.md, "The heap's stamped
        write"). For
        integer types an in-range int is checked inline, saving the call to `check` as well.
        Storage still knows nothing of expiry: `stamp` is whatever the caller stamps with; the
        unit is `units.stamped`, inlined (backends/ttl/inline.py)."""
        table, b = self.table, self._b
        bounds = self.spec.value_type.int_bounds
        if bounds is None:

            def write(value: Any) -> None:
                if value is None:
                    table.pop(b._cur_key, None)
                else:
                    table[b._cur_key] = stamped(check(value), stamp())

            return write
        low, high = bounds

        def write_int(value: Any) -> None:
            if value.__class__ is int and low <= value <= high:
                table[b._cur_key] = stamped(value, stamp())
            elif value is None:
                table.pop(b._cur_key, None)
            else:
                table[b._cur_key] = stamped(check(value), stamp())

        return write_int


class HeapRawList(_HeapRaw):
    """Current key -> a Python list of stored elements (appended in place)."""

    kind = "list"
    _COW_METHODS = ("add", "add_all")

    def _cow_methods(self, shared: Callable[[Any, Any], bool]) -> dict[str, Callable[..., None]]:
        """add / add_all that copy a list a frozen view still holds before appending."""
        table, b = self.table, self._b

        def add(element: Any) -> None:
            key = b._cur_key
            lst = table.get(key)
            if lst is None:
                table[key] = [element]
            elif shared(key, lst):
                table[key] = [*lst, element]
            else:
                lst.append(element)

        def add_all(elements: list) -> None:
            if not elements:
                return
            key = b._cur_key
            lst = table.get(key)
            if lst is None:
                table[key] = list(elements)
            elif shared(key, lst):
                table[key] = [*lst, *elements]
            else:
                lst.extend(elements)

        return {"add": add, "add_all": add_all}

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
    _COW_METHODS = ("put", "put_all", "remove", "ref_put_entry", "ref_remove_entries")

    def _cow_methods(self, shared: Callable[[Any, Any], bool]) -> dict[str, Callable[..., None]]:
        """The in-place writers, copying a map a frozen view still holds before changing it."""
        table, b = self.table, self._b

        def own(key: Any, m: dict) -> dict:
            if shared(key, m):
                m = table[key] = dict(m)
            return m

        def put_entry(key: Any, user_key: Any, stored: Any) -> None:
            m = table.get(key)
            if m is None:
                table[key] = {user_key: stored}
            else:
                own(key, m)[user_key] = stored

        def put(user_key: Any, stored: Any) -> None:
            put_entry(b._cur_key, user_key, stored)

        def put_all(entries: dict) -> None:
            if not entries:
                return
            key = b._cur_key
            m = table.get(key)
            if m is None:
                table[key] = dict(entries)
            else:
                own(key, m).update(entries)

        def remove_entries(key: Any, user_keys: Iterable[Any]) -> None:
            m = table.get(key)
            if m is None:
                return
            user_keys = [uk for uk in user_keys if uk in m]
            if not user_keys:
                return
            m = own(key, m)
            for uk in user_keys:
                m.pop(uk, None)
            if not m:
                del table[key]

        def remove(user_key: Any) -> None:
            remove_entries(b._cur_key, (user_key,))

        return {"put": put, "put_all": put_all, "remove": remove,
                "ref_put_entry": put_entry, "ref_remove_entries": remove_entries}

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
