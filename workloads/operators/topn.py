"""``topn``: Flink SQL's Top-N over append-only input (Nexmark q19: the ``top_n`` highest bids
per auction, ``ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) <= N``, without the
rank number in the output).

Follows ``AppendOnlyTopNFunction`` (``AppendOnlyTopNHelper.processElementWithoutRowNumber``):
``MapState<sort key, List<row>>`` ``data-state-with-append`` per partition key (here price ->
the bids at that price, packed bytes), with the state TTL, and a heap ``TopNBuffer`` per key in
an LRU cache of ``10_000 // top_n`` keys (``table.exec.rank.topn-cache-size``) whose entries
expire ``ttl`` after they were loaded (Guava's ``expireAfterWrite``; here on the TTL clock). Per
bid: on a cache miss, read the whole map state (one iteration) into a new buffer; if the price
ranks inside the buffer's range (empty buffer, better than the worst, or fewer than N rows),
add the row to the buffer and ``put`` its price's list; when the buffer then holds more than N
rows, drop the worst row: ``remove`` its price's entry (its last row) or ``put`` the shortened
list, and emit ``-D`` for it unless it is the new row; emit ``+I`` for the new row. With a TTL,
expired map entries make a reloaded buffer forget rows (a retracted row comes back as
``+I``; a row that should have been pushed out is not) - the results a TTL changes; a cached
buffer can still hold rows whose state expired, as in Flink. The TTL is Flink's:
``AppendOnlyTopNFunction.open`` enables ``AbstractTopNFunction``'s ``ttlConfig`` on
``data-state-with-append``.

Left out: the rank-number variant, offsets and variable rank ends, ``RetractableTopNFunction``
(retracting input), ``UpdatableTopNFunction`` and ``FastTop1Function``, and the cache's
processing-time clock (its expiry follows the TTL clock here).

Against the real query (the flink-sql lane's q19, ``SqlJob.query``; the planner makes it
``Rank(strategy=[AppendFastStrategy])``, ``AppendOnlyTopNFunction``): without a TTL the rows are
this emulation's, row for row; with one, the real job changes about the share of rows this
emulation changes (``tests/flink/test_sql_kinds.py``). The cache is the one place Flink's Top-N
reads the wall clock whatever its state's TTL clock is: ``AppendOnlyTopNHelper`` builds it with
``CacheBuilder.expireAfterWrite(ttl)``, on Guava's ticker (``System.nanoTime``), not the
backend's TtlTimeProvider, so the real job's cache follows the records' time only while the job
keeps up with its paced clock at speedup 1.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import backends
from workloads.operators.base import EmulatedOperator, Row, StateDecl, View
from workloads.operators.rows import BID_ROW

DATA_STATE = "data-state-with-append"
#: Flink's ``table.exec.rank.topn-cache-size`` default.
TOPN_CACHE_SIZE = 10_000


class TopN(EmulatedOperator):
    STATES = (StateDecl(DATA_STATE, "map", backends.Types.BYTES(), backends.Types.LONG()),)

    def __init__(self, params: Any, out_of_orderness_ms: int, retention: bool) -> None:
        super().__init__(params, out_of_orderness_ms, retention)
        self.n = params.top_n
        self.capacity = max(1, TOPN_CACHE_SIZE // self.n)
        self.now = 0
        self.cache: OrderedDict[Any, tuple[dict[int, list[bytes]], int]] = OrderedDict()

    def bind_views(self, views: dict[str, View]) -> None:
        self.data = views[DATA_STATE]

    def advance_watermark(self, ts: int) -> None:
        self.now = ts  # the TTL clock the cache expires on
        super().advance_watermark(ts)

    def _buffer(self) -> dict[int, list[bytes]]:
        """The key's TopNBuffer: from the cache, or loaded from the map state on a miss."""
        cached = self.cache.get(self.key)
        if cached is not None and (self.ttl_ms is None or cached[1] + self.ttl_ms > self.now):
            self.cache.move_to_end(self.key)
            return cached[0]
        buffer = {price: _split(rows) for price, rows in self.data.items()}
        self.cache[self.key] = (buffer, self.now)
        self.cache.move_to_end(self.key)
        while len(self.cache) > self.capacity:
            self.cache.popitem(last=False)
        return buffer

    def process(self, row: Row) -> None:
        _, ts, bidder, auction, price, _, _ = row
        buffer = self._buffer()
        count = sum(len(rows) for rows in buffer.values())
        if buffer and price <= min(buffer) and count >= self.n:
            return  # not in the buffer's range (ties rank after the rows already there)
        record = BID_ROW.pack(auction, bidder, price, ts)
        buffer.setdefault(price, []).append(record)
        self.data.put(price, b"".join(buffer[price]))
        if count + 1 > self.n:
            worst = min(buffer)
            rows = buffer[worst]
            last = rows[-1]
            size = len(rows)
            if size <= 1:
                del buffer[worst]
                self.data.remove(worst)
            else:
                rows.pop()
                self.data.put(worst, b"".join(rows))
            if last == record:
                return
            self.emit("-D", *BID_ROW.unpack(last))
        self.emit("+I", auction, bidder, price, ts)


def _split(packed: bytes) -> list[bytes]:
    size = BID_ROW.size
    return [packed[i:i + size] for i in range(0, len(packed), size)]
