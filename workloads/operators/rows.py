"""Rows as state values: Nexmark bids and auctions packed as fixed-width bytes.

Flink SQL stores rows as ``BinaryRowData`` (8 bytes per fixed-width field plus a header and
null bits); statebench stores the fields an operator keeps, big-endian, 8 bytes each (4 for the
category), so a bid row is 32 bytes and an auction row 44: the same order of size, not the same
bytes (the flink-sql lane's own serializer makes the difference; see the README notes).
"""

from __future__ import annotations

import struct

BID_ROW = struct.Struct(">qqqq")  # auction, bidder, price, ts
AUCTION_ROW = struct.Struct(">qqqiqq")  # id, seller, initial price, category, expires, ts


def bid_row(auction: int, bidder: int, price: int, ts: int) -> bytes:
    return BID_ROW.pack(auction, bidder, price, ts)


def auction_row(auction: int, seller: int, price: int, category: int, expires: int,
                ts: int) -> bytes:
    return AUCTION_ROW.pack(auction, seller, price, category, expires, ts)
