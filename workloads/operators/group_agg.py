"""``group_agg``: Flink SQL's unbounded group aggregation (Nexmark q4's inner
``MAX(price) GROUP BY auction``; q15/q16-style counts).

Follows ``GroupAggFunction`` over append-only input: one ``ValueState<RowData>`` ``accState``
per group with the state TTL. Per record: ``value()``; none -> a new accumulator (first row);
accumulate; ``update``; emit ``+I`` for a first row, else ``-U`` old, ``+U`` new - skipped when
the value did not change and no state retention is configured (with a TTL Flink emits the
update anyway, to keep downstream state alive). An expired accumulator restarts the aggregate:
``+I`` with a value that forgot the earlier rows - the result a TTL changes. The TTL is
Flink's: ``GroupAggFunction.open`` enables it on ``accState`` when a retention time is set.

``group_by``: ``auction`` or ``bidder`` aggregate bid prices; ``category`` aggregates auction
initial prices (Nexmark's bids carry no category; q4 gets it from a join, left out here).

Left out: the record counter and retraction of retracting input, distinct aggregates
(``MapView`` state), mini-batch and two-phase (local/global) aggregation, and the join and
outer ``AVG`` of q4.
"""

from __future__ import annotations

from typing import Any

import backends
from workloads.operators.aggregates import accumulator
from workloads.operators.base import EmulatedOperator, Row, StateDecl, View


class GroupAgg(EmulatedOperator):
    STATES = (StateDecl("accState", "value", backends.Types.LONG()),)

    def __init__(self, params: Any, out_of_orderness_ms: int, retention: bool) -> None:
        super().__init__(params, out_of_orderness_ms, retention)
        self.add = accumulator(params.agg)

    def bind_views(self, views: dict[str, View]) -> None:
        self.acc = views["accState"]

    def process(self, row: Row) -> None:
        before = self.acc.value()
        after = self.add(before, row[4])
        self.acc.update(after)
        if before is None:
            self.emit("+I", self.key, after)
        elif after != before or self.retention:
            self.emit("-U", self.key, before)
            self.emit("+U", self.key, after)
