"""The five TTL state types: decorators over a raw value/list/map state of stored units
`(user_value, last_access_ts)`, as Flink's runtime/state/ttl (docs/ttl.md, "Flink's rules").

Where each rule lives:
- expiry: `backends/ttl/expiry.py`; here every access computes one cutoff and asks
  `is_expired(ts, cutoff)` of each unit; every unit written is `units.stamped(value, now)`.
  The methods that call them are compiled with the calls inlined (`@inline`, backends/ttl/
  inline.py): the comparison is written only in expiry.py, and costs no call here;
- the read path (delete-on-read, visibility, refresh-on-read, read counter, timer
  registration): `_TtlState._get_with_ttl_check`, Flink's getWithTtlCheckAndUpdate, used by
  values, reducing results, aggregating accumulators, map entries (get, contains, iteration)
  and list elements;
- the merge rule of reducing/aggregating add: `_TtlState._usable_old`;
- the list rules (one rewrite of the whole list on read, a fully expired list cleared when
  iterated to its end): `TtlListState` and `TtlListView`.

One fast path stays, because the benchmarks show it pays: `TtlValueStateNoHooks`, picked by
`ttl_state` for a value state with no access hook and no timers. tests/state/test_fast_paths.py
drives it against the generic `TtlValueState` on random operation sequences.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from backends import descriptors as d
from backends.storage.base import ABSENT
from backends.ttl.context import TtlContext
from backends.ttl.expiry import expiration_ts, expiry_cutoff, is_expired
from backends.ttl.inline import inline
from backends.ttl.units import stamped
from backends.types import TypeInformation


def _none_error(what: str) -> TypeError:
    return TypeError(f"You cannot {what} None to a ListState.")


class _TtlState:
    """Config-derived fields and the rules shared by every TTL state (AbstractTtlDecorator).

    Hot paths read these as instance attributes, not through `ctx`: in Python every attribute
    hop costs about what the dict write the state ultimately does."""

    def __init__(self, raw: Any, ctx: TtlContext, value_type: TypeInformation) -> None:
        self._raw = raw
        self._now_fn = ctx.now
        self._ttl = ctx.ttl
        self._refresh = ctx.refresh_on_read
        self._return_expired = ctx.return_expired
        self._counters = ctx.counters
        self._read_lags = ctx.counters.lags["read"]
        self._access = ctx.on_access
        self._timers = ctx.timers
        self._check = value_type.check

    @inline(is_expired, stamped)
    def _get_with_ttl_check(
        self, stored: Any, user_key: Any = ABSENT, ref: Any = None,
        now: int | None = None, cutoff: int | None = None,
    ) -> Any:
        """The read path for one stored unit; the user value, or ABSENT if none is visible.

        Absent: ABSENT. Expired: deleted at once under both visibilities (counted as a read-time
        removal), its value returned only under ReturnExpiredIfNotCleanedUp, never re-stamped.
        Unexpired: under OnReadAndWrite written back stamped with `now`. `ref` addresses the
        unit's key when it may no longer be the current one (a lazy iteration); `now` and
        `cutoff` are the iteration's, or read from the clock here."""
        if not stored:  # None (value) or ABSENT (map entry); a unit is a 2-tuple, never falsy
            return ABSENT
        if now is None:
            now = self._now_fn()
            cutoff = expiry_cutoff(now, self._ttl)
        if is_expired(stored[1], cutoff):  # type: ignore[arg-type]
            removed = self._delete_unit(ref, user_key)
            if removed:
                self._counters.read += removed
                self._read_lags.record(cutoff - stored[1])  # type: ignore[operator]
            return stored[0] if self._return_expired else ABSENT
        if self._refresh:
            self._rewrite_unit(ref, user_key, stamped(stored[0], now))
        return stored[0]

    def _delete_unit(self, ref: Any, user_key: Any) -> int:
        """Delete one expired unit; returns the units removed."""
        raise NotImplementedError  # pragma: no cover - each state type says what a unit is

    def _rewrite_unit(self, ref: Any, user_key: Any, unit: tuple) -> None:
        """Write one refreshed unit back (OnReadAndWrite)."""
        raise NotImplementedError  # pragma: no cover

    def _register(self, now: int, ref: Any = None, user_key: Any = ABSENT) -> None:
        """Tell the expiry index (timer cleanup) that the unit written at `now` expires."""
        if ref is None:
            ref = self._raw.current_ref()
        self._timers.register(expiration_ts(now, self._ttl), ref, user_key)

    @inline(is_expired)
    def _usable_old(self, now: int) -> Any:
        """The merge rule of reducing and aggregating add (TtlReducingFunction): the
        stored value or accumulator if "usable" at `now` (present, and unexpired or visible
        under ReturnExpiredIfNotCleanedUp, where it comes back to life), else ABSENT. The
        caller stamps the merged result with the same `now`."""
        old = self._raw.value()
        if old is None:
            return ABSENT
        if self._return_expired or not is_expired(old[1], expiry_cutoff(now, self._ttl)):
            return old[0]
        return ABSENT

    def clear(self) -> None:
        if self._access is not None:
            self._access()
        self._raw.clear()


