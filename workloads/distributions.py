"""Vectorised, seeded key choosers (YCSB's generators, batch at a time) and value-size samplers.

Every chooser draws a whole batch of keys with numpy: ``chooser.next(arrival_ms, event_ms)``
returns one int64 key per event. Choosers keep whatever they need between calls (their numpy
``Generator``, live sessions), and each consumes exactly one uniform per event, so a partition's
stream is fully determined by the seed and the same however it is cut into batches (an in-process
run and a Spark run with another Arrow batch size see the same events).

Faithfulness to YCSB (core/src/main/java/site/ycsb/generator/*):

* ``zipfian`` is ``ZipfianGenerator.nextLong``: ``u*zeta(n) < 1 -> 0``, ``< 1 + 0.5**theta -> 1``,
  else ``n * (eta*u - eta + 1) ** (1/(1-theta))``. ``zeta(n, theta)`` is computed once per
  ``(n, theta)`` and cached (exact prefix sums up to 2**16, Euler-Maclaurin beyond; it matches
  YCSB's published ``ZETAN`` for 10**10 items).
* ``scrambled`` is ``ScrambledZipfianGenerator``: a zipfian over YCSB's 10**10 items, hashed with
  YCSB's ``fnvhash64`` (FNV-1a 64 over the 8 little-endian bytes, then ``Math.abs``) mod ``count``.
  Unlike YCSB, ``abs(Long.MIN_VALUE)`` is taken as 2**63, not a negative key.
* ``latest`` is ``SkewedLatestGenerator``: ``newest - zipfian(itemcount = inserted keys)``. YCSB's
  itemcount grows with inserts; here the insert frontier is a function of logical arrival time (so
  every partition sees the same frontier) and zeta is evaluated per event for the current count.
  (YCSB recomputes ``eta`` with the *initial* item count after growth, a known quirk; we use the
  current count throughout.)
* ``hotspot`` is ``HotspotIntegerGenerator``; ``exponential`` is ``ExponentialGenerator`` with
  ``gamma = -ln(1 - percentile/100) / (count * fraction)`` and ``key = count-1 - floor(x)``;
  ``CoreWorkload.nextKeynum`` redraws while negative, we sample that truncated law directly.
* ``sessions`` has no YCSB counterpart: see :class:`SessionsChooser`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from workloads.spec import (
    ExponentialKeys,
    HotspotKeys,
    KeySpec,
    LatestKeys,
    SessionKeys,
    SessionLength,
    SizeSpec,
    SpecError,
    UniformKeys,
    ZipfianKeys,
)

#: YCSB ScrambledZipfianGenerator.ITEM_COUNT; its zipfian runs over ITEM_COUNT + 1 items.
YCSB_SCRAMBLED_ITEM_COUNT = 10_000_000_000
#: YCSB ScrambledZipfianGenerator.ZETAN (zeta for ITEM_COUNT items at theta 0.99), for tests.
YCSB_SCRAMBLED_ZETAN = 26.46902820178302
FNV_OFFSET_BASIS_64 = np.uint64(0xCBF29CE484222325)
FNV_PRIME_64 = np.uint64(1099511628211)

_ZETA_TABLE_SIZE = 1 << 16


# ------------------------------------------------------------------------------------------------
# zeta(n, theta) = sum_{i=1..n} i**-theta
# ------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=16)
def _zeta_prefix(theta: float) -> np.ndarray:
    """prefix[k] = zeta(k, theta) for k <= 2**16, summed in YCSB's order (i = 1, 2, ...)."""
    terms = np.arange(1, _ZETA_TABLE_SIZE + 1, dtype=np.float64) ** -theta
    out = np.empty(_ZETA_TABLE_SIZE + 1)
    out[0] = 0.0
    np.cumsum(terms, out=out[1:])
    out.flags.writeable = False
    return out


