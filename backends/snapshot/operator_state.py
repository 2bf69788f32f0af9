"""Operator (non-keyed) state: per-task list state and broadcast state, and how it is rescaled.

Reached through `backend.operator_state()` (one per keyed backend, i.e. per task) and snapshotted
and restored together with the keyed state, as a Flink task snapshots its operator and keyed
state backends together. PyFlink's OperatorStateStore names:

- `get_list_state(desc)`: even-split redistribution. On restore at another parallelism the old
  tasks' lists are concatenated in task order and cut into contiguous, even parts (the first
  `total % parallelism` tasks get one element more), Flink's RoundRobinOperatorStateRepartitioner
  for SPLIT_DISTRIBUTE (Flink also rotates which task gets the extra elements from one state to
  the next; statebench always starts at task 0). At the same parallelism each task keeps its own.
- `get_union_list_state(desc)`: union redistribution, every task gets every old task's elements.
- `get_broadcast_state(map_desc)`: a map every task holds the same copy of; new task i gets old
  task `i % old_parallelism`'s copy, as Flink.

Operator state has no TTL (neither has Flink's). Values are checked against the declared type;
a restored state re-registered with another type migrates by the same Avro-style rules as keyed
state, and re-registering it in another mode raises StateMigrationError.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from backends import descriptors as d
from backends.errors import StateMigrationError
from backends.schema import type_migration
from backends.snapshot.format import decode_values, value_array
from backends.storage.base import ABSENT
from backends.types import TypeInformation

SPLIT, UNION, BROADCAST = "split", "union", "broadcast"
MODES = (SPLIT, UNION, BROADCAST)


class OperatorListState:
    """A task's list (PyFlink ListState API): get, add, add_all, update, clear."""

    def __init__(self, type_info: TypeInformation, elements: list) -> None:
        self._check = type_info.check
        self.elements = elements

    def get(self) -> list:
        return list(self.elements)

    def add(self, value: Any) -> None:
        if value is None:
            raise TypeError("You cannot add None to a ListState.")
        self.elements.append(self._check(value))

    def add_all(self, values: Any) -> None:
        if values is None or any(v is None for v in values):
            raise TypeError("You cannot add None to a ListState.")
        self.elements.extend(self._check(v) for v in values)

    def update(self, values: Any) -> None:
        if values is None or any(v is None for v in values):
            raise TypeError("You cannot update a ListState with None.")
        self.elements[:] = [self._check(v) for v in values]

    def clear(self) -> None:
        self.elements.clear()


class BroadcastState:
    """The task's copy of a broadcast map (PyFlink MapState API); values may be None."""

    def __init__(self, key_type: TypeInformation, value_type: TypeInformation, entries: dict
                 ) -> None:
        self._check_key, self._check_value = key_type.check, value_type.check
        self.entries = entries

    def get(self, key: Any) -> Any:
        return self.entries.get(key)

    def put(self, key: Any, value: Any) -> None:
        self.entries[self._check_key(key)] = None if value is None else self._check_value(value)

    def put_all(self, mapping: dict | None) -> None:
        for k, v in (mapping or {}).items():
            self.put(k, v)

    def remove(self, key: Any) -> None:
        self.entries.pop(key, None)

    def contains(self, key: Any) -> bool:
        return key in self.entries

    def items(self) -> Iterator[tuple[Any, Any]]:
        return iter(list(self.entries.items()))

    def keys(self) -> Iterator[Any]:
        return iter(list(self.entries))

    def values(self) -> Iterator[Any]:
        return iter(list(self.entries.values()))

    def is_empty(self) -> bool:
        return not self.entries

    def clear(self) -> None:
        self.entries.clear()


@dataclass
class OperatorStateData:
    """One operator state's data and how it was declared: what a snapshot stores."""

    name: str
    mode: str
    value_type: TypeInformation
    key_type: TypeInformation | None
    data: Any  # list (split/union) or dict (broadcast)


