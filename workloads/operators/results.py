"""``ttl_changed_results``: the share of an operator's outputs a TTL changed.

The TTL run's outputs and a reference run's - the same operator over the same task input, on a
heap backend without TTL but with the same retention setting (``EmulatedOperator``) - are
compared as multisets of output records (changelog kind and values)::

    changed  = |ttl - ref| + |ref - ttl|     (records one run emitted and the other did not)
    compared = |ttl union ref|               (max multiplicity of each record)
    ttl_changed_results = changed / compared (0 when both are empty)

0 means identical outputs, 1 disjoint ones. A join match lost is one record missing; a
duplicate let through by deduplication is ``+I`` instead of ``-U``/``+U``; a restarted
aggregate changes every later update of its group. Under event time the TTL clock is each
record's timestamp, so the number is exact: the same seed gives the same share.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import backends
from backends.keygroups import KeyGroupRange
from workloads.operators import make_operator
from workloads.operators.base import EmulatedOperator, Output


def compare_outputs(ttl: Iterable[Output], ref: Iterable[Output]) -> tuple[int, int]:
    """(changed, compared) of two output multisets (module docstring)."""
    a, b = Counter(ttl), Counter(ref)
    changed = sum(((a - b) + (b - a)).values())
    compared = sum((a | b).values())
    return changed, compared


def changed_share(changed: int, compared: int) -> float:
    return changed / compared if compared else 0.0


def replay(operator: EmulatedOperator, inputs: Iterable[tuple[list, list, list]],
           set_time: Callable[[int], None] | None = None) -> None:
    """Feed ``(keys, tss, rows)`` chunks through ``operator`` (``set_time(ts)`` first, e.g. a
    backend's event clock), then end the input - as the task's loop does."""
    for keys, tss, rows in inputs:
        for key, ts, row in zip(keys, tss, rows):
            if set_time is not None:
                set_time(ts)
            operator.advance_watermark(ts)
            operator.element(key, row)
    operator.end_of_input()


def reference_outputs(op_spec: Any, out_of_orderness_ms: int,
                      inputs: Iterable[tuple[list, list, list]],
                      max_parallelism: int, key_group_range: KeyGroupRange,
                      start_ms: int) -> list[Output]:
    """The outputs of ``op_spec``'s operator over ``inputs`` without TTL (the reference)."""
    operator = make_operator(op_spec, out_of_orderness_ms, retention=True)
    backend = backends.create_backend("heap", clock=backends.ManualClock(start_ms),
                                      max_parallelism=max_parallelism,
                                      key_group_range=key_group_range)
    try:
        operator.bind(backend, operator.descriptors(None))
        replay(operator, inputs)
    finally:
        backend.close()
    return operator.outputs