def _zeta_tail(a: float, b: np.ndarray, theta: float) -> np.ndarray:
    """sum_{i=a..b} i**-theta by Euler-Maclaurin (a >= 2**16 makes it exact to ~1e-16).

    Why not just sum: YCSB's 10**10-item zipfian would need 10**10 terms, and ``latest`` needs
    zeta for a different item count on nearly every event.
    """
    one = 1.0 - theta
    log_a, log_b = math.log(a), np.log(b)
    # integral a..b of x**-theta, written with expm1 so theta close to 1 keeps its precision
    integral = a**one * np.expm1(one * (log_b - log_a)) / one
    ends = (a**-theta + np.exp(-theta * log_b)) / 2

    def deriv(order: int, x_log: np.ndarray | float) -> np.ndarray | float:
        # d^k/dx^k x**-theta = (-1)^k theta (theta+1)...(theta+k-1) x**(-theta-k)
        coef = math.prod(theta + j for j in range(order)) * (-1) ** order
        return coef * np.exp((-theta - order) * x_log)

    corr = (deriv(1, log_b) - deriv(1, log_a)) / 12.0  # B2/2!
    corr -= (deriv(3, log_b) - deriv(3, log_a)) / 720.0  # B4/4! = -1/720
    corr += (deriv(5, log_b) - deriv(5, log_a)) / 30240.0  # B6/6! = 1/30240
    return integral + ends + corr


def zeta_array(n: np.ndarray, theta: float) -> np.ndarray:
    """Vectorised zeta(n_i, theta) for an int array (used per event by ``latest``)."""
    n = np.asarray(n, dtype=np.int64)
    prefix = _zeta_prefix(theta)
    out = prefix[np.minimum(n, _ZETA_TABLE_SIZE)]
    big = n > _ZETA_TABLE_SIZE
    if big.any():
        tail = _zeta_tail(_ZETA_TABLE_SIZE + 1, n[big].astype(np.float64), theta)
        out = out.copy()
        out[big] = prefix[_ZETA_TABLE_SIZE] + tail
    return out


@functools.lru_cache(maxsize=256)
def zeta(n: int, theta: float) -> float:
    """zeta(n, theta), computed once per (n, theta) and cached."""
    if n < 0:
        raise ValueError(f"zeta needs n >= 0, got {n}")
    return float(zeta_array(np.array([n]), theta)[0])


# ------------------------------------------------------------------------------------------------
# YCSB primitives
# ------------------------------------------------------------------------------------------------


def zipfian_draw(u: np.ndarray, items: np.ndarray | int, theta: float) -> np.ndarray:
    """YCSB ``ZipfianGenerator.nextLong(items)`` for uniforms ``u`` in [0, 1): values in [0, items).

    ``items`` may be a scalar or one item count per draw (``latest`` grows it with inserts).
    """
    items_arr = np.asarray(items, dtype=np.int64)
    n = items_arr.astype(np.float64)
    zetan = zeta_array(items_arr, theta) if items_arr.ndim else zeta(int(items_arr), theta)
    zeta2 = zeta(2, theta)
    alpha = 1.0 / (1.0 - theta)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # n <= 2 divides by zero or gives nonsense here; those draws are all overridden below.
        eta = (1.0 - (2.0 / n) ** (1.0 - theta)) / (1.0 - zeta2 / zetan)
        base = np.maximum(eta * u - eta + 1.0, 0.0)
        ret = np.floor(n * base**alpha)
    ret = np.nan_to_num(ret, nan=0.0, posinf=0.0)
    uz = u * zetan
    ret = np.where(uz < 1.0 + 0.5**theta, 1.0, ret)
    ret = np.where(uz < 1.0, 0.0, ret)
    return np.minimum(ret.astype(np.int64), items_arr - 1)


def fnv1a64_ycsb(values: np.ndarray) -> np.ndarray:
    """YCSB ``Utils.fnvhash64``: FNV-1a over 8 little-endian bytes, then ``Math.abs``.

    Returns non-negative uint64 (``abs(Long.MIN_VALUE)`` becomes 2**63 instead of staying
    negative as in Java, which would give YCSB a negative key once in 2**64).
    """
    v = np.asarray(values).astype(np.int64).view(np.uint64)
    h = np.full(v.shape, FNV_OFFSET_BASIS_64, dtype=np.uint64)
    mask = np.uint64(0xFF)
    for i in range(8):
        h ^= (v >> np.uint64(8 * i)) & mask
        h *= FNV_PRIME_64
    negative = h.view(np.int64) < 0
    return np.where(negative, ~h + np.uint64(1), h)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser (Steele et al.): a cheap, well-mixed 64-bit hash, vectorised."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


