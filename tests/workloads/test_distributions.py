"""Key choosers against YCSB's definitions and the theory behind them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workloads.distributions import (
    YCSB_SCRAMBLED_ITEM_COUNT,
    YCSB_SCRAMBLED_ZETAN,
    ExponentialChooser,
    HotspotChooser,
    LatestChooser,
    SessionsChooser,
    TimeContext,
    UniformChooser,
    ZipfianChooser,
    fnv1a64_ycsb,
    make_key_chooser,
    sample_sizes,
    zeta,
    zeta_array,
    zipfian_draw,
)
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

N = 200_000  # draws per statistical test


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def times(n: int, start: int = 0, per_ms: int = 100) -> np.ndarray:
    """Arrival times of n events at per_ms events per millisecond."""
    return start + np.arange(n, dtype=np.int64) // per_ms


def within(observed: float, expected: float, n: int = N, sigmas: float = 5.0) -> bool:
    """Binomial proportion check: |observed - expected| within `sigmas` standard errors."""
    return abs(observed - expected) <= sigmas * math.sqrt(expected * (1 - expected) / n) + 1e-12


# -- zeta and the hash -------------------------------------------------------------------------


@pytest.mark.parametrize("theta", [0.2, 0.5, 0.99])
@pytest.mark.parametrize("n", [1, 2, 10, 65_536, 65_537, 1_000_000])
def test_zeta_matches_the_plain_sum(n: int, theta: float) -> None:
    exact = math.fsum((np.arange(1, n + 1, dtype=np.float64) ** -theta).tolist())
    assert zeta(n, theta) == pytest.approx(exact, rel=1e-13)
    assert zeta_array(np.array([n, n]), theta) == pytest.approx([exact, exact], rel=1e-13)


def test_zeta_reproduces_ycsb_zetan_for_ten_billion_items() -> None:
    # YCSB hard-codes ZETAN = zeta(10**10, 0.99), summed term by term
    assert zeta(YCSB_SCRAMBLED_ITEM_COUNT, 0.99) == pytest.approx(YCSB_SCRAMBLED_ZETAN, rel=1e-11)


def java_fnvhash64(val: int) -> int:
    """YCSB Utils.fnvhash64 with Java long arithmetic, one value at a time (reference)."""
    mask = (1 << 64) - 1
    h = 0xCBF29CE484222325
    for _ in range(8):
        octet = val & 0xFF
        val >>= 8
        h = ((h ^ octet) * 1099511628211) & mask
    signed = h - (1 << 64) if h >> 63 else h
    return abs(signed)


def test_fnv_hash_matches_ycsb() -> None:
    values = [0, 1, 2, 255, 256, 12345, 10**10, 2**40 + 7, 2**62]
    got = fnv1a64_ycsb(np.array(values, dtype=np.int64))
    assert [int(x) for x in got] == [java_fnvhash64(v) for v in values]
    assert int(fnv1a64_ycsb(np.array([0]))[0]) == java_fnvhash64(0) != 0


# -- zipfian -----------------------------------------------------------------------------------


def test_zipfian_skew_matches_theory() -> None:
    n, theta = 1000, 0.99
    keys = ZipfianChooser(rng(), n, theta, scrambled=False).next(times(N), times(N))
    assert keys.min() >= 0 and keys.max() < n
    freq = np.bincount(keys, minlength=n) / N
    z = zeta(n, theta)
    # YCSB's draw is exact for the two hottest items ...
    assert within(freq[0], 1 / z)
    assert within(freq[1], 2**-theta / z)
    # ... and an approximation of 1/(i+1)^theta beyond; the head still carries its mass
    ideal_top10 = sum((i + 1) ** -theta for i in range(10)) / z
    assert freq[:10].sum() == pytest.approx(ideal_top10, rel=0.1)
    assert freq[0] > freq[1] > freq[10] > freq[500]


def test_zipfian_theta_controls_skew() -> None:
    flat = ZipfianChooser(rng(), 1000, 0.2, False).next(times(N), times(N))
    steep = ZipfianChooser(rng(), 1000, 0.99, False).next(times(N), times(N))
    assert np.mean(flat == 0) < np.mean(steep == 0) / 3


def test_scrambled_zipfian_spreads_the_hot_key() -> None:
    n = 1000
    keys = ZipfianChooser(rng(), n, 0.99, scrambled=True).next(times(N), times(N))
    assert keys.min() >= 0 and keys.max() < n
    freq = np.bincount(keys, minlength=n) / N
    hottest = int(np.argmax(freq))
    assert hottest == int(fnv1a64_ycsb(np.array([0]))[0] % n)  # rank 0, hashed
    assert hottest != 0
    # rank 0 of YCSB's 10**10-item zipfian has probability 1/ZETAN (plus rare hash collisions)
    assert freq[hottest] == pytest.approx(1 / YCSB_SCRAMBLED_ZETAN, rel=0.1)


def test_zipfian_draw_small_item_counts() -> None:
    u = rng().random(10_000)
    assert set(zipfian_draw(u, 1, 0.99).tolist()) == {0}
    assert set(zipfian_draw(u, 2, 0.99).tolist()) == {0, 1}
    per_event = zipfian_draw(u, np.full(10_000, 3), 0.99)
    assert set(per_event.tolist()) == {0, 1, 2}


# -- latest ------------------------------------------------------------------------------------


def test_latest_prefers_the_newest_key() -> None:
    count = 10_000
    params = LatestKeys(theta=0.99, initial_keys=count, insert_rate=None)  # frontier = count
    keys = LatestChooser(rng(), count, params, TimeContext(0, 1000)).next(times(N), times(N))
    freq = np.bincount(keys, minlength=count) / N
    z = zeta(count, 0.99)
    assert within(freq[count - 1], 1 / z)
    assert within(freq[count - 2], 2**-0.99 / z)
    assert np.mean(keys >= count - 100) > 0.5  # half of all ops on the newest 1%


def test_latest_frontier_advances_with_time() -> None:
    count = 100_000
    params = LatestKeys(theta=0.99, initial_keys=1_000)
    ctx = TimeContext(start_ms=500, duration_ms=2_000)  # frontier reaches count at 2500 ms
    chooser = LatestChooser(rng(), count, params, ctx)
    arrival = 500 + np.arange(N, dtype=np.int64) * 2_000 // N
    keys = chooser.next(arrival, arrival)
    frontier = chooser.frontier(arrival)
    assert frontier[0] == 1_000 and count - 100 <= frontier[-1] <= count
    assert np.all(keys < frontier) and np.all(keys >= 0)
    # most ops hit keys inserted recently: the newest 1% of the current frontier
    assert np.mean(keys >= frontier - frontier // 100) > 0.5
    early, late = keys[: N // 10], keys[-N // 10 :]
    assert np.median(late) > np.median(early) + 50_000


def test_latest_lifetime_bounds_the_eligible_window() -> None:
    params = LatestKeys(theta=0.99, initial_keys=100, insert_rate=10_000, lifetime_ms=100)
    chooser = LatestChooser(rng(), None, params, TimeContext(0, 4_000))  # no count: unbounded
    arrival = np.arange(N, dtype=np.int64) * 4_000 // N
    keys = chooser.next(arrival, arrival)
    newest = chooser.frontier(arrival)
    oldest = np.where(arrival >= 100, chooser.frontier(arrival - 100), 0)
    assert np.all(keys < newest) and np.all(keys >= oldest)
    assert newest[-1] == 100 + 39_990 and keys.max() > 39_000  # last arrival: 3999 ms
    # an in-flight window of ~1000 keys (10 000/s for 100 ms), newest hottest
    assert np.all(newest[arrival >= 100] - oldest[arrival >= 100] == 1_000)
    assert np.mean(keys == newest - 1) > 0.1


def test_latest_lifetime_refuses_a_saturating_frontier() -> None:
    params = LatestKeys(theta=0.99, initial_keys=100, insert_rate=10_000, lifetime_ms=100)
    with pytest.raises(SpecError, match=r"^keys\.count: the insert frontier reaches count"):
        LatestChooser(rng(), 20_000, params, TimeContext(0, 4_000))
    LatestChooser(rng(), 50_000, params, TimeContext(0, 4_000))  # reaches count after the run


# -- hotspot / exponential / uniform -----------------------------------------------------------


def test_hotspot_fractions() -> None:
    count = 10_000
    params = HotspotKeys(hot_data_fraction=0.1, hot_op_fraction=0.9)
    keys = HotspotChooser(rng(), count, params).next(times(N), times(N))
    hot = keys < 1_000
    assert within(hot.mean(), 0.9)
    assert keys.min() == 0 and keys.max() == count - 1
    # uniform within each set: the hot set is ~81x denser per key than the cold set
    per_hot, per_cold = hot.sum() / 1_000, (~hot).sum() / 9_000
    assert per_hot / per_cold == pytest.approx(81, rel=0.1)


def test_exponential_percentile() -> None:
    count = 10_000
    params = ExponentialKeys(percentile=95.0, fraction=0.1)
    keys = ExponentialChooser(rng(), count, params).next(times(N), times(N))
    assert keys.min() >= 0 and keys.max() <= count - 1
    # 95% of the untruncated mass lies within the newest 10% of keys; truncation at `count`
    # (YCSB's redraw) renormalises by P(x < count) = 1 - 0.05**10
    expected = 0.95 / (1 - 0.05**10)
    assert within(np.mean(keys >= count - 1_000), expected)
    assert np.bincount(keys, minlength=count)[count - 1] > np.bincount(keys, minlength=count)[0]


def test_uniform_is_flat() -> None:
    keys = UniformChooser(rng(), 100).next(times(N), times(N))
    freq = np.bincount(keys, minlength=100) / N
    assert keys.min() == 0 and keys.max() == 99
    assert np.all(np.abs(freq - 0.01) < 5 * math.sqrt(0.01 * 0.99 / N))


# -- sessions ----------------------------------------------------------------------------------


def run_sessions(
    length: SessionLength, ooo: int = 0, batch: int = 10_000, seed: int = 0, n: int = N
) -> tuple[SessionsChooser, np.ndarray, np.ndarray, np.ndarray]:
    params = SessionKeys(length=length, concurrent=200)
    chooser = SessionsChooser(rng(seed), params, TimeContext(0, 10_000, ooo), record=True)
    arrival = times(n, per_ms=20)  # 10 s of logical time
    jitter = np.random.default_rng(99).integers(0, ooo + 1, size=n)
    event = np.maximum(arrival - jitter, 0)
    keys = np.concatenate(
        [chooser.next(arrival[i : i + batch], event[i : i + batch]) for i in range(0, n, batch)]
    )
    return chooser, arrival, event, keys


@pytest.mark.parametrize(
    "length",
    [
        SessionLength("exponential", mean_ms=500.0),
        SessionLength("uniform", min_ms=100, max_ms=900),
        SessionLength("constant", ms=400),
    ],
    ids=lambda x: x.distribution,
)
@pytest.mark.parametrize("ooo", [0, 300])
def test_sessions_keys_live_only_within_their_session(length: SessionLength, ooo: int) -> None:
    chooser, _, event, keys = run_sessions(length, ooo)
    w_key, w_start, w_end = chooser.windows()
    # every session has its own key: keys are never reused
    assert len(np.unique(w_key)) == len(w_key)
    order = np.argsort(w_key)
    pos = np.searchsorted(w_key[order], keys)
    assert np.all(w_key[order][pos] == keys)
    start, end = w_start[order][pos], w_end[order][pos]
    assert np.all((start <= event) & (event < end))
    # the population is constant (200 slots) and sessions churn at concurrent / mean length
    live_at_5s = np.sum((w_start <= 5_000) & (w_end > 5_000))
    assert live_at_5s == 200
    started = np.sum((w_start > 0) & (w_start <= 10_000))
    assert started == pytest.approx(200 * 10_000 / length.mean, rel=0.15)
    assert w_end.min() - w_start.min() >= 1 and np.all(w_end > w_start)


def test_sessions_go_cold_for_good() -> None:
    _, _, event, keys = run_sessions(SessionLength("constant", ms=400))
    # with constant length L no key's events can span L or more
    order = np.lexsort((event, keys))
    k, t = keys[order], event[order]
    first = np.r_[True, k[1:] != k[:-1]]
    last = np.r_[k[1:] != k[:-1], True]
    assert np.all(t[last] - t[first] < 400)
    # and key ids grow with time (never wrapping back to old ids)
    early, late = keys[event < 1_000], keys[event > 9_000]
    assert late.min() > early.max()


def test_sessions_partitions_use_disjoint_keys() -> None:
    params = SessionKeys(length=SessionLength("exponential", mean_ms=100.0), concurrent=10)
    arrival = times(50_000, per_ms=10)
    seen = []
    for p in range(3):
        chooser = SessionsChooser(rng(p), params, TimeContext(0, 5_000), p, 3)
        assert chooser.slots == (4 if p == 0 else 3)
        seen.append(set(chooser.next(arrival, arrival).tolist()))
    assert not (seen[0] & seen[1]) and not (seen[1] & seen[2]) and not (seen[0] & seen[2])


# -- every chooser: deterministic and independent of batching ----------------------------------

SPECS = [
    KeySpec("uniform", 1000, UniformKeys()),
    KeySpec("zipfian", 1000, ZipfianKeys()),
    KeySpec("zipfian", 1000, ZipfianKeys(scrambled=True)),
    KeySpec("latest", 100_000, LatestKeys(initial_keys=10, lifetime_ms=50)),
    KeySpec("hotspot", 1000, HotspotKeys()),
    KeySpec("exponential", 1000, ExponentialKeys()),
    KeySpec("sessions", None, SessionKeys(SessionLength("exponential", mean_ms=50.0), 30)),
]


@pytest.mark.parametrize("keys", SPECS, ids=lambda k: f"{k.distribution}-{k.count}")
def test_chooser_is_deterministic_and_batch_independent(keys: KeySpec) -> None:
    ctx = TimeContext(0, 1_000, 20)
    arrival = times(20_000, per_ms=20)
    event = np.maximum(arrival - np.random.default_rng(1).integers(0, 21, 20_000), 0)

    def draw(seed: int, batch: int) -> np.ndarray:
        chooser = make_key_chooser(keys, rng(seed), ctx)
        return np.concatenate(
            [chooser.next(arrival[i : i + batch], event[i : i + batch])
             for i in range(0, len(arrival), batch)]
        )

    whole = draw(5, 20_000)
    assert np.array_equal(whole, draw(5, 20_000))
    assert np.array_equal(whole, draw(5, 333))
    assert not np.array_equal(whole, draw(6, 20_000))
    assert whole.dtype == np.int64


# -- value sizes -------------------------------------------------------------------------------


def test_sample_sizes() -> None:
    const = sample_sizes(SizeSpec("constant", bytes=7), rng(), 1000)
    assert const.dtype == np.int32 and set(const.tolist()) == {7}
    uni = sample_sizes(SizeSpec("uniform", min=3, max=6), rng(), N)
    assert set(uni.tolist()) == {3, 4, 5, 6}
    par = sample_sizes(SizeSpec("pareto", shape=3.0, scale=100.0, max=10_000), rng(), N)
    assert par.min() >= 100 and par.max() <= 10_000
    # mean of a Pareto(shape 3, scale 100) is 150 (the floor to whole bytes takes ~0.5)
    assert par.mean() == pytest.approx(149.5, rel=0.02)
    capped = sample_sizes(SizeSpec("pareto", shape=0.5, scale=10.0, max=50), rng(), N)
    assert capped.max() == 50
