"""The per-op suite's machine gate: a measured round is taken again when a short probe right
before, between or right after its values shows the machine running well below its own speed.

Why: on a shared machine a plain dict loop's CPU-time rate drops 3-4x for seconds at a time. Two
such loops pinned one to each core of this 2-core machine ran at 23-28 M updates/s and, in
episodes of 1-10 s, at 7-9 M, often on both cores at once (a neighbour sharing the last-level
cache and memory bandwidth). Process CPU time does not hide that: the process runs, slowly. One
worker's probe read 4.4-5.4 M against the run's 18-21 M, and rounds measured in such episodes
moved the suite's medians by up to 79% between three back-to-back runs. pyperf asks for
isolated CPUs and JMH for a quiet machine; where neither can be had, the gate retakes the rounds
the machine spoiled, never more than a set number per process, and the document says how many
it retook and how many it kept although they were slow.

A round, not a value, is retaken: a round holds one value of every TTL mode, and the suite's
ratios pair each mode's rounds with the other modes' (bench/perop_stats.process_ratios), so the
modes keep the same rounds.

The probe stores one preallocated value into a dict of the suite's 100 k keys (about 7 MB, past
the 2 MB L2, inside a shared 32 MB L3) for about 10 ms, after an untimed pass that brings the
dict back into the caches the measured op just filled. It allocates nothing: the same loop
storing a new tuple per key (bench/flink_ops.machine_probe's) ran at 25 M updates/s before a
worker filled its states and at 12-14 M after, the new tuples landing in the memory the fill
had scattered, which says nothing about the machine; this one ran at 49-51 M in both, and its
dips (30-37 M) are the machine's. A round of 250-350 ms gains 10-20% in probes.

What the gate's probe cannot see is the share of the L3 the neighbours leave: its 7 MB fit even
when they take most of it. The ops with the largest states (list get and map get: an entry, a
list or map object and its array per key, 10-12 MB in Flink's heap) do not. Alone on the
machine, one JVM measuring Flink's heap list get without TTL in 150 rounds ran at 8.2-19.4 M
ops/s; the gate's probe read 45-58 M throughout (correlation 0.16), a dict store over 400 k
keys (about 25 MB) read 12-45 M (correlation 0.80), and with no JVM running that probe still
read 8.6-49 M (10th-90th percentile 12-46 M) in two minutes, in level shifts lasting tens of
seconds. So every measured round also takes one reading of that larger probe, the *cache
probe*: it retakes nothing (the machine leaves the whole L3 free a quarter to a half of the
time, in stretches longer than a retake can wait), it says under what cache pressure each
median was measured, so a median that moved between runs can be set beside its rounds'
readings.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

#: A probe below this share of the reference speed marks its round as slow.
FLOOR = 0.7
#: A probe's length: long enough for process_time's resolution and a few thousand dict updates.
PROBE_S = 0.01
#: The reference speed: this quantile of every probe the process has taken (the run's best
#: speeds, robust to a single fast outlier).
REFERENCE_QUANTILE = 0.9
#: Before a round, at most this long waiting for the machine to come back.
WAIT_S = 2.0
WAIT_STEP_S = 0.05
#: Probes taken at the start to set the first reference.
CALIBRATION_PROBES = 8
#: The cache probe's dict holds this many times the suite's keys (400 k: about 25 MB, the
#: order of the largest states' working sets, inside the 32 MB L3 only when neighbours leave
#: most of it).
CACHE_PROBE_SCALE = 4


@dataclass
class GateCounts:
    """What the gate did in one process: rounds retaken, and rounds kept although slow (the
    process had retaken its allowance)."""

    retaken: int = 0
    slow_kept: int = 0


class DictProbe:
    """A dict-store loop over `keys` keys in a seeded shuffled order, storing one preallocated
    value (no allocation), its loop count calibrated to about `probe_s` of CPU time."""

    def __init__(self, keys: int, probe_s: float = PROBE_S) -> None:
        order = list(range(keys))
        random.Random(42).shuffle(order)
        self._chunks = [order[i:i + 1000] for i in range(0, len(order), 1000)]
        self._value = (0, 0)
        self._d: dict[int, tuple[int, int]] = dict.fromkeys(order, self._value)
        self._pos = 0
        self._loops = 1
        while self._run(self._loops)[1] < probe_s:
            self._loops *= 2

    def _run(self, loops: int) -> tuple[int, float]:
        d, chunks, n = self._d, self._chunks, len(self._chunks)
        value = self._value
        count = 0
        t0 = time.perf_counter()
        cpu0 = time.process_time()
        for i in range(self._pos, self._pos + loops):
            chunk = chunks[i % n]
            for k in chunk:
                d[k] = value
            count += len(chunk)
        cpu = time.process_time() - cpu0
        wall = time.perf_counter() - t0
        self._pos += loops
        return count, cpu if cpu > 0 else wall

    def rate(self) -> float:
        """Dict updates per CPU second. An untimed pass over the dict first brings it back into
        the caches the measured op just filled (a probe that started cold ran at half its warm
        rate after a state loop, whatever the machine did), as far as they hold it."""
        self._run(len(self._chunks))
        count, seconds = self._run(self._loops)
        return count / seconds


class MachineGate:
    """A short dict-update probe and the rule that says whether the machine ran at its speed,
    and the cache probe beside it (read, never gated on).

    `reference` seeds the reference speed (a process's speed may start in a slow episode: the
    suite passes the best reference earlier processes of the same kind saw). `cache_keys` is
    the cache probe's size (0: none)."""

    def __init__(self, keys: int, reference: float = 0.0, floor: float = FLOOR,
                 probe_s: float = PROBE_S, calibration: int = CALIBRATION_PROBES,
                 cache_keys: int | None = None) -> None:
        self._probe = DictProbe(keys, probe_s)
        cache_keys = CACHE_PROBE_SCALE * keys if cache_keys is None else cache_keys
        self._cache = DictProbe(cache_keys, probe_s) if cache_keys else None
        self.floor = floor
        self.seed = reference
        self.rates: list[float] = []
        self.cache_rates: list[float] = []
        self.counts = GateCounts()
        for _ in range(calibration):
            self.probe()

    def probe(self) -> float:
        """One probe: dict updates per CPU second, remembered for the reference."""
        rate = self._probe.rate()
        self.rates.append(rate)
        return rate

    def cache_probe(self) -> float:
        """One reading of the cache probe (dict updates per CPU second over CACHE_PROBE_SCALE
        times the keys), remembered; it decides nothing."""
        if self._cache is None:
            raise RuntimeError("this gate was made without a cache probe (cache_keys=0)")
        rate = self._cache.rate()
        self.cache_rates.append(rate)
        return rate

    @property
    def reference(self) -> float:
        ordered = sorted(self.rates)
        own = ordered[min(len(ordered) - 1, int(REFERENCE_QUANTILE * len(ordered)))]
        return max(self.seed, own)

    def fast(self, rate: float) -> bool:
        return rate >= self.floor * self.reference

    def check(self) -> bool:
        """Probe now: True when the machine runs at its speed."""
        return self.fast(self.probe())

    def wait(self, sleep: Callable[[float], None] = time.sleep) -> bool:
        """Probe until the machine runs at its speed, at most WAIT_S; True if it does."""
        start = time.perf_counter()
        while not self.check():
            if time.perf_counter() - start >= WAIT_S:
                return False
            sleep(WAIT_STEP_S)
        return True

    def settle(self, fast: bool, retakes_left: bool) -> bool:
        """The fate of a finished round that was `fast` or not: True to keep it, False to take
        it again (counted), as long as the process has retakes left."""
        if fast:
            return True
        if retakes_left:
            self.counts.retaken += 1
            return False
        self.counts.slow_kept += 1
        return True