# ------------------------------------------------------------------------------------------------
# Choosers
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimeContext:
    """What time-aware choosers need to know about the run's logical time line."""

    start_ms: int = 0
    duration_ms: int = 1
    max_out_of_orderness_ms: int = 0


class KeyChooser(Protocol):
    """Draws one key per event; stateful across calls, deterministic for its Generator."""

    def next(self, arrival_ms: np.ndarray, event_ms: np.ndarray) -> np.ndarray:
        """Keys (int64) for events arriving at ``arrival_ms`` with timestamps ``event_ms``.

        ``arrival_ms`` is non-decreasing across calls (logical arrival order); ``event_ms`` is
        ``arrival_ms`` jittered back by up to the out-of-orderness bound.
        """
        ...


class UniformChooser:
    """Every key in 0..count-1 equally likely."""

    def __init__(self, rng: np.random.Generator, count: int) -> None:
        self._rng = rng
        self._count = count

    def next(self, arrival_ms: np.ndarray, event_ms: np.ndarray) -> np.ndarray:
        return self._rng.integers(0, self._count, size=len(arrival_ms), dtype=np.int64)


class ZipfianChooser:
    """YCSB ZipfianGenerator over 0..count-1 (key 0 hottest), or ScrambledZipfian."""

    def __init__(self, rng: np.random.Generator, count: int, theta: float, scrambled: bool) -> None:
        self._rng = rng
        self._count = count
        self._theta = theta
        self._scrambled = scrambled
        # YCSB's scrambled zipfian ranks 10**10 + 1 items, then hashes them onto the key space.
        self._items = YCSB_SCRAMBLED_ITEM_COUNT + 1 if scrambled else count
        zeta(self._items, theta)  # warm the cache now, not inside the first batch

    def next(self, arrival_ms: np.ndarray, event_ms: np.ndarray) -> np.ndarray:
        u = self._rng.random(len(arrival_ms))
        ranks = zipfian_draw(u, self._items, self._theta)
        if not self._scrambled:
            return ranks
        return (fnv1a64_ycsb(ranks) % np.uint64(self._count)).astype(np.int64)


class LatestChooser:
    """YCSB SkewedLatest: ``key = newest - zipfian(inserted)``, newest keys most likely.

    The insert frontier ``m(t)`` (keys 0..m-1 exist) starts at ``initial_keys`` and grows at
    ``insert_rate`` keys per logical second, capped at ``count`` (if any); by default the rate
    makes it reach ``count`` when the run ends. It depends only on the arrival time, so all
    partitions share it. With ``lifetime_ms`` only keys inserted within that long before ``t``
    are eligible; a frontier that stops at ``count`` would then retire every key, so that is
    refused (``SpecError`` on ``keys.count``) rather than silently hammering one key.
    """

    def __init__(
        self, rng: np.random.Generator, count: int | None, params: LatestKeys, ctx: TimeContext
    ) -> None:
        self._rng = rng
        self._cap = count if count is not None else np.iinfo(np.int64).max
        self._p = params
        self._start = ctx.start_ms
        if params.insert_rate is not None:
            self._rate = params.insert_rate
        else:
            assert count is not None  # the spec requires count or insert_rate
            self._rate = (count - params.initial_keys) * 1000.0 / max(1, ctx.duration_ms)
        self._check_lifetime(count, ctx)

    def _check_lifetime(self, count: int | None, ctx: TimeContext) -> None:
        if self._p.lifetime_ms is None or (count is None and self._rate > 0):
            return
        if self._rate <= 0:
            full_at = 0.0  # no inserts at all: the initial keys are all there is
        else:
            full_at = (count - self._p.initial_keys) * 1000.0 / self._rate  # ms after start
        if full_at + self._p.lifetime_ms < ctx.duration_ms:
            raise SpecError(
                "keys.count",
                f"the insert frontier reaches count = {count} after {full_at:.0f} ms of a "
                f"{ctx.duration_ms} ms run; with lifetime_ms = {self._p.lifetime_ms} every key "
                "would then retire. Raise count, lower insert_rate, or leave count out.",
            )

    def frontier(self, t_ms: np.ndarray) -> np.ndarray:
        """Number of keys inserted by logical time ``t_ms`` (keys 0..m-1 exist)."""
        grown = np.floor((t_ms - self._start) * (self._rate / 1000.0)).astype(np.int64)
        return np.clip(self._p.initial_keys + grown, self._p.initial_keys, self._cap)

    def next(self, arrival_ms: np.ndarray, event_ms: np.ndarray) -> np.ndarray:
        newest = self.frontier(arrival_ms)
        items = newest
        if self._p.lifetime_ms is not None:
            born_before = arrival_ms - self._p.lifetime_ms
            retired = np.where(born_before >= self._start, self.frontier(born_before), 0)
            items = np.maximum(newest - retired, 1)
        u = self._rng.random(len(arrival_ms))
        return newest - 1 - zipfian_draw(u, items, self._p.theta)


