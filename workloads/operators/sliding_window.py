"""``sliding_window``: a keyed event-time sliding (hopping) window with an incremental aggregate
(Nexmark q5's ``COUNT(*)`` per auction over 10 s windows sliding by 2 s).

Follows ``WindowOperator`` with ``SlidingEventTimeWindows``: as ``tumbling_window``
(``workloads.operators.tumbling_window``: map entry per (key, window), timers as state), but a
bid belongs to ``window_ms / slide_ms`` windows - ``assignWindows`` lists them from the latest
start back (``start = ts - ts % slide``, then ``start - slide``, ... while ``start > ts -
size``) - and each of them gets its ``get`` + ``put`` and its two timer registrations, in that
order. Left out: as ``tumbling_window``, and the slicing (pane sharing) Flink SQL's window
aggregate does.

What Flink SQL runs for the same query (q5's ``HOP`` window table function, the flink-sql lane's
``SqlJob.query``): ``WindowAggOperator`` with ``SliceSharedSyncStateWindowAggProcessor`` and
``SliceAssigners.HoppingSliceAssigner``. A bid updates one accumulator, its slice's (``slide_ms``
wide, ``window-aggs`` keyed by the slice end), with one timer per key and slice end; a firing
window merges its slices (``mergeSlices``), emits, clears the slice no later window needs
(``expiredSlices``) and registers the next window's timer (``nextTriggerWindow``). Same rows
(``tests/flink/test_sql_kinds.py`` pins them row for row on HashMap and RocksDB); about
``slide_ms / window_ms`` of the entries (the report names it: ``workloads.report.real_engine``'s
sliding-window cause). No state TTL on either path (``AbstractSyncStateWindowAggProcessor.open``
registers ``window-aggs`` without ``enableTimeToLive``): a TTL changes no row, in the real job
as here (pinned by the same test).
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
