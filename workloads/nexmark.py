"""Nexmark-shaped input: a seeded person / auction / bid stream, as one Arrow table.

The model is Nexmark's (``nexmark/nexmark``'s Flink generator: ``GeneratorConfig``,
``PersonGenerator``, ``AuctionGenerator``, ``BidGenerator``), vectorised:

* **Event mix.** Global event ``g`` (0-based) is a person when ``g % 50 < 1``, an auction when
  ``g % 50 < 4`` and a bid otherwise: Nexmark's 1:3:46 proportions (``person_proportion``,
  ``auction_proportion``, ``bid_proportion``).
* **Ids.** A person event's id is ``1000 + (number of persons before it)``, an auction's
  ``1000 + (number of auctions before it)`` (Nexmark's ``FIRST_PERSON_ID``/``FIRST_AUCTION_ID``
  and ``lastBase0PersonId``/``lastBase0AuctionId``), so ids grow with the run.
* **Sellers** (auction ``person_id``): with probability ``1 - 1/hot_seller_ratio`` a hot seller,
  the first person of the latest block of 100 (Nexmark's ``HOT_SELLER_RATIO``), else one of the
  ``num_active_people`` most recent persons or up to 10 ids ahead (``PERSON_ID_LEAD``).
* **Bids** reference, with probability ``1 - 1/hot_auction_ratio``, the hot auction (the first
  of the latest block of 100 auctions), else one of the ``in_flight_auctions`` most recent
  auctions or up to 10 ahead (``AUCTION_ID_LEAD``); bidders likewise, hot with probability
  ``1 - 1/hot_bidder_ratio`` (the latest block of 100 persons' first id + 1).
* **Prices** (bid price, auction initial price): ``round(10 ** (u * 6) * 100)``, u uniform in
  [0, 1) (Nexmark's ``PriceGenerator``): 100 .. 10^8, log-uniform.
* **Categories** ``10 + uniform(0..num_categories-1)`` (``FIRST_CATEGORY_ID = 10``, 5 of them);
  **cities** uniform over 10 ids (Nexmark's ten US cities, as their index).
* **Auction durations**: ``expires_ms = ts + d``. By default Nexmark's rule:
  ``d = 1 + uniform(0 .. 2 * horizon - 1)`` ms, where ``horizon`` is the event time in which
  ``in_flight_auctions`` auctions are created (so about that many auctions are open at once);
  ``auction_duration_ms = (lo, hi)`` draws ``d`` uniformly in ``lo..hi`` instead.
* **Time.** Event ``g`` arrives at ``start_ms + floor(g * 1000 / events_per_s)`` (the rate taken
  as the nearest fraction p/q with q <= 1000, exact integer arithmetic, as
  ``workloads.generator``); ``ts`` is that arrival time jittered back by a uniform
  ``0..out_of_orderness_ms`` (clamped at ``start_ms``). Rows stay in arrival (``g``) order, so
  ``ts`` is out of order by at most ``out_of_orderness_ms``.

Determinism: every random column has its own stream (``SeedSequence(seed, spawn_key=(c,))``)
that consumes exactly one double per event, used or not, so event ``g`` depends on ``seed`` and
``g`` only: :func:`nexmark_range` generates any slice ``[first, stop)`` by advancing each stream
``first`` steps, and a slice equals the same rows of the whole table. Same config, same table.

Schema (``NEXMARK_SCHEMA``; one row per event, in arrival order)::

    event_type  int8   0 person, 1 auction, 2 bid
    ts          int64  event time, ms
    person_id   int64  person: its id; auction: seller; bid: bidder
    auction_id  int64  auction: its id; bid: its auction; person: -1
    price       int64  bid: price; auction: initial price; person: 0
    category    int32  auction: category; else -1
    expires_ms  int64  auction: end time (ts + duration); else -1
    city        int32  person: city id (0..9); else -1

Left out of Nexmark's model: names, e-mails, credit cards, descriptions, reserve prices and the
``extra`` padding strings (no operator here reads them; row size is an operator's concern), and
Nexmark's rate shapes (square/sine) - the rate is constant.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pyarrow as pa

NEXMARK_SCHEMA = pa.schema(
    [
        pa.field("event_type", pa.int8()),
        pa.field("ts", pa.int64()),
        pa.field("person_id", pa.int64()),
        pa.field("auction_id", pa.int64()),
        pa.field("price", pa.int64()),
        pa.field("category", pa.int32()),
        pa.field("expires_ms", pa.int64()),
        pa.field("city", pa.int32()),
    ]
)

PERSON, AUCTION, BID = 0, 1, 2

# Nexmark's constants (GeneratorConfig, PersonGenerator, AuctionGenerator, BidGenerator)
FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
PERSON_ID_LEAD = 10
AUCTION_ID_LEAD = 10
HOT_BLOCK = 100  # HOT_SELLER_RATIO = HOT_AUCTION_RATIO = HOT_BIDDER_RATIO = 100 in Nexmark
NUM_CITIES = 10

#: Upper bounds that keep every derived number within int64 and a run's memory bounded.
MAX_EVENTS = 10**10
MAX_TIME_MS = 2**53
DEFAULT_BATCH_SIZE = 65536

# One random stream per column (fixed indices: changing them changes workloads).
_HOT1, _HOT2, _PICK1, _PICK2, _PRICE, _SMALL, _DURATION, _JITTER = range(8)


@dataclass(frozen=True)
class NexmarkConfig:
    """What :func:`generate_nexmark` makes; the defaults are Nexmark's (module docstring).

    The ``hot_*_ratio`` fields are Nexmark's integers: a hot pick with probability
    ``1 - 1/ratio`` (1 = never hot). ``auction_duration_ms`` is ``None`` for Nexmark's rule or an
    inclusive ``(lo, hi)`` range in ms.
    """

    seed: int = 0
    events: int = 100_000
    events_per_s: float = 10_000.0
    out_of_orderness_ms: int = 0
    hot_auction_ratio: int = 2
    hot_bidder_ratio: int = 4
    hot_seller_ratio: int = 4
    auction_duration_ms: tuple[int, int] | None = None
    start_ms: int = 0
    num_active_people: int = 1000
    in_flight_auctions: int = 100
    num_categories: int = 5
    person_proportion: int = 1
    auction_proportion: int = 3
    bid_proportion: int = 46

    def __post_init__(self) -> None:
        def need(ok: bool, name: str, what: str) -> None:
            if not ok:
                raise ValueError(f"nexmark.{name}: {what}, got {getattr(self, name)!r}")

        for name in ("seed", "events", "out_of_orderness_ms", "start_ms", "hot_auction_ratio",
                     "hot_bidder_ratio", "hot_seller_ratio", "num_active_people",
                     "in_flight_auctions", "num_categories", "person_proportion",
                     "auction_proportion", "bid_proportion"):
            value = getattr(self, name)
            need(isinstance(value, int) and not isinstance(value, bool), name, "must be an int")
        need(self.seed >= 0, "seed", "must be >= 0")
        need(1 <= self.events <= MAX_EVENTS, "events", f"must be in 1..{MAX_EVENTS}")
        rate = self.events_per_s
        need(isinstance(rate, (int, float)) and not isinstance(rate, bool)
             and math.isfinite(rate) and 0.001 <= rate <= 1e9,
             "events_per_s", "must be a number in 0.001..1e9")
        need(0 <= self.out_of_orderness_ms <= MAX_TIME_MS, "out_of_orderness_ms",
             f"must be in 0..{MAX_TIME_MS}")
        need(0 <= self.start_ms <= MAX_TIME_MS, "start_ms", f"must be in 0..{MAX_TIME_MS}")
        for name in ("hot_auction_ratio", "hot_bidder_ratio", "hot_seller_ratio",
                     "num_active_people", "in_flight_auctions", "num_categories",
                     "person_proportion", "auction_proportion", "bid_proportion"):
            need(1 <= getattr(self, name) <= 10**9, name, "must be in 1..1e9")
        d = self.auction_duration_ms
        if d is not None:
            need(isinstance(d, tuple) and len(d) == 2
                 and all(isinstance(x, int) and not isinstance(x, bool) for x in d)
                 and 1 <= d[0] <= d[1] <= MAX_TIME_MS,
                 "auction_duration_ms", f"must be None or (lo, hi) ints, 1 <= lo <= hi <= "
                 f"{MAX_TIME_MS}")
        need(self.end_ms() + self.max_duration_ms() <= 2**62, "events",
             "with this rate, start and auction durations, times must stay below 2**62 ms")

    @property
    def total_proportion(self) -> int:
        return self.person_proportion + self.auction_proportion + self.bid_proportion

    def rate_fraction(self) -> Fraction:
        """The rate as used: the nearest fraction p/q with q <= 1000 (exact arithmetic)."""
        return Fraction(self.events_per_s).limit_denominator(1000)

    def arrival_ms(self, g: np.ndarray) -> np.ndarray:
        """Arrival time of global events ``g``: ``start_ms + floor(g * 1000 / rate)``."""
        r = self.rate_fraction()
        g = np.asarray(g, dtype=np.int64)
        if g.size and int(g.max()) * 1000 * r.denominator >= 2**62:
            return self.start_ms + np.floor(g * (1000.0 * r.denominator / r.numerator)).astype(
                np.int64)
        return self.start_ms + (g * (1000 * r.denominator)) // r.numerator

    def end_ms(self) -> int:
        """One past the last arrival time: the run's event-time frame is [start_ms, end_ms)."""
        return int(self.arrival_ms(np.array([self.events - 1]))[0]) + 1

    def duration_range_ms(self) -> tuple[int, int]:
        """The inclusive range auction durations are drawn from (Nexmark's rule when None)."""
        if self.auction_duration_ms is not None:
            return self.auction_duration_ms
        events_for_auctions = self.in_flight_auctions * self.total_proportion \
            // self.auction_proportion
        r = self.rate_fraction()
        horizon = events_for_auctions * 1000 * r.denominator // r.numerator
        return 1, max(2 * horizon, 1)

    def max_duration_ms(self) -> int:
        return self.duration_range_ms()[1]


