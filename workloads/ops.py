"""Operation codes carried by every generated event, and the state type each one targets.

An event's ``op`` column is an ``int8`` holding an :class:`Op` value. The codes are part of the
wire format between the generator (Spark source stage) and the keyed operator, and of recorded
traces, so they are fixed explicitly here and must never be renumbered; add new codes at the end.

Spec files name operations by their lower-case name (``"value_get"``, ``"value_rmw"``, ...),
which is what :meth:`Op.from_name` accepts and :attr:`Op.spec_name` returns.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum

import numpy as np

#: numpy dtype of the ``op`` column (``int8`` on the wire).
OP_DTYPE = np.int8


class StateType(StrEnum):
    """The kind of keyed state an operation reads or writes (one state of each kind per task)."""

    VALUE = "value"
    LIST = "list"
    MAP = "map"
    REDUCING = "reducing"
    AGGREGATING = "aggregating"


class Op(IntEnum):
    """A state operation. The integer value is the wire code (fits in ``int8``)."""

    VALUE_GET = 0
    VALUE_UPDATE = 1
    VALUE_CLEAR = 2
    VALUE_RMW = 3  # read-modify-write: value() then update(), as YCSB workload F
    LIST_ADD = 4
    LIST_GET = 5
    MAP_PUT = 6
    MAP_GET = 7
    MAP_ITERATE = 8
    MAP_REMOVE = 9
    REDUCING_ADD = 10
    AGGREGATING_ADD = 11

    @property
    def spec_name(self) -> str:
        """The name used in spec files and traces, e.g. ``"value_rmw"``."""
        return self.name.lower()

    @property
    def state_type(self) -> StateType:
        """Which state the operation targets."""
        return _STATE_TYPE[self]

    @property
    def carries_value(self) -> bool:
        """True when the event's ``value``/``value_size`` are written to state.

        For other ops the generator sets ``value`` and ``value_size`` to 0, so that the stream
        says by itself how many bytes it writes.
        """
        return self in _CARRIES_VALUE

    @property
    def uses_map_key(self) -> bool:
        """True for map ops that address one user key (put, get, remove); not for iterate."""
        return self in _USES_MAP_KEY

    @classmethod
    def from_name(cls, name: str) -> Op:
        """Look up an op by its spec name; ``ValueError`` listing the valid names otherwise."""
        try:
            return _BY_NAME[name]
        except (KeyError, TypeError):
            raise ValueError(
                f"unknown operation {name!r}; expected one of {', '.join(OP_NAMES)}"
            ) from None


_STATE_TYPE: dict[Op, StateType] = {
    Op.VALUE_GET: StateType.VALUE,
    Op.VALUE_UPDATE: StateType.VALUE,
    Op.VALUE_CLEAR: StateType.VALUE,
    Op.VALUE_RMW: StateType.VALUE,
    Op.LIST_ADD: StateType.LIST,
    Op.LIST_GET: StateType.LIST,
    Op.MAP_PUT: StateType.MAP,
    Op.MAP_GET: StateType.MAP,
    Op.MAP_ITERATE: StateType.MAP,
    Op.MAP_REMOVE: StateType.MAP,
    Op.REDUCING_ADD: StateType.REDUCING,
    Op.AGGREGATING_ADD: StateType.AGGREGATING,
}
_CARRIES_VALUE = frozenset(
    {Op.VALUE_UPDATE, Op.VALUE_RMW, Op.LIST_ADD, Op.MAP_PUT, Op.REDUCING_ADD, Op.AGGREGATING_ADD}
)
_USES_MAP_KEY = frozenset({Op.MAP_PUT, Op.MAP_GET, Op.MAP_REMOVE})
_BY_NAME: dict[str, Op] = {op.spec_name: op for op in Op}

#: All spec names, in code order.
OP_NAMES: tuple[str, ...] = tuple(op.spec_name for op in Op)

#: Boolean lookup tables indexed by op code, for vectorised masks over an ``op`` column.
CARRIES_VALUE_BY_CODE: np.ndarray = np.array([op.carries_value for op in Op], dtype=bool)
USES_MAP_KEY_BY_CODE: np.ndarray = np.array([op.uses_map_key for op in Op], dtype=bool)

assert [int(op) for op in Op] == list(range(len(Op))), "op codes must be dense from 0"
assert len(Op) <= np.iinfo(OP_DTYPE).max
