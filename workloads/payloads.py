"""Values written to state, built from an event's ``(value, value_size)`` and the spec's type.

``long`` values are the event's ``value`` itself. ``string``/``bytes`` values are a deterministic
payload of exactly ``value_size`` bytes (ASCII, so a string's characters are its UTF-8 bytes),
the same object for every event of that size: the cache keeps one payload per distinct size, and
a batch's column is built with one numpy gather, so the hot loop never allocates a value.
Sharing payload objects is fine because state values are immutable ``str``/``bytes``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from backends.types import Types
from workloads.spec import VALUE_TYPES

_PATTERN = b"statebench-payload:0123456789abcdefghijklmnopqrstuvwxyz;"


def payload_bytes(size: int) -> bytes:
    """``size`` bytes of a fixed printable pattern (deterministic, compressible like text)."""
    reps = size // len(_PATTERN) + 1
    return (_PATTERN * reps)[:size]


def _known(value_type: str) -> str:
    if value_type not in VALUE_TYPES:
        raise ValueError(
            f"unknown value type {value_type!r}; expected one of {', '.join(VALUE_TYPES)}"
        )
    return value_type


def state_type(value_type: str):  # -> backends TypeInformation
    """The declared state type for a spec value type."""
    makers = {"long": Types.LONG, "string": Types.STRING, "bytes": Types.BYTES}
    return makers[_known(value_type)]()


class PayloadColumn:
    """Turns a batch's ``value``/``value_size`` columns into the Python values to write."""

    def __init__(self, value_type: str) -> None:
        self.value_type = _known(value_type)
        self._cache: dict[int, bytes | str] = {}

    def _payload(self, size: int) -> bytes | str:
        cached = self._cache.get(size)
        if cached is None:
            data = payload_bytes(size)
            cached = data.decode("ascii") if self.value_type == "string" else data
            self._cache[size] = cached
        return cached

    def values(self, batch: pa.RecordBatch) -> list:
        """One Python value per row of ``batch``."""
        if self.value_type == "long":
            return batch.column("value").to_pylist()
        sizes = batch.column("value_size").to_numpy(zero_copy_only=False)
        if len(sizes) == 0:
            return []
        uniq, inverse = np.unique(sizes, return_inverse=True)
        table = np.empty(len(uniq), dtype=object)
        for i, size in enumerate(uniq.tolist()):
            table[i] = self._payload(size)
        return table[inverse].tolist()