# ------------------------------------------------------------------------------------------------
# Nexmark's id arithmetic (vectorised)
# ------------------------------------------------------------------------------------------------


def event_types(cfg: NexmarkConfig, g: np.ndarray) -> np.ndarray:
    """0 person, 1 auction, 2 bid for global events ``g`` (by ``g % total_proportion``)."""
    rem = g % cfg.total_proportion
    out = np.full(len(g), BID, dtype=np.int8)
    out[rem < cfg.person_proportion + cfg.auction_proportion] = AUCTION
    out[rem < cfg.person_proportion] = PERSON
    return out


def last_base0_person_id(cfg: NexmarkConfig, g: np.ndarray) -> np.ndarray:
    """Nexmark's ``lastBase0PersonId``: the newest person id (from 0) at event ``g``."""
    epoch, offset = np.divmod(g, cfg.total_proportion)
    offset = np.minimum(offset, cfg.person_proportion - 1)
    return epoch * cfg.person_proportion + offset


def last_base0_auction_id(cfg: NexmarkConfig, g: np.ndarray) -> np.ndarray:
    """Nexmark's ``lastBase0AuctionId``: the newest auction id (from 0) at event ``g``
    (-1 before the first auction)."""
    pp, pa_ = cfg.person_proportion, cfg.auction_proportion
    epoch, offset = np.divmod(g, cfg.total_proportion)
    before = offset < pp
    epoch = np.where(before, epoch - 1, epoch)
    offset = np.where(before | (offset >= pp + pa_), pa_ - 1, offset - pp)
    return epoch * pa_ + offset