class _TtlSingleValue(_TtlState):
    """A raw value state holding one unit per key: value, reducing and aggregating states."""

    def _read(self) -> Any:
        if self._access is not None:
            self._access()
        value = self._get_with_ttl_check(self._raw.value())
        return None if value is ABSENT else value

    @inline(stamped)
    def _write(self, value: Any, now: int) -> None:
        self._raw.update(stamped(value, now))
        if self._timers is not None:
            self._register(now)

    # A single value is only ever read for the current key: `ref` and `user_key` are unused.
    def _delete_unit(self, ref: Any, user_key: Any) -> int:
        self._raw.clear()
        return 1

    def _rewrite_unit(self, ref: Any, user_key: Any, unit: tuple) -> None:
        self._raw.update(unit)
        if self._timers is not None:
            self._register(unit[1])


class TtlValueState(_TtlSingleValue):
    """ValueState with TTL: value(), update(v), clear(); update(None) clears."""

    def value(self) -> Any:
        return self._read()

    def update(self, value: Any) -> None:
        if self._access is not None:
            self._access()
        if value is None:
            self._raw.clear()
        else:
            self._write(self._check(value), self._now_fn())


class TtlValueStateIncremental:
    """TtlValueState with incremental cleanup and no timers index (the heap's default TTL in
    Flink): TtlValueStateNoHooks' closures, each run after the cleanup step, as the generic
    class runs it (on `value`, `update` and `clear`).

    Why a class of its own: with Flink's default cleanup every value access runs the step, and
    the generic read path cost as much as the step itself. tests/state/test_fast_paths.py
    checks it against TtlValueState with the same step.
    """

    __slots__ = ("clear", "update", "value")

    def __init__(self, raw: Any, ctx: TtlContext, value_type: TypeInformation) -> None:
        access = ctx.on_access
        if access is None or ctx.timers is not None:
            raise ValueError("TtlValueStateIncremental needs an access hook and no timers")
        read = _value_reader_no_hooks(raw, ctx)
        write = _value_writer_no_hooks(raw, ctx, value_type)
        raw_clear = raw.clear

        def value() -> Any:
            access()
            return read()

        def update(value: Any) -> None:
            access()
            write(value)

        def clear() -> None:
            access()
            raw_clear()

        self.value, self.update, self.clear = value, update, clear


class TtlValueStateNoHooks:
    """TtlValueState when no incremental-cleanup hook runs on access and no timers index
    writes: Flink's rules, with `value` and `update` as closures rather than methods.

    Why a class of its own: the benchmarks' most frequent operations are a value read and a
    value write. A closure reads its cells where a method reads instance attributes, and the
    generic read also calls `_get_with_ttl_check` and `expiry_cutoff`. Over the same raw state,
    the ttl_nobg value_get / value_update loops of bench/state_ops.py took 1.21x / 1.22x the
    time with the generic TtlValueState on the heap, 1.06x / 1.00x on RocksDB (medians of 9
    interleaved rounds). `value`, `update` and `clear` are attributes set here and nowhere
    else; tests/state/test_fast_paths.py checks them against TtlValueState.
    """

    __slots__ = ("clear", "update", "value")

    def __init__(self, raw: Any, ctx: TtlContext, value_type: TypeInformation) -> None:
        if ctx.on_access is not None or ctx.timers is not None:
            raise ValueError("TtlValueStateNoHooks needs a state without access hook and timers")
        self.value = _value_reader_no_hooks(raw, ctx)
        self.update = _value_writer_no_hooks(raw, ctx, value_type)
        self.clear = raw.clear