class HotspotChooser:
    """YCSB HotspotIntegerGenerator: hot set = first ``int(count * hot_data_fraction)`` keys.

    One uniform per event decides hot/cold *and* (rescaled) the key within that set, so every
    event consumes exactly one draw and the stream does not depend on how it is batched.
    """

    def __init__(self, rng: np.random.Generator, count: int, params: HotspotKeys) -> None:
        self._rng = rng
        self._count = count
        self._hot = int(count * params.hot_data_fraction)
        self._f = params.hot_op_fraction

    def next(self, arrival_ms: np.ndarray, event_ms: np.ndarray) -> np.ndarray:
        u = self._rng.random(len(arrival_ms))
        hot = u < self._f
        cold_span = 1.0 - self._f
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.where(hot, u / self._f, (u - self._f) / cold_span)
        v = np.nan_to_num(v)
        offset = np.where(hot, 0, self._hot)
        size = np.where(hot, self._hot, self._count - self._hot)
        return offset + np.minimum(np.floor(v * size).astype(np.int64), np.maximum(size - 1, 0))


class ExponentialChooser:
    """YCSB ExponentialGenerator as CoreWorkload uses it: recent (high) keys most likely.

    YCSB redraws while ``count-1 - floor(x) < 0``, i.e. it samples x from an exponential
    truncated to ``[0, count)``; we draw that truncated law directly by inverse CDF (same
    distribution, one uniform per event, no data-dependent redraw loop).
    """

    def __init__(self, rng: np.random.Generator, count: int, params: ExponentialKeys) -> None:
        self._rng = rng
        self._count = count
        gamma = -math.log(1.0 - params.percentile / 100.0) / (count * params.fraction)
        self._mean = 1.0 / gamma
        self._mass = -math.expm1(-count * gamma)  # P(x < count)

    def next(self, arrival_ms: np.ndarray, event_ms: np.ndarray) -> np.ndarray:
        u = self._rng.random(len(arrival_ms))
        x = -self._mean * np.log1p(-u * self._mass)
        offset = np.minimum(np.floor(x).astype(np.int64), self._count - 1)
        return (self._count - 1) - offset


