"""``sliding_window``: a keyed event-time sliding (hopping) window with an incremental aggregate
(Nexmark q5's ``COUNT(*)`` per auction over 10 s windows sliding by 2 s).

Follows ``WindowOperator`` with ``SlidingEventTimeWindows``: as ``tumbling_window``
(``workloads.operators.tumbling_window``: map entry per (key, window), timers as state), but a
bid belongs to ``window_ms / slide_ms`` windows - ``assignWindows`` lists them from the latest
start back (``start = ts - ts % slide``, then ``start - slide``, ... while ``start > ts -
size``) - and each of them gets its ``get`` + ``put`` and its two timer registrations, in that
order. Left out: as ``tumbling_window``, and the slicing (pane sharing) Flink SQL's window
aggregate does.
"""

from __future__ import annotations

from workloads.operators.tumbling_window import TumblingWindow


class SlidingWindow(TumblingWindow):
    def window_ends(self, ts: int) -> list[int]:
        size, slide = self.params.window_ms, self.params.slide_ms
        start = ts - ts % slide
        ends = []
        while start > ts - size:
            ends.append(start + size)
            start -= slide
        return ends