@inline(expiry_cutoff, is_expired, stamped)
def _value_reader_no_hooks(raw: Any, ctx: TtlContext) -> Callable[[], Any]:
    """`value()` of TtlValueStateNoHooks: `_get_with_ttl_check` for one value, as a closure
    (with the rules inlined: a call cost ~7% of a heap TTL read)."""
    raw_value, raw_update, raw_clear = raw.value, raw.update, raw.clear
    now_fn, ttl, refresh = ctx.now, ctx.ttl, ctx.refresh_on_read
    return_expired, counters = ctx.return_expired, ctx.counters
    read_lags = counters.lags["read"]

    def value() -> Any:
        stored = raw_value()
        if stored is None:
            return None
        now = now_fn()
        if is_expired(stored[1], expiry_cutoff(now, ttl)):  # inline: no local for the cutoff
            raw_clear()
            counters.read += 1
            read_lags.record(expiry_cutoff(now, ttl) - stored[1])
            return stored[0] if return_expired else None
        if refresh:
            raw_update(stamped(stored[0], now))
        return stored[0]

    return value


@inline(stamped)
def _value_writer_no_hooks(
    raw: Any, ctx: TtlContext, value_type: TypeInformation
) -> Callable[[Any], None]:
    """`update(v)` of TtlValueStateNoHooks: store `(v, now)`, clear on None. The heap's raw
    value state writes the stamped unit itself (one call, see HeapRawValue.stamped_writer)."""
    stamped_writer = getattr(raw, "stamped_writer", None)
    if stamped_writer is not None:
        return stamped_writer(value_type.check, ctx.now)
    raw_update, raw_clear, check, now_fn = raw.update, raw.clear, value_type.check, ctx.now

    def update(value: Any) -> None:
        if value is None:
            raw_clear()
        else:
            raw_update(stamped(check(value), now_fn()))

    return update


class TtlReducingState(_TtlSingleValue):
    """ReducingState with TTL: add(v) reduces into the stored value with the TTL-aware rule."""

    def __init__(
        self, raw: Any, ctx: TtlContext, value_type: TypeInformation, reduce: Any
    ) -> None:
        super().__init__(raw, ctx, value_type)
        self._reduce = reduce

    def get(self) -> Any:
        return self._read()

    def add(self, value: Any) -> None:
        if self._access is not None:
            self._access()
        if value is None:
            raise TypeError("You cannot add None to a ReducingState.")
        value = self._check(value)
        now = self._now_fn()
        old = self._usable_old(now)
        if old is not ABSENT:
            value = self._check(self._reduce(old, value))
        self._write(value, now)


class TtlAggregatingState(_TtlSingleValue):
    """AggregatingState with TTL: the stored unit is the accumulator; get() is get_result()."""

    def __init__(
        self, raw: Any, ctx: TtlContext, acc_type: TypeInformation, agg_function: Any
    ) -> None:
        super().__init__(raw, ctx, acc_type)
        self._agg = agg_function

    def get(self) -> Any:
        acc = self._read()
        return None if acc is None else self._agg.get_result(acc)

    def add(self, value: Any) -> None:
        if self._access is not None:
            self._access()
        now = self._now_fn()
        acc = self._usable_old(now)
        if acc is ABSENT:
            acc = self._agg.create_accumulator()
        self._write(self._check(self._agg.add(value, acc)), now)