class OperatorStateBackend:
    """The operator state of one task (see the module docstring)."""

    def __init__(self) -> None:
        self._data: dict[str, OperatorStateData] = {}
        self._states: dict[str, tuple[d.StateDescriptor, Any]] = {}

    def get_list_state(self, descriptor: d.ListStateDescriptor) -> OperatorListState:
        return self._register(descriptor, SPLIT)

    def get_union_list_state(self, descriptor: d.ListStateDescriptor) -> OperatorListState:
        return self._register(descriptor, UNION)

    def get_broadcast_state(self, descriptor: d.MapStateDescriptor) -> BroadcastState:
        return self._register(descriptor, BROADCAST)

    def registered_state_names(self) -> list[str]:
        return sorted(self._data)

    def _register(self, desc: d.StateDescriptor, mode: str) -> Any:
        want = d.MAP if mode == BROADCAST else d.LIST
        if not isinstance(desc, d.StateDescriptor) or desc.kind != want:
            raise TypeError(f"{mode} operator state needs a {want} state descriptor, got {desc!r}")
        if desc.ttl_enabled:
            raise ValueError(f"operator state '{desc.name}': TTL applies to keyed state only")
        known = self._states.get(desc.name)
        if known is not None and known[0] is desc:
            return known[1]
        key_type = desc.key_type_info if isinstance(desc, d.MapStateDescriptor) else None
        entry = self._data.get(desc.name)
        if entry is None:
            entry = OperatorStateData(desc.name, mode, desc.type_info, key_type,
                                      {} if mode == BROADCAST else [])
        else:
            entry = _migrate(entry, mode, desc.type_info, key_type)
        self._data[desc.name] = entry
        if mode == BROADCAST:
            assert key_type is not None
            state: Any = BroadcastState(key_type, desc.type_info, entry.data)
        else:
            state = OperatorListState(desc.type_info, entry.data)
        self._states[desc.name] = (desc, state)
        return state

    # ----------------------------------------------------------------- snapshot plumbing
    def snapshot_data(self) -> list[OperatorStateData]:
        """Every state, registered or only restored, copied (the snapshot's consistent view)."""
        return [OperatorStateData(e.name, e.mode, e.value_type, e.key_type,
                                  dict(e.data) if e.mode == BROADCAST else list(e.data))
                for _, e in sorted(self._data.items())]

    def restore_data(self, entry: OperatorStateData) -> None:
        self._data[entry.name] = entry
        self._states.pop(entry.name, None)


def _migrate(entry: OperatorStateData, mode: str, value_type: TypeInformation,
             key_type: TypeInformation | None) -> OperatorStateData:
    if entry.mode != mode:
        raise StateMigrationError(
            f"operator state '{entry.name}' was written as {entry.mode} state and cannot be "
            f"registered as {mode} state")
    if entry.key_type is not None and key_type is not None and entry.key_type != key_type:
        raise StateMigrationError(
            f"state '{entry.name}': incompatible schema change: map key type changes "
            f"{entry.key_type!r} -> {key_type!r}")
    fn = type_migration(entry.value_type, value_type, entry.name)
    data = entry.data
    if fn is not None:
        if mode == BROADCAST:
            data = {k: None if v is None else fn(v) for k, v in data.items()}
        else:
            data = [fn(v) for v in data]
    return OperatorStateData(entry.name, mode, value_type, key_type, data)


def redistribute(mode: str, per_task: list[Any], index: int, parallelism: int) -> Any:
    """Task `index` of `parallelism`'s share of one operator state, from the old tasks' data
    (in old task order)."""
    if mode == BROADCAST:
        present = [p for p in per_task if p is not ABSENT]
        return dict(present[index % len(present)]) if present else {}
    lists = [[] if p is ABSENT else p for p in per_task]
    if mode == UNION:
        return [e for lst in lists for e in lst]
    if len(lists) == parallelism:
        return list(lists[index])
    merged = [e for lst in lists for e in lst]
    base, extra = divmod(len(merged), parallelism)
    start = index * base + min(index, extra)
    return merged[start:start + base + (1 if index < extra else 0)]


def to_table(entry: OperatorStateData) -> tuple[pa.Table, dict[str, str]]:
    """The rows of one operator state: `value` (list states) or `key`, `value` (broadcast)."""
    columns: dict[str, pa.Array] = {}
    encodings: dict[str, str] = {}
    if entry.mode == BROADCAST:
        assert entry.key_type is not None
        columns["key"], encodings["key"] = value_array(list(entry.data), entry.key_type)
        values = list(entry.data.values())
    else:
        values = entry.data
    columns["value"], encodings["value"] = value_array(values, entry.value_type)
    return pa.table(columns), encodings


def from_batches(mode: str, value_type: TypeInformation, key_type: TypeInformation | None,
                 encodings: dict[str, str], batches: list[pa.RecordBatch]) -> Any:
    values = [v for b in batches
              for v in decode_values(b.column("value"), value_type, encodings["value"])]
    if mode != BROADCAST:
        return values
    assert key_type is not None
    keys = [k for b in batches
            for k in decode_values(b.column("key"), key_type, encodings["key"])]
    return dict(zip(keys, values))
