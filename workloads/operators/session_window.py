"""``session_window``: a keyed event-time session window with an incremental aggregate (Nexmark
q11: bids per bidder session, ``SESSION(dateTime, gap)``).

Follows ``WindowOperator`` with ``EventTimeSessionWindows`` (a ``MergingWindowAssigner``),
``EventTimeTrigger`` and an ``AggregateFunction``, allowed lateness 0. States: the window
contents (``window-contents``: ``MapState<state window, accumulator>``, the namespace emulated
as the map key, 16 bytes: the state window's start and end), the ``merging-window-set``
(``MergingWindowSet``'s ``ListState<Tuple2<window, state window>>`` per key, here one value of
packed tuples) and the event-time timers (namespace: the window's start).

Per bid, as ``WindowOperator.processElement``: read the merging window set; add the window
``[ts, ts + gap)``: windows that intersect it (``TimeWindow.mergeWindows``, bounds inclusive)
merge into their cover, whose state window is the first merged pre-existing window's; for a
merge, ``EventTimeTrigger.onMerge`` registers a timer at the cover's end - 1, the merged
windows' timers are deleted (trigger ``clear`` and ``deleteCleanupTimer``), and
``mergeNamespaces`` moves the other state windows' accumulators into the chosen one (``get`` +
``remove`` each, then ``get`` + ``put`` of the target); then the bid's accumulator ``get`` +
``put`` on the session's state window, the trigger's and the cleanup timer (the same time), and
``persist``: ``update`` of the set when it changed. A timer reads the set, finds the window's
state window (none: a stale timer, ignored), ``get``s and emits ``+I key, start, end, value``,
``remove``s the contents, and retires the window (``update`` of the set, ``clear`` when it is
empty). No state carries a TTL: Flink's windows never apply one (``WindowOperator``'s
descriptors, and SQL's session window aggregate ``UnsliceSyncStateWindowAggProcessor``, whose
``window-aggs`` state ``AbstractSyncStateWindowAggProcessor.open`` creates without
``enableTimeToLive``; see ``tumbling_window``), so a TTL cannot change a session's output.

Left out: which pre-existing window's state a merge keeps (Flink takes the first of a hash
set; here the earliest), late-element handling (each task's input is in time order), allowed
lateness, and the SQL session window aggregate's own operator.

What Flink SQL runs for q11 (the ``SESSION`` window table function with ``PARTITION BY``, the
flink-sql lane's ``SqlJob.query``): ``WindowAggOperator`` with
``UnsliceSyncStateWindowAggProcessor`` and ``UnsliceAssigners.SessionUnsliceAssigner``, which
assigns through the group window's ``SessionWindowAssigner`` (``[ts, ts + gap)``) and merges
with a ``MergingWindowSet`` (``MergingWindowProcessFunction``), as here; its ``window-aggs``
state has no TTL. The real job's rows are this emulation's, row for row, with and without a TTL
(``tests/flink/test_sql_kinds.py``).
"""

from __future__ import annotations

import struct
from typing import Any

import backends
from workloads.operators.aggregates import accumulator, merger
from workloads.operators.base import EmulatedOperator, Row, StateDecl, View

CONTENTS, WINDOW_SET = "window-contents", "merging-window-set"
_WINDOW = struct.Struct(">qq")
_MAPPING = struct.Struct(">qqqq")
Window = tuple[int, int]