class TtlListView:
    """The lazy iterable `TtlListState.get()` returns.

    Each element goes through the read path: unexpired ones are yielded, expired ones only
    under ReturnExpired. Reaching the end with no unexpired element clears the whole list, as
    Flink's IteratorWithCleanup does.
    """

    __slots__ = ("_cleared", "_cutoff", "_now", "_ref", "_state", "_stored")

    def __init__(self, state: TtlListState, stored: list, now: int, cutoff: int,
                 ref: Any) -> None:
        self._state, self._stored, self._ref = state, stored, ref
        self._now, self._cutoff = now, cutoff
        self._cleared = False

    @inline(is_expired, stamped)
    def __iter__(self) -> Iterator[Any]:
        state, cutoff = self._state, self._cutoff
        any_unexpired = False
        for value, ts in self._stored:
            if not is_expired(ts, cutoff):
                # Unexpired: the read path has nothing to do for a list element (a refresh
                # rewrote the whole list in get()), so it is skipped for speed.
                any_unexpired = True
                yield value
            elif state._get_with_ttl_check(
                stamped(value, ts), ABSENT, self._ref, self._now, cutoff
            ) is not ABSENT:
                yield value
        if not any_unexpired and not self._cleared and self._stored:
            self._cleared = True
            state._clear_fully_expired(self._ref, self._stored, cutoff)


class TtlListState(_TtlState):
    """ListState with per-element TTL."""

    def get(self) -> Iterable[Any]:
        if self._access is not None:
            self._access()
        stored = self._raw.get()
        if not stored:
            return ()
        now = self._now_fn()
        cutoff = expiry_cutoff(now, self._ttl)
        ref = self._raw.current_ref()
        if self._refresh:
            self._refresh_list(stored, now, cutoff, ref)
        return TtlListView(self, stored, now, cutoff, ref)

    @inline(is_expired, stamped)
    def _refresh_list(self, stored: list, now: int, cutoff: int, ref: Any) -> None:
        """OnReadAndWrite (Flink's TtlListState.updateTs): the unexpired elements are written
        back stamped with now, in one update, if there is any; the expired ones are dropped."""
        refreshed = [stamped(v, now) for v, ts in stored if not is_expired(ts, cutoff)]
        if refreshed:
            if len(refreshed) < len(stored):
                self._counters.read += len(stored) - len(refreshed)
                self._read_lags.record_many(
                    cutoff - ts for _, ts in stored if is_expired(ts, cutoff))
            self._raw.update(refreshed)
            if self._timers is not None:
                self._register(now, ref)

    def _delete_unit(self, ref: Any, user_key: Any) -> int:
        """Elements are never deleted one by one: an OnReadAndWrite read drops the
        expired ones when it rewrites the list, and a fully expired list is cleared whole."""
        return 0

    def _rewrite_unit(self, ref: Any, user_key: Any, unit: tuple) -> None:
        """Nothing per element: `_refresh_list` rewrote the whole list."""

    def _clear_fully_expired(self, ref: Any, stored: list, cutoff: int) -> None:
        current = self._raw.ref_get(ref)
        if current is not None and len(current) == len(stored):
            self._raw.ref_delete(ref)
            self._counters.read += len(stored)
            self._read_lags.record_many(cutoff - ts for _, ts in stored)

    @inline(stamped)
    def add(self, value: Any) -> None:
        if self._access is not None:
            self._access()
        if value is None:
            raise _none_error("add")
        now = self._now_fn()
        self._raw.add(stamped(self._check(value), now))
        if self._timers is not None:
            self._register(now)

    @inline(stamped)
    def _wrap_all(self, values: Any, what: str) -> list:
        if values is None:
            raise TypeError(f"List of values to {what} cannot be None.")
        now = self._now_fn()
        check = self._check
        out = []
        for v in values:
            if v is None:
                raise _none_error(what)
            out.append(stamped(check(v), now))
        return out

    def add_all(self, values: Iterable[Any]) -> None:
        if self._access is not None:
            self._access()
        wrapped = self._wrap_all(values, "add")
        if wrapped:
            self._raw.add_all(wrapped)
            if self._timers is not None:
                self._register(wrapped[0][1])

    def update(self, values: Iterable[Any]) -> None:
        if self._access is not None:
            self._access()
        wrapped = self._wrap_all(values, "update")
        self._raw.update(wrapped)
        if wrapped and self._timers is not None:
            self._register(wrapped[0][1])


