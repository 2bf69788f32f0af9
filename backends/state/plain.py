"""ValueState, ListState, MapState, ReducingState and AggregatingState without TTL.

They validate values against the declared type (TypeError before anything reaches storage) and
otherwise pass straight through to the raw state, which stores the user value itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from backends.storage.base import ABSENT
from backends.types import TypeInformation


class ValueState:
    def __init__(self, raw: Any, value_type: TypeInformation) -> None:
        self._raw = raw
        self._check = value_type.check
        self.value = raw.value
        self.clear = raw.clear
        self._raw_update = raw.update

    def update(self, value: Any) -> None:
        if value is None:
            self._raw.clear()
        else:
            self._raw_update(self._check(value))


class ReducingState:
    def __init__(self, raw: Any, value_type: TypeInformation, reduce: Any) -> None:
        self._raw = raw
        self._check = value_type.check
        self._reduce = reduce
        self.get = raw.value
        self.clear = raw.clear

    def add(self, value: Any) -> None:
        if value is None:
            raise TypeError("You cannot add None to a ReducingState.")
        value = self._check(value)
        old = self._raw.value()
        self._raw.update(value if old is None else self._check(self._reduce(old, value)))


class AggregatingState:
    def __init__(self, raw: Any, acc_type: TypeInformation, agg_function: Any) -> None:
        self._raw = raw
        self._check = acc_type.check
        self._agg = agg_function
        self.clear = raw.clear

    def get(self) -> Any:
        acc = self._raw.value()
        return None if acc is None else self._agg.get_result(acc)

    def add(self, value: Any) -> None:
        acc = self._raw.value()
        if acc is None:
            acc = self._agg.create_accumulator()
        self._raw.update(self._check(self._agg.add(value, acc)))


class ListState:
    def __init__(self, raw: Any, element_type: TypeInformation) -> None:
        self._raw = raw
        self._check = element_type.check
        self.clear = raw.clear

    def get(self) -> Iterable[Any]:
        stored = self._raw.get()
        return tuple(stored) if stored else ()

    def add(self, value: Any) -> None:
        if value is None:
            raise TypeError("You cannot add None to a ListState.")
        self._raw.add(self._check(value))

    def _checked(self, values: Any, what: str) -> list:
        if values is None:
            raise TypeError(f"List of values to {what} cannot be None.")
        out = []
        for v in values:
            if v is None:
                raise TypeError(f"You cannot {what} None to a ListState.")
            out.append(self._check(v))
        return out

    def add_all(self, values: Iterable[Any]) -> None:
        self._raw.add_all(self._checked(values, "add"))

    def update(self, values: Iterable[Any]) -> None:
        self._raw.update(self._checked(values, "update"))


class MapState:
    def __init__(
        self, raw: Any, key_type: TypeInformation, value_type: TypeInformation
    ) -> None:
        self._raw = raw
        self._check_key = key_type.check
        self._check = value_type.check
        self.is_empty = raw.is_empty
        self.clear = raw.clear

    def get(self, user_key: Any) -> Any:
        stored = self._raw.get(self._check_key(user_key))
        return None if stored is ABSENT else stored

    def contains(self, user_key: Any) -> bool:
        return self._raw.contains(self._check_key(user_key))

    def put(self, user_key: Any, value: Any) -> None:
        self._raw.put(self._check_key(user_key), None if value is None else self._check(value))

    def put_all(self, entries: dict | None) -> None:
        if entries:
            self._raw.put_all(
                {self._check_key(k): None if v is None else self._check(v)
                 for k, v in entries.items()}
            )

    def remove(self, user_key: Any) -> None:
        self._raw.remove(self._check_key(user_key))

    def items(self) -> Iterator[tuple[Any, Any]]:
        return iter(self._raw.items())

    def keys(self) -> Iterator[Any]:
        return (k for k, _ in self._raw.items())

    def values(self) -> Iterator[Any]:
        return (v for _, v in self._raw.items())

    def __iter__(self) -> Iterator[Any]:
        return self.keys()
