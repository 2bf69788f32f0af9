"""Operators over Nexmark input with state TTL: each ``[operator] kind`` turns its
input into the state accesses of the Flink operator it follows, on statebench's own backends.

==================  ===========================================  ==================================
kind                Flink class it follows                       states (name: shape)
==================  ===========================================  ==================================
``dedup``           ``RowTimeDeduplicateFunction`` (last row)    ``deduplicate-state``: value
``regular_join``    ``StreamingJoinOperator`` +                  ``left-records``,
                    ``JoinRecordStateViews.InputSideHasNo        ``right-records``: map
                    UniqueKey``
``tumbling_window`` ``WindowOperator`` + ``EventTimeTrigger``    ``window-contents``: map by
                    (incremental aggregate)                      window end; ``event-timers``
``sliding_window``  ``WindowOperator`` (``SlidingEventTime        as tumbling_window, a bid in
                    Windows``)                                   size / slide windows
``group_agg``       ``GroupAggFunction``                         ``accState``: value
``interval_join``   ``RowTimeIntervalJoin`` (``TimeInterval       ``IntervalJoin{Left,Right}Cache``:
                    Join``)                                      map by row time;
                                                                 ``...TimerState``: value; timers
``topn``            ``AppendOnlyTopNFunction`` (without rank     ``data-state-with-append``: map
                    number; LRU buffer cache)                    by sort key
``session_window``  ``WindowOperator`` + ``EventTimeSession       ``window-contents``: map by
                    Windows`` (merging)                          state window;
                                                                 ``merging-window-set``: value;
                                                                 timers
==================  ===========================================  ==================================

Each module's docstring gives the per-event reads, writes, deletes, timers and outputs and what
the emulation leaves out. :func:`check_supported` refuses a kind without an emulation (none
today); which lanes run which kinds is the planner's (``workloads.run.plan.operator_lane_reason``).

Namespaces are emulated, not added to the backends: a window's state is a map entry keyed by
the window (``MapState<window end, accumulator>``). Flink's (key, namespace) -> value rows and
statebench's (key, map key) -> value entries have the same count, the same per-entry TTL (a map
entry's TTL is per entry, as a namespaced value's) and the same per-event accesses (one get, one
put, one delete per window); the backends stay as they are while their TTL and cleanup code is
being refactored, and every cleanup strategy already handles map entries. What differs: the
namespace is serialized as the map's user key (8 bytes, Flink's ``TimeWindow`` is 16), and a
heap map is a dict per key instead of Flink's one ``CopyOnWriteStateMap`` per namespace.

Timers are state (``workloads.operators.base.Timers``): an ``event-timers`` map entry per timer
on the task's backend - in RocksDB on the ``rocksdb`` lane, on the heap on ``heap`` - counted in
live entries, bytes and checkpoints. The Flink lanes ``flink-heap`` and ``flink-rocksdb`` run
the same kinds in Java against Flink's own backends, access for access, with namespaces through
``TimeWindow.Serializer`` and timers in the backend's priority-queue state
(``backends.flink.operators``, ``Operators.java``); ``flink-forst`` is refused naming itself.

Outputs: every operator records what it emits (changelog kind and values);
``ttl_changed_results`` compares them with a reference run without TTL
(``workloads.operators.results``).
"""

from __future__ import annotations

from typing import Any

from workloads.operators.base import EmulatedOperator
from workloads.operators.dedup import Dedup
from workloads.operators.group_agg import GroupAgg
from workloads.operators.interval_join import IntervalJoin
from workloads.operators.regular_join import RegularJoin
from workloads.operators.session_window import SessionWindow
from workloads.operators.sliding_window import SlidingWindow
from workloads.operators.topn import TopN
from workloads.operators.tumbling_window import TumblingWindow

#: The emulated kinds: every one of ``workloads.spec.OPERATOR_KINDS``.
OPERATOR_CLASSES: dict[str, type[EmulatedOperator]] = {
    "dedup": Dedup,
    "regular_join": RegularJoin,
    "tumbling_window": TumblingWindow,
    "sliding_window": SlidingWindow,
    "group_agg": GroupAgg,
    "interval_join": IntervalJoin,
    "topn": TopN,
    "session_window": SessionWindow,
}


class UnsupportedOperator(ValueError):
    """An operator kind or lane that cannot run an ``[operator]`` spec (yet)."""


def check_supported(kind: str) -> None:
    """Refuse, with a message naming it, an operator kind that has no emulation."""
    if kind not in OPERATOR_CLASSES:
        raise UnsupportedOperator(
            f"operator kind '{kind}' is not emulated yet; emulated kinds: "
            f"{', '.join(OPERATOR_CLASSES)}")


def make_operator(op: Any, out_of_orderness_ms: int, retention: bool,
                  ttl_ms: int | None = None) -> EmulatedOperator:
    """An operator of ``op.kind`` (a ``workloads.spec.OperatorSpec``) for a job whose state
    TTL is ``ttl_ms`` (None: the reference run without TTL)."""
    check_supported(op.kind)
    operator = OPERATOR_CLASSES[op.kind](op, out_of_orderness_ms, retention)
    operator.ttl_ms = ttl_ms
    return operator