class TtlMapState(_TtlState):
    """MapState with per-entry TTL; is_empty() ignores TTL (Flink 2.x)."""

    def __init__(
        self,
        raw: Any,
        ctx: TtlContext,
        key_type: TypeInformation,
        value_type: TypeInformation,
    ) -> None:
        super().__init__(raw, ctx, value_type)
        self._check_key = key_type.check

    def _check_value(self, value: Any) -> Any:
        return None if value is None else self._check(value)

    def _delete_unit(self, ref: Any, user_key: Any) -> int:
        if ref is None:
            self._raw.remove(user_key)
        else:
            self._raw.ref_remove_entries(ref, (user_key,))
        return 1

    def _rewrite_unit(self, ref: Any, user_key: Any, unit: tuple) -> None:
        if ref is None:
            self._raw.put(user_key, unit)
        else:
            self._raw.ref_put_entry(ref, user_key, unit)
        if self._timers is not None:
            self._register(unit[1], ref, user_key)

    def get(self, user_key: Any) -> Any:
        if self._access is not None:
            self._access()
        user_key = self._check_key(user_key)
        value = self._get_with_ttl_check(self._raw.get(user_key), user_key)
        return None if value is ABSENT else value

    def contains(self, user_key: Any) -> bool:
        if self._access is not None:
            self._access()
        user_key = self._check_key(user_key)
        return self._get_with_ttl_check(self._raw.get(user_key), user_key) is not ABSENT

    @inline(stamped)
    def put(self, user_key: Any, value: Any) -> None:
        if self._access is not None:
            self._access()
        user_key = self._check_key(user_key)
        now = self._now_fn()
        self._raw.put(user_key, stamped(self._check_value(value), now))
        if self._timers is not None:
            self._register(now, None, user_key)

    @inline(stamped)
    def put_all(self, entries: dict | None) -> None:
        if self._access is not None:
            self._access()
        if not entries:
            return
        now = self._now_fn()  # one timestamp for the whole put_all, as Flink
        wrapped = {self._check_key(k): stamped(self._check_value(v), now)
                   for k, v in entries.items()}
        self._raw.put_all(wrapped)
        if self._timers is not None:
            ref = self._raw.current_ref()
            for uk in wrapped:
                self._register(now, ref, uk)

    def remove(self, user_key: Any) -> None:
        if self._access is not None:
            self._access()
        self._raw.remove(self._check_key(user_key))

    def items(self) -> Iterator[tuple[Any, Any]]:
        """Lazy: each visited entry goes through the read path (expired ones are removed)."""
        if self._access is not None:
            self._access()
        entries = self._raw.items()
        return self._iterate(entries, self._raw.current_ref() if entries else None)

    @inline(is_expired)
    def _iterate(self, entries: list, ref: Any) -> Iterator[tuple[Any, Any]]:
        now = self._now_fn()
        cutoff = expiry_cutoff(now, self._ttl)
        check = self._get_with_ttl_check
        quick = not self._refresh
        for uk, stored in entries:
            if quick and not is_expired(stored[1], cutoff):
                # Unexpired and nothing to refresh: the read path would only return the value.
                yield uk, stored[0]
                continue
            value = check(stored, uk, ref, now, cutoff)
            if value is not ABSENT:
                yield uk, value

    def keys(self) -> Iterator[Any]:
        return (k for k, _ in self.items())

    def values(self) -> Iterator[Any]:
        return (v for _, v in self.items())

    def __iter__(self) -> Iterator[Any]:
        return self.keys()

    def is_empty(self) -> bool:
        if self._access is not None:
            self._access()
        return self._raw.is_empty()


def ttl_state(desc: d.StateDescriptor, raw: Any, ctx: TtlContext) -> Any:
    """The TTL state for a descriptor: the generic class of its kind, or the named fast class
    where one applies (a value state without timers: with or without an access hook)."""
    if isinstance(desc, d.MapStateDescriptor):
        return TtlMapState(raw, ctx, desc.key_type_info, desc.type_info)
    if isinstance(desc, d.ListStateDescriptor):
        return TtlListState(raw, ctx, desc.type_info)
    if isinstance(desc, d.ReducingStateDescriptor):
        return TtlReducingState(raw, ctx, desc.type_info, desc.reduce)
    if isinstance(desc, d.AggregatingStateDescriptor):
        return TtlAggregatingState(raw, ctx, desc.type_info, desc.agg_function)
    if ctx.timers is None:
        if ctx.on_access is None:
            return TtlValueStateNoHooks(raw, ctx, desc.type_info)
        return TtlValueStateIncremental(raw, ctx, desc.type_info)
    return TtlValueState(raw, ctx, desc.type_info)
