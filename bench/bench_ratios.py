"""asv: each state operation's cost over its raw baseline's, measured in the same process.

`bench_state_ops.py` times the statebench op and the raw dict / rocksdict loop as separate
benchmarks, minutes apart; on a shared machine the level of both moves by factors between them,
so their absolute history flags steps on commits that changed nothing. Here one benchmark times
both, alternating (state, raw, state, raw, ...) in one process on its CPU-time clock
(`time.process_time_ns`: time the process was preempted by a neighbour is not counted), and
tracks the median of the per-alternation ratios. What the machine does to both sides of a pair
cancels; what a commit does to statebench's hot path stays. Lower is better, as for every asv
metric here: a ratio of 1 is the raw loop's cost.

The fixtures, pools and op loops are bench_state_ops' (one pre-filled state and one raw store
per process, built by its caching helpers), so the ratio is the quotient of what its two
benchmarks time.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable

from .bench_state_ops import raw_fixture, shared_pools, state_fixture
from .fixtures import VARIANTS
from .state_ops import OPS, RAW

#: Alternations measured after one warm-up call of each side; the track is their median ratio.
ALTERNATIONS = 15


def interleaved_ratio(state: Callable[[], object], raw: Callable[[], object],
                      alternations: int = ALTERNATIONS,
                      clock: Callable[[], int] = time.process_time_ns) -> float:
    """Median over `alternations` of (time of one `state()` call) / (time of the `raw()` call
    right after it), after one untimed call of each (first-call costs: caches, allocations).

    The two sides alternate so that whatever slows the process for a while (a neighbour's
    cache pressure, frequency scaling) lands on both halves of a pair; the median drops the
    pairs a pause split. The garbage collector is off while timing, as asv's and timeit's
    timers have it, so a collection that one side's garbage set off is not charged to the
    other."""
    if alternations < 1:
        raise ValueError(f"alternations must be >= 1, not {alternations}")
    state()
    raw()
    ratios = []
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for _ in range(alternations):
            t0 = clock()
            state()
            t1 = clock()
            raw()
            t2 = clock()
            ratios.append((t1 - t0) / max(t2 - t1, 1))
    finally:
        if enabled:
            gc.enable()
    return statistics.median(ratios)


class StateOverRaw:
    """Time of the statebench op over the time of the raw loop doing the same work, per backend
    x TTL variant x op (one process each, as asv forks one per parameter set)."""

    params = (["heap", "rocksdb"], list(VARIANTS), list(OPS))
    param_names = ["backend", "ttl", "op"]
    timeout = 120
    version = "state-over-raw-1"

    def setup(self, backend: str, ttl: str, op: str) -> None:
        fx, store, pools = state_fixture(backend, ttl), raw_fixture(backend), shared_pools()
        state_fn, raw_fn = OPS[op], RAW[backend][op]
        self.state = lambda: state_fn(fx, pools)
        self.raw = lambda: raw_fn(store, pools)

    def track_state_over_raw(self, backend: str, ttl: str, op: str) -> float:
        return interleaved_ratio(self.state, self.raw)

    track_state_over_raw.unit = "ratio"  # type: ignore[attr-defined]
