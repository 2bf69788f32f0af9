"""The Nexmark generator: schema, Nexmark's model, determinism and slicing."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from workloads.nexmark import (
    AUCTION,
    BID,
    FIRST_AUCTION_ID,
    FIRST_PERSON_ID,
    NEXMARK_SCHEMA,
    PERSON,
    NexmarkConfig,
    generate_nexmark,
    last_base0_auction_id,
    last_base0_person_id,
    nexmark_batches,
    nexmark_range,
)


def _cols(table: pa.Table) -> dict[str, np.ndarray]:
    return {name: table.column(name).to_numpy() for name in table.schema.names}


def test_schema_and_event_mix() -> None:
    t = generate_nexmark(NexmarkConfig(seed=1, events=5000))
    assert t.schema.equals(NEXMARK_SCHEMA)
    kinds = _cols(t)["event_type"]
    # 1:3:46 per block of 50 events, by position
    assert kinds[:50].tolist() == [PERSON] + [AUCTION] * 3 + [BID] * 46
    assert np.bincount(kinds).tolist() == [100, 300, 4600]


def test_ids_follow_nexmark_arithmetic() -> None:
    cfg = NexmarkConfig(seed=2, events=500)
    c = _cols(generate_nexmark(cfg))
    persons = c["event_type"] == PERSON
    auctions = c["event_type"] == AUCTION
    # persons and auctions number themselves from Nexmark's first ids, in order
    assert c["person_id"][persons].tolist() == list(range(FIRST_PERSON_ID, FIRST_PERSON_ID + 10))
    assert c["auction_id"][auctions].tolist() == list(
        range(FIRST_AUCTION_ID, FIRST_AUCTION_ID + 30))
    # hand-worked: event 0 is person 0, events 1-3 auctions 0-2, event 50 person 1 and
    # event 49 (a bid) sees auction 2 as the newest, event 50 still auction 2
    g = np.array([0, 1, 3, 4, 49, 50, 51, 53])
    assert last_base0_person_id(cfg, g).tolist() == [0, 0, 0, 0, 0, 1, 1, 1]
    assert last_base0_auction_id(cfg, g).tolist() == [-1, 0, 2, 2, 2, 2, 3, 5]
    # the sides carry -1 / 0 where they do not apply
    assert (c["auction_id"][persons] == -1).all() and (c["price"][persons] == 0).all()
    assert (c["category"][~auctions] == -1).all() and (c["expires_ms"][~auctions] == -1).all()
    assert (c["city"][~persons] == -1).all()
    assert set(c["city"][persons].tolist()) <= set(range(10))
    assert set(c["category"][auctions].tolist()) <= set(range(10, 15))


def test_references_stay_near_the_frontier() -> None:
    cfg = NexmarkConfig(seed=3, events=20_000)
    c = _cols(generate_nexmark(cfg))
    g = np.arange(cfg.events)
    bids = c["event_type"] == BID
    newest_auction = last_base0_auction_id(cfg, g) + FIRST_AUCTION_ID
    newest_person = last_base0_person_id(cfg, g) + FIRST_PERSON_ID
    # a bid's auction: at most in_flight_auctions behind the newest and 10 ahead, or the hot one
    lag = newest_auction[bids] - c["auction_id"][bids]
    assert lag.max() <= 100 + 100 and lag.min() >= -10
    assert (c["person_id"][bids] <= newest_person[bids] + 10).all()
    # price: 100 .. 10^8
    assert c["price"][bids].min() >= 100 and c["price"][bids].max() <= 10**8


def test_hot_ratios_skew_auctions_and_bidders() -> None:
    base = dict(seed=4, events=50_000)
    skewed = _cols(generate_nexmark(NexmarkConfig(**base, hot_auction_ratio=10)))
    flat = _cols(generate_nexmark(NexmarkConfig(**base, hot_auction_ratio=1,
                                                hot_bidder_ratio=1)))

    def top_share(c: dict[str, np.ndarray], column: str) -> float:
        values = c[column][c["event_type"] == BID]
        return np.unique(values, return_counts=True)[1].max() / len(values)

    # ratio 10: 90% of bids go to a hot auction (one per block of 100 auctions, 3000 auctions)
    assert top_share(skewed, "auction_id") > 5 * top_share(flat, "auction_id")
    assert top_share(skewed, "person_id") > 5 * top_share(flat, "person_id")


def test_time_rate_and_out_of_orderness() -> None:
    cfg = NexmarkConfig(seed=5, events=10_000, events_per_s=2000, out_of_orderness_ms=30,
                        start_ms=1000)
    ts = _cols(generate_nexmark(cfg))["ts"]
    arrival = 1000 + np.arange(10_000) * 1000 // 2000
    back = arrival - ts
    assert back.min() == 0 and back.max() == 30  # jittered back within the bound
    assert ts.min() >= 1000 and cfg.end_ms() == 1000 + 9999 // 2 + 1


def test_auction_durations() -> None:
    nexmark_rule = NexmarkConfig(seed=6, events=10_000)
    # 100 in-flight auctions take 100 * 50 / 3 = 1666 events = 166 ms at 10^4 events/s
    assert nexmark_rule.duration_range_ms() == (1, 332)
    ranged = NexmarkConfig(seed=6, events=10_000, auction_duration_ms=(500, 700))
    c = _cols(generate_nexmark(ranged))
    a = c["event_type"] == AUCTION
    d = c["expires_ms"][a] - c["ts"][a]
    assert d.min() >= 500 and d.max() <= 700 and len(np.unique(d)) > 50


def test_deterministic_and_sliceable() -> None:
    cfg = NexmarkConfig(seed=7, events=30_000, out_of_orderness_ms=20)
    whole = generate_nexmark(cfg)
    assert generate_nexmark(cfg).equals(whole)
    assert nexmark_range(cfg, 10_001, 20_002).equals(whole.slice(10_001, 10_001))
    batched = pa.Table.from_batches(list(nexmark_batches(cfg, batch_size=777)))
    assert batched.equals(whole)
    other = generate_nexmark(NexmarkConfig(seed=8, events=30_000, out_of_orderness_ms=20))
    assert not other.equals(whole)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"events": 0}, "events"),
        ({"events_per_s": 0}, "events_per_s"),
        ({"hot_auction_ratio": 0}, "hot_auction_ratio"),
        ({"out_of_orderness_ms": -1}, "out_of_orderness_ms"),
        ({"auction_duration_ms": (10, 5)}, "auction_duration_ms"),
        ({"seed": 1.5}, "seed"),
    ],
)
def test_bad_config_names_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=f"nexmark.{field}:"):
        NexmarkConfig(**kwargs)


def test_bad_slice_is_refused() -> None:
    with pytest.raises(ValueError, match="first"):
        list(nexmark_batches(NexmarkConfig(events=10), 5, 11))
