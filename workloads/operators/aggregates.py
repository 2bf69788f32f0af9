"""The aggregate functions of ``[operator] agg``, on longs: what windows and group
aggregations accumulate (append-only input, so no retraction is needed)."""

from __future__ import annotations

from collections.abc import Callable


def accumulator(agg: str) -> Callable[[int | None, int], int]:
    """``add(acc, price)``: the new accumulator (``acc`` None: the first value)."""
    if agg == "max":
        return lambda acc, v: v if acc is None or v > acc else acc
    if agg == "sum":
        return lambda acc, v: v if acc is None else acc + v
    if agg == "count":
        return lambda acc, v: 1 if acc is None else acc + 1
    raise ValueError(f"unknown aggregate {agg!r}; expected max, sum or count")


def merger(agg: str) -> Callable[[int, int], int]:
    """``merge(a, b)``: two accumulators of merged windows as one (``AggregateFunction.merge``)."""
    if agg == "max":
        return max
    if agg in ("sum", "count"):
        return lambda a, b: a + b
    raise ValueError(f"unknown aggregate {agg!r}; expected max, sum or count")
