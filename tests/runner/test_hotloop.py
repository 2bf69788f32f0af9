"""The generated hot loop (workloads/run/hotloop.py): every variant against a plain reference.

Each variant is one flag combination: per-record latency stamps on/off, the expired-read check
on/off, OnReadAndWrite refresh of the check's shadow, and the clock (event time, a simulated
processing time, or a clock read per record as the wall-clock compaction-filter scenario does).
Each runs over the same random events, with every op, on a real heap backend with each cleanup
strategy, next to an obviously correct loop written out below; both must return the same
values and leave the same state, shadow and cleanup counters behind. Tracebacks from inside the
generated code show its source lines.
"""

from __future__ import annotations

import itertools
import linecache
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import backends
from backends.keygroups import KeyGroupRange
from workloads.ops import Op
from workloads.run.config import OperatorConfig
from workloads.run.hotloop import NEVER_WRITTEN, StateCalls, build_loop, loop_filename
from workloads.run.state_setup import descriptors, register_states

TTL_MS = 40
EVENTS = 3_000
KEYS = 40
MAP_KEYS = 5
TIME_MODES = ("event", "processing", "wall")
#: (strategy, visibility): the cleanups change what reads return and what state holds;
#: ReturnExpiredIfNotCleanedUp lets expired reads through, so the check counts some.
CLEANUPS = (
    ("none", "ReturnExpiredIfNotCleanedUp"),
    ("full_snapshot", "NeverReturnExpired"),
    ("incremental(3, true)", "NeverReturnExpired"),
    ("timer", "ReturnExpiredIfNotCleanedUp"),
)


def events(seed: int = 5) -> tuple[list[int], ...]:
    """Keys, non-decreasing timestamps (with repeats, so the clock skips equal times), every op
    code, long values and map keys."""
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.integers(0, 3, EVENTS)).tolist()
    ops = rng.choice([int(op) for op in Op], EVENTS).tolist()
    return (rng.integers(0, KEYS, EVENTS).tolist(), ts, ops,
            rng.integers(0, 1_000, EVENTS).tolist(), rng.integers(0, MAP_KEYS, EVENTS).tolist())


def reference_loop(
    calls: StateCalls, set_key: Callable, set_time: Callable | None, now: Callable | None,
    shadow: dict | None, ttl: int, refresh: bool,
    cols: tuple[list, ...], app: Callable | None, last_t: Any,
) -> tuple[int, Any]:
    """What every variant must do, one readable step at a time."""
    bad = 0
    for k, t, op, v, mk in zip(*cols):
        if app is not None:
            app(0)
        if set_time is None:
            t = now()
        elif t != last_t:
            set_time(t)
            last_t = t
        set_key(k)
        op = Op(op)
        if op in (Op.VALUE_GET, Op.VALUE_RMW):
            r = calls.v_get()
            if shadow is not None and r is not None:
                if shadow.get(k, NEVER_WRITTEN) + ttl <= t:
                    bad += 1
                elif refresh:
                    shadow[k] = now() if set_time is None else t
        if op in (Op.VALUE_UPDATE, Op.VALUE_RMW):
            calls.v_update(v)
            if shadow is not None:
                shadow[k] = now() if set_time is None else t
        elif op == Op.VALUE_CLEAR:
            calls.v_clear()
            if shadow is not None:
                shadow.pop(k, None)
        elif op == Op.LIST_ADD:
            calls.l_add(v)
        elif op == Op.LIST_GET:
            list(calls.l_get())
        elif op == Op.MAP_PUT:
            calls.m_put(mk, v)
        elif op == Op.MAP_GET:
            calls.m_get(mk)
        elif op == Op.MAP_ITERATE:
            list(calls.m_items())
        elif op == Op.MAP_REMOVE:
            calls.m_remove(mk)
        elif op == Op.REDUCING_ADD:
            calls.r_add(v)
        elif op == Op.AGGREGATING_ADD:
            calls.a_add(v)
    return bad, last_t


@dataclass
class Lane:
    """One heap backend with every state registered, its clocks, and the loop's inputs."""

    cfg: OperatorConfig
    mode: str
    clock: Any = None
    backend: Any = None
    calls: StateCalls = field(default_factory=StateCalls)

    def __post_init__(self) -> None:
        self.clock = backends.ManualClock(0)
        self.backend = backends.create_backend(
            "heap", clock=self.clock, max_parallelism=128,
            key_group_range=KeyGroupRange.of_operator(0, 1, 128))
        self.calls = register_states(self.backend, descriptors(self.cfg))

    def set_time(self) -> Callable[[int], None] | None:
        if self.mode == "wall":
            return None
        return self.backend.event_clock.set if self.mode == "event" else self.clock.set

    def now(self) -> int:
        """A deterministic stand-in for the wall clock: 1 ms later at every read."""
        self.clock.set(self.clock.now() + 1)
        return self.clock.now()

    def contents(self) -> list[tuple[str, Any, Any]]:
        out = []
        for name in self.cfg.state_types:
            for _kg, key, unit in self.backend.raw_state(name).iter_entries():
                shown = sorted(unit.items()) if isinstance(unit, dict) else unit
                out.append((name, key, shown))
        return sorted(out, key=repr)


