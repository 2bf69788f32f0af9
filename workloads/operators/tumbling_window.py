"""``tumbling_window``: a keyed event-time tumbling window with an incremental aggregate
(Nexmark q7's ``MAX(price)`` per 10 s window, keyed by auction as its local phase; q5's counts).

Follows ``WindowOperator`` with ``TumblingEventTimeWindows``, ``EventTimeTrigger`` and an
``AggregateFunction`` (``HeapAggregatingState``/``RocksDBAggregatingState``), allowed lateness
0. Namespaces are emulated: the window state is ``MapState<Long, Long>`` ``window-contents``
keyed by the window's end, so each (key, window) is one map entry with its own TTL - the same
entries and TTL unit as Flink's (key, namespace) rows (module notes of ``workloads.operators``).
Per bid: the window ``[ts - ts % size, +size)``; dropped if late (``maxTimestamp <=
watermark``); ``get`` + ``put`` of the accumulator (``add`` of aggregating state); the trigger
registers an event-time timer at ``maxTimestamp = end - 1`` and ``registerCleanupTimer``
registers the same time again (a no-op, the timer queue is a set). When the timer fires:
``get`` (emit ``+I key, end, value`` if present) and ``remove`` (``clearAllState``), the timer
entry removed.

No state TTL: Flink's windows never apply one. ``WindowOperator`` registers the
``windowStateDescriptor`` its ``WindowedStream`` built (no ``enableTimeToLive``), and Flink
SQL's window aggregate (``AbstractSyncStateWindowAggProcessor.open``: ``new
ValueStateDescriptor<>("window-aggs", accSerializer)``) and legacy group window
(``table.runtime...groupwindow.operator.WindowOperator``) never read ``table.exec.state.ttl``;
window state is cleaned by the firing timer only. So ``window-contents`` is declared without
TTL: a TTL cannot change a window's output here, as it cannot in Flink (docs/operators.md,
"Which operators Flink's state TTL reaches").

Left out: window offsets and time zones, allowed lateness and late-data side outputs,
evictors, holistic (``ProcessWindowFunction`` over a ``ListState``) windows, merging windows
(``session_window``), and Flink SQL's slicing window aggregate (``SlicingWindowOperator``, which
shares slices between windows).
"""

from __future__ import annotations

from typing import Any

import backends
from workloads.operators.aggregates import accumulator
from workloads.operators.base import EmulatedOperator, Row, StateDecl, View


class TumblingWindow(EmulatedOperator):
    STATES = (StateDecl("window-contents", "map", backends.Types.LONG(), backends.Types.LONG(),
                     ttl=False),)  # Flink's windows apply no state TTL (docstring)
    USES_TIMERS = True

    def __init__(self, params: Any, out_of_orderness_ms: int, retention: bool) -> None:
        super().__init__(params, out_of_orderness_ms, retention)
        self.add = accumulator(params.agg)

    def bind_views(self, views: dict[str, View]) -> None:
        self.contents = views["window-contents"]

    def window_ends(self, ts: int) -> list[int]:
        size = self.params.window_ms
        return [ts - ts % size + size]

    def process(self, row: Row) -> None:
        ts, price = row[1], row[4]
        assert self.timers is not None
        for end in self.window_ends(ts):
            if end - 1 <= self.watermark:
                continue  # isWindowLate: the window has fired and been cleared
            acc = self.contents.get(end)
            self.contents.put(end, self.add(acc, price))
            self.timers.register(self.key, end - 1, end)  # EventTimeTrigger.onElement
            self.timers.register(self.key, end - 1, end)  # registerCleanupTimer: same time

    def on_timer(self, ts: int, key: Any, end: int) -> None:
        value = self.contents.get(end)
        if value is not None:
            self.emit("+I", key, end, value)
        self.contents.remove(end)
