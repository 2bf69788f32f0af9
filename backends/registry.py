"""One shape for the registries of the harness's axes (cleanup strategies, storage backends):
named things, the built-in ones fixed, others added and removed by name (a test's throwaway
one), and a lookup whose error names every known one.

Why one class: each axis keeps its own checks and words ("unknown cleanup strategy", "backend
kind"), but registering, refusing a taken name and a built-in's removal, and listing what is
known are the same on every axis, and a fix to one (a name taken twice) is a fix to all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Generic, Protocol, TypeVar


class Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=Named)


class Registry(Generic[T]):
    """The registered things of one axis, in registration order.

    ``noun`` names one in messages ("strategy", "backend kind"); ``unknown(name, known)`` is the
    lookup's error text; ``check(found)`` raises ValueError for a thing the axis refuses."""

    def __init__(self, noun: str, unknown: Callable[[str, str], str],
                 check: Callable[[T], None] | None = None) -> None:
        self.noun = noun
        self._unknown = unknown
        self._check = check
        self._items: dict[str, T] = {}
        self._builtin: frozenset[str] = frozenset()
        #: name -> thing, read-only, as registered now
        self.items: Mapping[str, T] = MappingProxyType(self._items)

    def register(self, found: T) -> T:
        """Add ``found``; ValueError for a name already taken or a thing ``check`` refuses."""
        if self._check is not None:
            self._check(found)
        if found.name in self._items:
            raise ValueError(f"{self.noun} '{found.name}' is registered already")
        self._items[found.name] = found
        return found

    def builtin(self, things: Iterable[T]) -> None:
        """Register ``things`` as the ones the package ships (never unregistered)."""
        for found in things:
            self.register(found)
        self._builtin = frozenset(self._items)

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a test's throwaway one); built-in ones stay."""
        if name in self._builtin:
            raise ValueError(f"{self.noun} '{name}' is built in")
        self._items.pop(name, None)

    def get(self, name: str) -> T:
        """The registered ``name``; ValueError names the known ones."""
        found = self._items.get(name)
        if found is None:
            raise ValueError(self._unknown(name, ", ".join(self._items)))
        return found

    def find(self, name: str) -> T | None:
        """The registered ``name``, or None."""
        return self._items.get(name)

    def names(self) -> tuple[str, ...]:
        """Every registered name, now."""
        return tuple(self._items)