def _uniform_int(u: np.ndarray, n: np.ndarray | int) -> np.ndarray:
    """``floor(u * n)`` for u in [0, 1): a uniform int in 0..n-1 (Java's ``nextLong(n)``)."""
    return np.minimum(np.floor(u * n).astype(np.int64), np.asarray(n, dtype=np.int64) - 1)


def _next_base0_person_id(cfg: NexmarkConfig, g: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Nexmark's ``nextBase0PersonId``: one of the active persons, or up to 10 ahead."""
    num_people = last_base0_person_id(cfg, g) + 1
    active = np.minimum(num_people, cfg.num_active_people)
    return num_people - active + _uniform_int(u, active + PERSON_ID_LEAD)


def _next_base0_auction_id(cfg: NexmarkConfig, g: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Nexmark's ``nextBase0AuctionId``: one of the in-flight auctions, or up to 10 ahead."""
    max_auction = np.maximum(last_base0_auction_id(cfg, g), 0)
    min_auction = np.maximum(max_auction - cfg.in_flight_auctions, 0)
    return min_auction + _uniform_int(u, max_auction - min_auction + 1 + AUCTION_ID_LEAD)


def _hot(u: np.ndarray, ratio: int) -> np.ndarray:
    """Java's ``random.nextInt(ratio) > 0``: true with probability ``1 - 1/ratio``."""
    return _uniform_int(u, ratio) > 0


def _price(u: np.ndarray) -> np.ndarray:
    """Nexmark's ``nextPrice``: ``round(10 ** (u * 6) * 100)`` (Java's Math.round: half up)."""
    return np.floor(np.power(10.0, u * 6.0) * 100.0 + 0.5).astype(np.int64)


# ------------------------------------------------------------------------------------------------
# Generation
# ------------------------------------------------------------------------------------------------


def _streams(cfg: NexmarkConfig, first: int, n: int) -> list[np.ndarray]:
    """Each column stream's uniforms for events ``first .. first + n - 1``."""
    out = []
    for stream in range(_JITTER + 1):
        bits = np.random.PCG64(np.random.SeedSequence(cfg.seed, spawn_key=(stream,)))
        if first:
            bits.advance(first)  # one 64-bit draw per double: event g's draw is step g
        out.append(np.random.Generator(bits).random(n))
    return out


def _slice(cfg: NexmarkConfig, first: int, stop: int) -> pa.RecordBatch:
    g = np.arange(first, stop, dtype=np.int64)
    n = len(g)
    hot1, hot2, pick1, pick2, price_u, small, dur_u, jit = _streams(cfg, first, n)
    kind = event_types(cfg, g)
    is_p, is_a = kind == PERSON, kind == AUCTION

    arrival = cfg.arrival_ms(g)
    if cfg.out_of_orderness_ms:
        ts = np.maximum(arrival - _uniform_int(jit, cfg.out_of_orderness_ms + 1), cfg.start_ms)
    else:
        ts = arrival

    last_person = last_base0_person_id(cfg, g)
    last_auction = last_base0_auction_id(cfg, g)
    seller = np.where(_hot(hot1, cfg.hot_seller_ratio), (last_person // HOT_BLOCK) * HOT_BLOCK,
                      _next_base0_person_id(cfg, g, pick1))
    auction_ref = np.where(_hot(hot1, cfg.hot_auction_ratio),
                           (np.maximum(last_auction, 0) // HOT_BLOCK) * HOT_BLOCK,
                           _next_base0_auction_id(cfg, g, pick1))
    bidder = np.where(_hot(hot2, cfg.hot_bidder_ratio),
                      (last_person // HOT_BLOCK) * HOT_BLOCK + 1,
                      _next_base0_person_id(cfg, g, pick2))

    person_id = FIRST_PERSON_ID + np.where(is_p, last_person, np.where(is_a, seller, bidder))
    auction_id = np.where(is_p, -1, FIRST_AUCTION_ID + np.where(is_a, last_auction, auction_ref))
    price = np.where(is_p, 0, _price(price_u))
    category = np.where(is_a, FIRST_CATEGORY_ID + _uniform_int(small, cfg.num_categories),
                        -1).astype(np.int32)
    lo, hi = cfg.duration_range_ms()
    duration = lo + _uniform_int(dur_u, hi - lo + 1)
    expires = np.where(is_a, ts + duration, -1)
    city = np.where(is_p, _uniform_int(small, NUM_CITIES), -1).astype(np.int32)
    arrays = [kind, ts, person_id, auction_id, price, category, expires, city]
    return pa.RecordBatch.from_arrays([pa.array(a) for a in arrays], schema=NEXMARK_SCHEMA)


def nexmark_batches(
    cfg: NexmarkConfig, first: int = 0, stop: int | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> Iterator[pa.RecordBatch]:
    """Events ``first .. stop - 1`` (default: all) as batches of at most ``batch_size`` rows.

    Any slice equals the same rows of :func:`generate_nexmark`'s table (module docstring)."""
    stop = cfg.events if stop is None else stop
    if not 0 <= first <= stop <= cfg.events:
        raise ValueError(f"need 0 <= first ({first}) <= stop ({stop}) <= events ({cfg.events})")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    for lo in range(first, stop, batch_size):
        yield _slice(cfg, lo, min(lo + batch_size, stop))


def nexmark_range(cfg: NexmarkConfig, first: int, stop: int) -> pa.Table:
    """Events ``first .. stop - 1`` as one table (``NEXMARK_SCHEMA``)."""
    return pa.Table.from_batches(list(nexmark_batches(cfg, first, stop)), schema=NEXMARK_SCHEMA)


def generate_nexmark(cfg: NexmarkConfig) -> pa.Table:
    """Every event of ``cfg`` in arrival order (``NEXMARK_SCHEMA``; module docstring)."""
    return nexmark_range(cfg, 0, cfg.events)