class SessionsChooser:
    """Churn: every key lives for exactly one session, then is never used again.

    Model: ``concurrent`` session *slots*; each slot runs sessions back to back, each with a fresh
    key and a length drawn from ``length``. So exactly ``concurrent`` sessions are live at any
    time and sessions start at ``concurrent / mean_length`` per second (by Little's law; a Poisson
    stream for exponential lengths). An event picks a slot uniformly and uses the key of the
    session live in that slot at the event's timestamp, so all of a key's events lie within its
    session's ``[start, end)``, out-of-order timestamps included (ended sessions are kept until no
    later event can fall into them). Slots start staggered: the first session of a slot gets a
    residual length (a fresh draw for exponential, which is memoryless; ``U * length``
    otherwise), so sessions do not all end together.

    Slots are numbered globally 0..S-1 with ``S = max(concurrent, num_partitions)``; partition
    ``p`` owns slots ``p, p + P, ...``. The g-th session of slot s has key ``g * S + s``: unique
    over all partitions, growing with time, never reused. Its length comes from a counter-based
    hash of (seed, s, g) rather than a sequential draw, so sessions do not depend on how events
    are cut into batches. Work is per session (vectorised over slots), never per event.
    """

    def __init__(
        self,
        rng: np.random.Generator,
        params: SessionKeys,
        ctx: TimeContext,
        partition: int = 0,
        num_partitions: int = 1,
        record: bool = False,
    ) -> None:
        self._rng = rng
        self._seed = np.uint64(rng.integers(0, 2**63, dtype=np.int64))
        self._length = params.length
        self._ooo = ctx.max_out_of_orderness_ms
        self._global_slots = max(params.concurrent_sessions, num_partitions)
        self._slot_id = np.arange(partition, self._global_slots, num_partitions, dtype=np.int64)
        self._gen = np.zeros(len(self._slot_id), dtype=np.int64)
        self._record: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = (
            [] if record else None
        )
        self._key = self._slot_id.copy()  # generation 0
        self._start = np.full(len(self._slot_id), ctx.start_ms, dtype=np.int64)
        self._end = self._start + self._first_lengths()
        empty = np.empty(0, dtype=np.int64)
        self._hist = (empty, empty, empty, empty)  # slot, start, end, key of ended sessions

    @property
    def slots(self) -> int:
        """Live sessions in this partition at any time."""
        return len(self._key)

    def next(self, arrival_ms: np.ndarray, event_ms: np.ndarray) -> np.ndarray:
        n = len(event_ms)
        if n == 0:
            return np.empty(0, dtype=np.int64)
        self._advance(int(event_ms.max()))
        u = self._rng.random(n)
        slot = np.minimum((u * self.slots).astype(np.int64), self.slots - 1)
        keys = self._key[slot]
        stale = np.flatnonzero(event_ms < self._start[slot])
        if stale.size:
            keys[stale] = self._lookup_ended(slot[stale], event_ms[stale])
        # Later events have ts >= later arrival - ooo >= this arrival - ooo: older ones can go.
        self._prune(int(arrival_ms.max()) - self._ooo)
        return keys

    def windows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(key, start, end) of every session so far, ended and live (needs ``record=True``)."""
        if self._record is None:
            raise RuntimeError("construct the chooser with record=True to keep session windows")
        parts = [*self._record, (self._key, self._start, self._end)]
        key, start, end = (np.concatenate([part[i] for part in parts]) for i in range(3))
        return key, start, end

    # -- session life cycle ------------------------------------------------------------------

    def _uniform(self, slots: np.ndarray, salt: int) -> np.ndarray:
        """A uniform in [0, 1) per (slot, its current generation): counter-based, order-free."""
        with np.errstate(over="ignore"):
            x = self._slot_id[slots].astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
            x ^= _splitmix64(self._gen[slots].astype(np.uint64) + np.uint64(salt) + self._seed)
        return (_splitmix64(x) >> np.uint64(11)).astype(np.float64) * 2.0**-53

    def _lengths(self, slots: np.ndarray) -> np.ndarray:
        """Lengths in whole ms (>= 1) of the current sessions of ``slots``."""
        spec: SessionLength = self._length
        if spec.distribution == "constant":
            return np.full(len(slots), spec.ms, dtype=np.int64)
        u = self._uniform(slots, 0)
        if spec.distribution == "uniform":
            width = spec.max_ms - spec.min_ms + 1  # type: ignore[operator]
            return spec.min_ms + np.minimum((u * width).astype(np.int64), width - 1)
        drawn = np.ceil(-spec.mean_ms * np.log1p(-u)).astype(np.int64)  # type: ignore[operator]
        return np.maximum(drawn, 1)

    def _first_lengths(self) -> np.ndarray:
        every = np.arange(self.slots)
        lengths = self._lengths(every)
        if self._length.distribution == "exponential":
            return lengths
        residual = np.ceil(self._uniform(every, 1) * lengths).astype(np.int64)
        return np.maximum(residual, 1)

    def _advance(self, t_ms: int) -> None:
        """Replace every session that ended by ``t_ms`` (possibly several per slot)."""
        ended_parts = []
        ended = np.flatnonzero(self._end <= t_ms)
        while ended.size:
            ended_parts.append((ended, self._start[ended], self._end[ended], self._key[ended]))
            self._gen[ended] += 1
            self._key[ended] = self._gen[ended] * self._global_slots + self._slot_id[ended]
            self._start[ended] = self._end[ended]
            self._end[ended] += self._lengths(ended)
            ended = ended[self._end[ended] <= t_ms]
        if not ended_parts:
            return
        if self._record is not None:
            self._record.extend((p[3], p[1], p[2]) for p in ended_parts)
        cols = [
            np.concatenate([h, *(p[i] for p in ended_parts)]) for i, h in enumerate(self._hist)
        ]
        order = np.lexsort((cols[1], cols[0]))  # by slot, then start
        self._hist = (cols[0][order], cols[1][order], cols[2][order], cols[3][order])

    def _prune(self, watermark: int) -> None:
        keep = self._hist[2] > watermark
        if not keep.all():
            h_slot, h_start, h_end, h_key = self._hist
            self._hist = (h_slot[keep], h_start[keep], h_end[keep], h_key[keep])

    def _lookup_ended(self, slot: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Keys of ended sessions containing (slot, t), by one vectorised binary search.

        Only segments ending after ``lo = min(t)`` can match, and per slot at most one of those
        starts before ``lo``; clamping starts to ``lo`` keeps (slot, start) unique and sorted,
        so ``slot * span + (start - lo)`` (span covering every start and every t) is a sorted
        composite key to search.
        """
        h_slot, h_start, h_end, h_key = self._hist
        lo = int(t.min())
        live = h_end > lo
        h_slot, h_start, h_end, h_key = h_slot[live], h_start[live], h_end[live], h_key[live]
        hi = max(int(t.max()), int(h_start.max()) if h_start.size else lo)
        span = hi - lo + 1
        if self.slots * span >= 2**62:
            raise OverflowError("out-of-orderness too large for the sessions chooser")
        composite = h_slot * span + (np.maximum(h_start, lo) - lo)
        idx = np.searchsorted(composite, slot * span + (t - lo), side="right") - 1
        ok = (idx >= 0) & (h_slot[np.maximum(idx, 0)] == slot)
        ok &= (h_start[idx] <= t) & (t < h_end[idx])
        if not ok.all():  # an invariant, cheap to check: would mean a key outside its session
            raise RuntimeError("sessions chooser lost a session window (bug)")
        return h_key[idx]


