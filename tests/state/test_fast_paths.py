"""Each fast path is a named class the factory picks; here each is driven against the generic
path on the same random operation sequences, on both backends: every read, every error, the
physical entries and the cleanup counts must be the same.

The fast classes: TtlValueStateNoHooks (a value state with no access hook and no timers) and
TtlValueStateIncremental (the heap's incremental-cleanup step as access hook, no timers).
"""

from __future__ import annotations

import tempfile
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import backends as B
from backends.cleanup.incremental import IncrementalCleanup
from backends.ttl.context import TtlContext
from backends.ttl.states import TtlValueState, TtlValueStateIncremental, TtlValueStateNoHooks
from backends.types import INT64_MAX
from tests.state.helpers import NEVER, OCW, ORW, RETURN, ttl, value_desc

TYPES = {"LONG": B.Types.LONG, "INT": B.Types.INT, "STRING": B.Types.STRING}
VALUES = st.one_of(
    st.none(),
    st.integers(-(1 << 40), 1 << 40),
    st.sampled_from([2**31, -(2**31) - 1, 2**63, True, 1.5]),  # out of range / wrong type
    st.text(max_size=3),
)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("key"), st.sampled_from(["a", "b", 7, b"z"])),
        st.tuples(st.just("advance"), st.sampled_from([0, 1, 5, 30, 99, 100, 250])),
        st.tuples(st.just("jump"), st.sampled_from([-1000, INT64_MAX - 150, INT64_MAX])),
        st.tuples(st.just("update"), VALUES),
        st.tuples(st.just("value"), st.none()),
        st.tuples(st.just("clear"), st.none()),
    ),
    max_size=60,
)


def _apply(backend: Any, clock: B.ManualClock, state: Any, ops: list) -> list:
    """Run the operations; the outcome of each (a result, or the error's type and text)."""
    out: list = []
    backend.set_current_key("a")
    for op, arg in ops:
        try:
            if op == "key":
                backend.set_current_key(arg)
            elif op == "advance":
                clock.set(min(clock.now() + arg, INT64_MAX))
            elif op == "jump":
                clock.set(arg)
            elif op == "update":
                state.update(arg)
            elif op == "value":
                out.append(("value", state.value()))
            else:
                state.clear()
        except (TypeError, ValueError) as err:
            out.append((op, type(err).__name__, str(err)))
    out.append(("physical", backend.physical_entries("v")))
    out.append(("counts", backend.cleanup_counts()["v"]))
    return out


def _generic_twin(backend: Any, clock: B.ManualClock, desc: Any) -> TtlValueState:
    """The generic TtlValueState over the raw state and counters `desc` registered."""
    backend.get_state(desc)
    ctx = TtlContext(desc.ttl_config, clock.now, backend.counters(desc.name))
    return TtlValueState(backend.raw_state(desc.name), ctx, desc.type_info)


@pytest.mark.parametrize("kind", ["heap", "rocksdb"])
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS, update=st.sampled_from([OCW, ORW]), visibility=st.sampled_from([NEVER, RETURN]),
       type_name=st.sampled_from(sorted(TYPES)))
def test_value_state_no_hooks_equals_the_generic_path(
    kind: str, ops: list, update: Any, visibility: Any, type_name: str
) -> None:
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="statebench-fast-") as tmp:
        for fast in (True, False):
            clock = B.ManualClock(0)
            options = {"path": f"{tmp}/{fast}"} if kind == "rocksdb" else {}
            backend = B.create_backend(kind, clock=clock, **options)
            try:
                desc = value_desc(ttl(100, update=update, visibility=visibility),
                                  typ=TYPES[type_name]())
                if fast:
                    state = backend.get_state(desc)
                    assert isinstance(state, TtlValueStateNoHooks)
                else:
                    state = _generic_twin(backend, clock, desc)
                outcomes.append(_apply(backend, clock, state, ops))
            finally:
                backend.close()
    assert outcomes[0] == outcomes[1]


@settings(max_examples=40, deadline=None)
@given(ops=OPS, update=st.sampled_from([OCW, ORW]), visibility=st.sampled_from([NEVER, RETURN]),
       size=st.sampled_from([1, 2, 5]))
def test_value_state_incremental_equals_the_generic_path(
    ops: list, update: Any, visibility: Any, size: int
) -> None:
    """Both variants see the same keys expire and get removed by the same walk: one
    incremental iterator each (the twin's, built here, over the same raw state)."""
    outcomes = []
    for fast in (True, False):
        clock = B.ManualClock(0)
        backend = B.create_backend("heap", clock=clock)
        try:
            desc = value_desc(ttl(100, update=update, visibility=visibility,
                                  incremental=(size, False)))
            state = backend.get_state(desc)
            if fast:
                assert isinstance(state, TtlValueStateIncremental)
            else:
                raw = backend.raw_state(desc.name)
                ctx = TtlContext(desc.ttl_config, clock.now, backend.counters(desc.name))
                ctx.on_access = IncrementalCleanup(raw, ctx, size).step
                state = TtlValueState(raw, ctx, desc.type_info)
            for key in range(12):  # keys for the walk to visit
                backend.set_current_key(f"pre{key}")
                state.update(key)
            outcomes.append(_apply(backend, clock, state, ops))
        finally:
            backend.close()
    assert outcomes[0] == outcomes[1]


def test_the_factory_picks_the_generic_class_when_timers_run(make_backend, clock) -> None:
    heap = make_backend("heap", clock)
    assert isinstance(heap.get_state(value_desc(ttl(100, background=True))),
                      TtlValueStateIncremental)
    assert isinstance(heap.get_state(value_desc(ttl(100, timers=0), name="t")), TtlValueState)
    assert isinstance(heap.get_state(value_desc(ttl(100), name="n")), TtlValueStateNoHooks)


def test_the_fast_class_refuses_a_context_with_hooks(make_backend, clock) -> None:
    backend = make_backend("heap", clock)
    desc = value_desc(ttl(100))
    backend.get_state(desc)
    ctx = TtlContext(desc.ttl_config, clock.now, backend.counters("v"), on_access=lambda: None)
    with pytest.raises(ValueError, match="access hook"):
        TtlValueStateNoHooks(backend.raw_state("v"), ctx, desc.type_info)
    with pytest.raises(ValueError, match="access hook"):
        TtlValueStateIncremental(backend.raw_state("v"), TtlContext(
            desc.ttl_config, clock.now, backend.counters("v")), desc.type_info)
