"""``regular_join``: Flink SQL's inner equi-join of bids and auctions on the auction id
(Nexmark q20: ``bid JOIN auction ON bid.auction = auction.id WHERE auction.category = 10``).

Follows ``StreamingJoinOperator`` (inner join, append-only inputs) with
``JoinRecordStateViews.InputSideHasNoUniqueKey`` on both sides (Nexmark's source tables declare
no primary key): ``MapState<RowData, Integer>`` ``left-records`` (bids) and ``right-records``
(auctions), record -> count, with the state TTL. Per record: iterate the other side's entries
(``AssociatedRecords.of``) and emit one ``+I`` joined row per stored record and count, then
``addRecord``: ``get(record)`` and ``put(record, count + 1)``. The category filter runs before
the join (the planner pushes it into the auction input), so filtered auctions never reach it.
A bid arriving after its auction's record expired loses its match - the join result a TTL
changes; bids are kept for the whole TTL (the left side is q20's large state). The TTL is
Flink's: ``JoinRecordStateViews.create`` builds every view's descriptor with
``StateConfigUtil.createTtlConfig(retentionTime)``.

Left out: outer joins and their association counts (``OuterJoinRecordStateViews``),
retraction input, mini-batch joins, state-stale error handling, and the planner's projection of
unused columns (rows here keep the fields of ``workloads.operators.rows``).
"""

from __future__ import annotations

import backends
from workloads.nexmark import BID
from workloads.operators.base import EmulatedOperator, Row, StateDecl, View
from workloads.operators.rows import AUCTION_ROW, BID_ROW


class RegularJoin(EmulatedOperator):
    STATES = (
        StateDecl("left-records", "map", backends.Types.INT(), backends.Types.BYTES()),
        StateDecl("right-records", "map", backends.Types.INT(), backends.Types.BYTES()),
    )

    def bind_views(self, views: dict[str, View]) -> None:
        self.left, self.right = views["left-records"], views["right-records"]

    def process(self, row: Row) -> None:
        kind, ts, person, auction, price, category, expires = row
        if kind == BID:
            record = BID_ROW.pack(auction, person, price, ts)
            for other, count in self.right.items():
                a = AUCTION_ROW.unpack(other)
                for _ in range(count):
                    self.emit("+I", auction, person, price, ts, a[1], a[3], a[5])
            own = self.left
        else:
            record = AUCTION_ROW.pack(auction, person, price, category, expires, ts)
            for other, count in self.left.items():
                b = BID_ROW.unpack(other)
                for _ in range(count):
                    self.emit("+I", auction, b[1], b[2], b[3], person, category, ts)
            own = self.right
        count = own.get(record)
        own.put(record, 1 if count is None else count + 1)