def config(strategy: str, visibility: str, update_type: str, mode: str) -> OperatorConfig:
    return OperatorConfig(
        run_id="t", workload="loop", backend="heap", strategy=strategy, value_type="long",
        state_types=("value", "list", "map", "reducing", "aggregating"), ttl_ms=TTL_MS,
        update_type=update_type, visibility=visibility,
        time_characteristic="EventTime" if mode == "event" else "ProcessingTime",
        start_ms=0, end_ms=10_000, sample_interval_ms=1_000)


@pytest.mark.parametrize(("strategy", "visibility"), CLEANUPS)
@pytest.mark.parametrize("mode", TIME_MODES)
@pytest.mark.parametrize(("stamp", "verify", "refresh"),
                         [c for c in itertools.product((False, True), repeat=3)
                          if c[1] or not c[2]])  # refresh only changes the verifying loop
def test_every_variant_matches_the_reference_loop(
    strategy: str, visibility: str, mode: str, stamp: bool, verify: bool, refresh: bool,
) -> None:
    update_type = "OnReadAndWrite" if refresh else "OnCreateAndWrite"
    cfg = config(strategy, visibility, update_type, mode)
    fast, plain = Lane(cfg, mode), Lane(cfg, mode)
    cols = events()
    shadow_fast: dict | None = {} if verify else None
    shadow_plain: dict | None = {} if verify else None
    loop = build_loop(fast.calls, fast.backend.set_current_key, fast.set_time(), fast.now,
                      shadow_fast, TTL_MS, stamp=stamp, refresh=refresh)
    stamps_fast: list[int] = []
    stamps_plain: list[int] = []
    half = EVENTS // 2  # two calls, as the operator makes per batch: last_t carries over
    got_t: Any = None
    want_t: Any = None
    got_bad = want_bad = 0
    for lo, hi in ((0, half), (half, EVENTS)):
        part = tuple(c[lo:hi] for c in cols)
        bad, got_t = loop(*part, stamps_fast.append if stamp else None, got_t)
        got_bad += bad
        bad, want_t = reference_loop(plain.calls, plain.backend.set_current_key,
                                     plain.set_time(), plain.now, shadow_plain, TTL_MS, refresh,
                                     part, stamps_plain.append if stamp else None, want_t)
        want_bad += bad
    assert (got_bad, got_t) == (want_bad, want_t)
    assert fast.contents() == plain.contents() and fast.contents()
    assert shadow_fast == shadow_plain
    assert fast.backend.cleanup_counts() == plain.backend.cleanup_counts()
    assert fast.clock.now() == plain.clock.now()
    assert len(stamps_fast) == len(stamps_plain) == (EVENTS if stamp else 0)
    if verify and strategy == "none":
        assert got_bad > 0  # nothing cleans up: the check really ran and saw expired reads
    if verify and visibility == "NeverReturnExpired":
        assert got_bad == 0
    fast.backend.close()
    plain.backend.close()


def test_a_traceback_from_inside_the_loop_shows_its_source_line() -> None:
    calls = StateCalls()

    def failing_get() -> None:
        raise KeyError("boom")

    calls.v_get = failing_get
    loop = build_loop(calls, lambda k: None, lambda t: None, None, {}, 10, stamp=True,
                      refresh=True)
    with pytest.raises(KeyError) as info:
        loop([1], [5], [int(Op.VALUE_GET)], [0], [0], [].append, None)
    name = loop_filename(stamp=True, verify=True, refresh=True, wall=False)
    frames = [f for f in traceback.extract_tb(info.value.__traceback__) if f.filename == name]
    assert [f.name for f in frames] == ["apply_records"]
    assert frames[0].line == "r = v_get()"
    text = "".join(traceback.format_exception(info.value))
    assert f'File "{name}"' in text and "r = v_get()" in text
    linecache.checkcache()  # a cache sweep keeps registered sources (their mtime is None)
    assert linecache.getline(name, frames[0].lineno).strip() == "r = v_get()"


def test_each_variant_has_its_own_source_name() -> None:
    names = {loop_filename(*flags) for flags in itertools.product((False, True), repeat=4)}
    assert len(names) == 16
