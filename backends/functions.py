"""User functions for reducing and aggregating state, with PyFlink's names and argument order."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any


class ReduceFunction(ABC):
    """PyFlink's ReduceFunction: combine two values of the same type."""

    @abstractmethod
    def reduce(self, value1: Any, value2: Any) -> Any: ...


class AggregateFunction(ABC):
    """PyFlink's AggregateFunction: `add(value, accumulator)` returns the new accumulator."""

    @abstractmethod
    def create_accumulator(self) -> Any: ...

    @abstractmethod
    def add(self, value: Any, accumulator: Any) -> Any: ...

    @abstractmethod
    def get_result(self, accumulator: Any) -> Any: ...

    def merge(self, acc_a: Any, acc_b: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement merge")


def as_reduce_callable(reduce_fn: Any) -> Callable[[Any, Any], Any]:
    """A plain (a, b) -> c callable from either a callable or an object with .reduce(a, b)."""
    method = getattr(reduce_fn, "reduce", None)
    if callable(method):
        return method
    if callable(reduce_fn):
        return reduce_fn
    raise TypeError(
        "reduce_fn must be a callable (a, b) -> c or have a .reduce(a, b) method, "
        f"got {reduce_fn!r}"
    )


def check_aggregate_function(agg_fn: Any) -> Any:
    """Aggregating state needs create_accumulator, add and get_result (merge is optional)."""
    missing = [m for m in ("create_accumulator", "add", "get_result")
               if not callable(getattr(agg_fn, m, None))]
    if missing:
        raise TypeError(f"agg_fn {agg_fn!r} lacks {', '.join(missing)} (see AggregateFunction)")
    return agg_fn
