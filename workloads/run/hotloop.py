"""The operator's hot loop: apply a run of events to keyed state, one Python iteration each.

Why generated code: this loop is the harness's whole per-record overhead, and the variants differ
in lines that run per record (time the record or not, shadow-check expired reads or not, advance
a logical clock or read the wall clock). A runtime ``if flag:`` per record costs ~15-30 ns each;
generating one specialised function per flag combination (as ``collections.namedtuple`` does)
keeps a single readable template and leaves no dead branches in the loop. Each variant's source
is registered with ``linecache`` under its own name (:func:`loop_filename`), so a traceback
from inside the loop shows the line, and tests/runner/test_hotloop.py runs every variant against
a plain reference loop. Everything the loop
calls is a closure variable bound once (state methods, the clock setter, the shadow dict); ops
dispatch on small-int compares, most frequent first, never on strings.

Expired-read check (``verify``): the loop keeps a shadow ``key -> time of the last write`` (and of
the last refreshing read under OnReadAndWrite) for the value state. A value returned at time
``t`` whose shadow time ``s`` has ``s + ttl <= t`` was expired when read: under
NeverReturnExpired that is a bug, counted in ``expired_returned``. It is sound on a wall clock
too: the read time is taken *before* the read and the write time *after* the write, so the
shadow can only make a returned value look fresher than it is, never staler.
"""

from __future__ import annotations

import linecache
import time
from collections.abc import Callable
from functools import cache
from typing import Any

from workloads.ops import Op

NEVER_WRITTEN = -(1 << 62)

_TEMPLATE = """
def make(set_time, set_key, now, pc, v_get, v_update, v_clear, l_add, l_get, m_put, m_get,
         m_items, m_remove, r_add, a_add, shadow, ttl):
    shadow_get = shadow.get
    shadow_pop = shadow.pop

    def apply_records(keys, tss, ops, vals, mks, app, last_t):
        bad = 0
        for k, t, op, v, mk in zip(keys, tss, ops, vals, mks):
{STAMP}{CLOCK}            set_key(k)
            if op == {VALUE_GET}:
                r = v_get()
{CHECK_READ}            elif op == {VALUE_UPDATE}:
                v_update(v)
{NOTE_WRITE}            elif op == {LIST_ADD}:
                l_add(v)
            elif op == {MAP_PUT}:
                m_put(mk, v)
            elif op == {VALUE_RMW}:
                r = v_get()
{CHECK_READ}                v_update(v)
{NOTE_WRITE}            elif op == {MAP_GET}:
                m_get(mk)
            elif op == {REDUCING_ADD}:
                r_add(v)
            elif op == {LIST_GET}:
                for _ in l_get():
                    pass
            elif op == {MAP_ITERATE}:
                for _ in m_items():
                    pass
            elif op == {VALUE_CLEAR}:
                v_clear()
{NOTE_CLEAR}            elif op == {MAP_REMOVE}:
                m_remove(mk)
            elif op == {AGGREGATING_ADD}:
                a_add(v)
            else:
                raise ValueError(f"unknown op code {{op}}")
        return bad, last_t

    return apply_records
"""

_I3, _I4 = " " * 12, " " * 16


def _source(stamp: bool, verify: bool, refresh: bool, wall: bool) -> str:
    write_time = "now()" if wall else "t"
    clock = (
        f"{_I3}t = now()\n"
        if wall
        else f"{_I3}if t != last_t:\n{_I4}set_time(t)\n{_I4}last_t = t\n"
    )
    if verify:
        check = (
            f"{_I4}if r is not None:\n"
            f"{_I4}    if shadow_get(k, {NEVER_WRITTEN}) + ttl <= t:\n"
            f"{_I4}        bad += 1\n"
        )
        if refresh:
            check += f"{_I4}    else:\n{_I4}        shadow[k] = {write_time}\n"
        note_write = f"{_I4}shadow[k] = {write_time}\n"
        note_clear = f"{_I4}shadow_pop(k, None)\n"
    else:
        check = note_write = note_clear = ""
    codes = {op.name: int(op) for op in Op}
    return _TEMPLATE.format(
        STAMP=f"{_I3}app(pc())\n" if stamp else "",
        CLOCK=clock,
        CHECK_READ=check,
        NOTE_WRITE=note_write,
        NOTE_CLEAR=note_clear,
        **codes,
    )


def loop_filename(stamp: bool, verify: bool, refresh: bool, wall: bool) -> str:
    """The pseudo file name of one variant's source, as tracebacks and ``linecache`` show it."""
    flags = "".join(f"-{name}" for name, on in (("stamp", stamp), ("verify", verify),
                                                ("refresh", refresh), ("wall", wall)) if on)
    return f"<statebench-hotloop{flags}>"


@cache
def _factory(stamp: bool, verify: bool, refresh: bool, wall: bool) -> Callable[..., Any]:
    source = _source(stamp, verify, refresh, wall)
    filename = loop_filename(stamp, verify, refresh, wall)
    # as dataclasses and namedtuple do: the source goes into linecache under a file name of its
    # own (mtime None: linecache.checkcache keeps it), so tracebacks and pdb show the loop's
    # lines instead of nothing
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {}
    exec(compile(source, filename, "exec"), namespace)
    return namespace["make"]


def _unavailable(state: str) -> Callable[..., Any]:
    def call(*_args: Any) -> Any:
        raise RuntimeError(f"an event needs the {state} state; this operator did not register it")

    return call


class StateCalls:
    """Bound state methods the loop calls (a missing state raises if an event needs it)."""

    __slots__ = ("a_add", "l_add", "l_get", "m_get", "m_items", "m_put", "m_remove", "r_add",
                 "v_clear", "v_get", "v_update")

    def __init__(self) -> None:
        self.v_get = self.v_update = self.v_clear = _unavailable("value")
        self.l_add = self.l_get = _unavailable("list")
        self.m_put = self.m_get = self.m_items = self.m_remove = _unavailable("map")
        self.r_add = _unavailable("reducing")
        self.a_add = _unavailable("aggregating")


def build_loop(
    calls: StateCalls,
    set_key: Callable[[Any], None],
    set_time: Callable[[int], None] | None,
    now: Callable[[], int] | None,
    shadow: dict | None,
    ttl_ms: int | None,
    stamp: bool,
    refresh: bool,
) -> Callable[..., tuple[int, Any]]:
    """The specialised ``apply_records(keys, tss, ops, vals, mks, app, last_t)``.

    ``set_time`` advances a logical TTL clock to each record's timestamp (only when it changes);
    with ``set_time=None`` the clock runs by itself and ``now`` is read per record instead.
    ``shadow`` (with ``ttl_ms``) turns on the expired-read check; ``stamp`` turns on per-record
    timing: ``app(perf_counter_ns())`` before each record (``app`` is a list's append, given per
    call; a record's latency is the difference to the next stamp).
    It returns ``(expired values returned, last timestamp seen)``.
    """
    wall = set_time is None
    if wall and now is None:
        raise ValueError("a wall-clock loop needs now()")
    verify = shadow is not None and ttl_ms is not None
    make = _factory(stamp, verify, refresh and verify, wall)
    c = calls
    return make(
        set_time, set_key, now, time.perf_counter_ns, c.v_get, c.v_update, c.v_clear, c.l_add,
        c.l_get, c.m_put, c.m_get, c.m_items, c.m_remove, c.r_add, c.a_add,
        shadow if shadow is not None else {}, ttl_ms or 0,
    )