class SessionWindow(EmulatedOperator):
    STATES = (
        StateDecl(CONTENTS, "map", backends.Types.LONG(), backends.Types.BYTES(), ttl=False),
        StateDecl(WINDOW_SET, "value", backends.Types.BYTES(), ttl=False),
    )
    USES_TIMERS = True

    def __init__(self, params: Any, out_of_orderness_ms: int, retention: bool) -> None:
        super().__init__(params, out_of_orderness_ms, retention)
        self.add = accumulator(params.agg)
        self.merge = merger(params.agg)

    def bind_views(self, views: dict[str, View]) -> None:
        self.contents, self.windows = views[CONTENTS], views[WINDOW_SET]

    def _mapping(self) -> dict[Window, Window]:
        packed = self.windows.value() or b""
        out = {}
        for i in range(0, len(packed), _MAPPING.size):
            s, e, ss, se = _MAPPING.unpack_from(packed, i)
            out[(s, e)] = (ss, se)
        return out

    def _persist(self, mapping: dict[Window, Window]) -> None:
        if mapping:
            self.windows.update(b"".join(_MAPPING.pack(*w, *mapping[w]) for w in sorted(mapping)))
        else:
            self.windows.clear()  # ListState.update(empty list) clears it

    def process(self, row: Row) -> None:
        ts, price = row[1], row[4]
        assert self.timers is not None
        mapping = self._mapping()
        initial = dict(mapping)
        new = (ts, ts + self.params.gap_ms)
        actual, merged_new = new, False
        for group in merge_groups([*mapping, new]):
            cover = (min(w[0] for w in group), max(w[1] for w in group))
            if new in group:
                merged_new, actual = True, cover
            existing = [w for w in group if w in mapping]
            state_window = mapping[existing[0]]
            merged_states = [mapping.pop(w) for w in existing]
            mapping[cover] = state_window
            merged_states.remove(state_window)
            if not (cover in group and len(group) == 1):
                self._on_merge(cover, group, state_window, merged_states)
        if not merged_new:
            mapping[new] = new
        state_window = mapping[actual]
        target = _WINDOW.pack(*state_window)
        acc = self.contents.get(target)
        self.contents.put(target, self.add(acc, price))
        self.timers.register(self.key, actual[1] - 1, actual[0])  # EventTimeTrigger.onElement
        self.timers.register(self.key, actual[1] - 1, actual[0])  # registerCleanupTimer
        if mapping != initial:
            self._persist(mapping)

    def _on_merge(self, cover: Window, group: list[Window], state_window: Window,
                  merged_states: list[Window]) -> None:
        assert self.timers is not None
        if cover[1] - 1 > self.watermark:  # EventTimeTrigger.onMerge
            self.timers.register(self.key, cover[1] - 1, cover[0])
        for w in group:  # triggerContext.clear() and deleteCleanupTimer of each merged window
            self.timers.delete(self.key, w[1] - 1, w[0])
            self.timers.delete(self.key, w[1] - 1, w[0])
        merged = None
        for source in merged_states:  # mergeNamespaces(target, sources)
            key = _WINDOW.pack(*source)
            acc = self.contents.get(key)
            if acc is not None:
                self.contents.remove(key)
                merged = acc if merged is None else self.merge(merged, acc)
        if merged is not None:
            target = _WINDOW.pack(*state_window)
            current = self.contents.get(target)
            self.contents.put(target, merged if current is None else self.merge(current, merged))

    def on_timer(self, ts: int, key: Any, start: int) -> None:
        window = (start, ts + 1)
        mapping = self._mapping()
        state_window = mapping.get(window)
        if state_window is None:
            return  # a timer of a window merged away
        packed = _WINDOW.pack(*state_window)
        value = self.contents.get(packed)
        if value is not None:
            self.emit("+I", key, start, ts + 1, value)
        self.contents.remove(packed)
        del mapping[window]
        self._persist(mapping)


def merge_groups(windows: list[Window]) -> list[list[Window]]:
    """``TimeWindow.mergeWindows``: groups of more than one intersecting window, by start
    (a group is a set: a new window equal to an existing one merges nothing)."""
    groups: list[list[Window]] = []
    cover: Window | None = None
    for w in sorted(set(windows)):
        if cover is not None and w[0] <= cover[1] and w[1] >= cover[0]:
            groups[-1].append(w)
            cover = (cover[0], max(cover[1], w[1]))
        else:
            groups.append([w])
            cover = w
    return [g for g in groups if len(g) > 1]