def make_key_chooser(
    keys: KeySpec,
    rng: np.random.Generator,
    ctx: TimeContext,
    partition: int = 0,
    num_partitions: int = 1,
) -> KeyChooser:
    """The chooser for a spec's ``[keys]`` section."""
    p = keys.params
    if isinstance(p, SessionKeys):
        return SessionsChooser(rng, p, ctx, partition, num_partitions)
    count = keys.count
    if isinstance(p, LatestKeys):
        return LatestChooser(rng, count, p, ctx)
    assert count is not None
    if isinstance(p, UniformKeys):
        return UniformChooser(rng, count)
    if isinstance(p, ZipfianKeys):
        return ZipfianChooser(rng, count, p.theta, p.scrambled)
    if isinstance(p, HotspotKeys):
        return HotspotChooser(rng, count, p)
    if isinstance(p, ExponentialKeys):
        return ExponentialChooser(rng, count, p)
    raise TypeError(f"no chooser for {type(p).__name__}")


# ------------------------------------------------------------------------------------------------
# Value sizes
# ------------------------------------------------------------------------------------------------


def sample_sizes(size: SizeSpec, rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` value sizes in bytes (int32) from a ``[values] size`` spec.

    Pareto is the classical one (minimum ``scale``, tail index ``shape``), floored to whole bytes
    and capped at ``max`` so one huge draw cannot blow up a run.
    """
    if size.distribution == "constant":
        return np.full(n, size.bytes, dtype=np.int32)
    if size.distribution == "uniform":
        return rng.integers(size.min, size.max, size=n, endpoint=True, dtype=np.int32)
    # inverse CDF: one uniform per value, so the stream does not depend on batching
    u = rng.random(n)
    raw = size.scale * (1.0 - u) ** (-1.0 / size.shape)  # type: ignore[operator]
    return np.minimum(np.floor(raw), size.max).astype(np.int32)
