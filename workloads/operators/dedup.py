"""``dedup``: Flink SQL's deduplication keeping the last row on event time (Nexmark q18:
``ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY dateTime DESC) = 1``).

Follows ``RowTimeDeduplicateFunction`` (keepLastRow, ``DeduplicateFunctionHelper.
deduplicateOnRowTime``) with ``generateUpdateBefore``: one ``ValueState<RowData>``
``deduplicate-state`` per (bidder, auction) with the state TTL. Per bid: ``value()``; no
previous row -> emit ``+I`` and ``update``; a previous row with rowtime <= this one -> emit
``-U`` previous, ``+U`` this, and ``update``; an older row is dropped (never here: each task's
input is in time order). A row whose state expired is emitted as ``+I`` again - the duplicate
a TTL lets through. The TTL is Flink's: ``SyncStateDeduplicateFunctionBase.open`` calls
``enableTimeToLive(StateConfigUtil.createTtlConfig(stateRetentionTime))`` on that descriptor.

Left out: mini-batch deduplication (``MiniBatchRowTimeDeduplicateFunction``), the first-row
variant, and the rank-number column.
"""

from __future__ import annotations

import backends
from workloads.operators.base import EmulatedOperator, Row, StateDecl, View
from workloads.operators.rows import BID_ROW


class Dedup(EmulatedOperator):
    STATES = (StateDecl("deduplicate-state", "value", backends.Types.BYTES()),)

    def bind_views(self, views: dict[str, View]) -> None:
        self.state = views["deduplicate-state"]

    def process(self, row: Row) -> None:
        _, ts, bidder, auction, price, _, _ = row
        current = BID_ROW.pack(auction, bidder, price, ts)
        previous = self.state.value()
        if previous is None:
            self.emit("+I", auction, bidder, price, ts)
        else:
            before = BID_ROW.unpack(previous)
            if ts < before[3]:
                return  # keepLastRow: an older row than the one kept changes nothing
            self.emit("-U", *before)
            self.emit("+U", auction, bidder, price, ts)
        self.state.update(current)
