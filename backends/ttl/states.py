"""The five TTL state types, each a decorator over a raw value/list/map state of stored units.

Semantics are flink-ttl-facts.md §1 to the letter; comments cite the rule where it is subtle.
Hot paths avoid attribute chains (bound methods are cached in __init__) because in Python every
lookup costs as much as the dict write the state ultimately does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from backends.storage.base import ABSENT
from backends.ttl.context import TtlContext
from backends.ttl.expiry import INT64_MAX, NOW_INFINITY
from backends.types import TypeInformation


def _none_error(what: str) -> TypeError:
    return TypeError(f"You cannot {what} None to a ListState.")


class _TtlBase:
    """Fields shared by every TTL state."""

    def __init__(self, raw: Any, ctx: TtlContext, value_type: TypeInformation) -> None:
        self._raw = raw
        self._ctx = ctx
        self._now_fn = ctx.now
        self._ttl = ctx.ttl
        self._refresh = ctx.refresh_on_read
        self._return_expired = ctx.return_expired
        self._counters = ctx.counters
        self._access = ctx.on_access
        self._timers = ctx.timers
        self._check = value_type.check

    def _now(self) -> int:
        now = self._now_fn()
        return NOW_INFINITY if now >= INT64_MAX else now

    def _register(self, now: int, user_key: Any = ABSENT) -> None:
        """Tell the expiry index (timer cleanup) when the unit written at `now` expires."""
        self._timers.register(now + self._ttl, self._raw.current_ref(), user_key)


class _TtlSingleValue(_TtlBase):
    """Generic read path (§1.5) over a raw value state holding one (value, ts) unit."""

    def _read(self) -> Any:
        if self._access is not None:
            self._access()
        stored = self._raw.value()
        if stored is None:
            return None
        now = self._now()
        if stored[1] + self._ttl <= now:
            # Expired: deleted right away under both visibilities; ReturnExpired returns it once.
            self._raw.clear()
            self._counters.read += 1
            return stored[0] if self._return_expired else None
        if self._refresh:
            self._raw.update((stored[0], now))
            if self._timers is not None:
                self._register(now)
        return stored[0]

    def _write(self, value: Any) -> None:
        now = self._now_fn()
        self._raw.update((value, now))
        if self._timers is not None:
            self._register(now)

    def clear(self) -> None:
        if self._access is not None:
            self._access()
        self._raw.clear()


class TtlValueState(_TtlSingleValue):
    """ValueState with TTL: value(), update(v), clear(); update(None) clears."""

    def __init__(self, raw: Any, ctx: TtlContext, value_type: TypeInformation) -> None:
        super().__init__(raw, ctx, value_type)
        if self._access is None and self._timers is None:
            # The raw state's stamped writer is the whole update (None clears): one call.
            self.update = raw.stamped_writer(self._check, self._now_fn)  # type: ignore
            if not self._refresh:
                self.value = _fast_value_read(self)  # type: ignore

    def value(self) -> Any:
        return self._read()

    def update(self, value: Any) -> None:
        if self._access is not None:
            self._access()
        if value is None:
            self._raw.clear()
        else:
            self._write(self._check(value))


def _fast_value_read(state: TtlValueState) -> Any:
    """value() for OnCreateAndWrite with no access hook: the generic read path as a closure."""
    raw_value, raw_clear = state._raw.value, state._raw.clear
    now_fn, ttl = state._now_fn, state._ttl
    return_expired, counters = state._return_expired, state._counters

    def value() -> Any:
        stored = raw_value()
        if stored is None:
            return None
        now = now_fn()
        if stored[1] + ttl <= now or now >= INT64_MAX:
            raw_clear()
            counters.read += 1
            return stored[0] if return_expired else None
        return stored[0]

    return value


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
        old = self._raw.value()
        # "Usable": present and unexpired, or expired under ReturnExpiredIfNotCleanedUp (the old
        # value then comes back to life, re-stamped with now). §1.4.
        if old is not None and (old[1] + self._ttl > self._now() or self._return_expired):
            value = self._check(self._reduce(old[0], value))
        self._write(value)


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
        old = self._raw.value()
        if old is not None and (old[1] + self._ttl > self._now() or self._return_expired):
            acc = old[0]
        else:
            acc = self._agg.create_accumulator()
        self._write(self._check(self._agg.add(value, acc)))


class TtlListView:
    """The lazy iterable `TtlListState.get()` returns (§1.6).

    Iterating yields unexpired elements (and expired ones under ReturnExpired); reaching the end
    with no unexpired element clears the whole list, as Flink's IteratorWithCleanup does.
    """

    __slots__ = ("_cleared", "_now", "_ref", "_state", "_stored")

    def __init__(self, state: TtlListState, stored: list, now: int, ref: Any) -> None:
        self._state, self._stored, self._now, self._ref = state, stored, now, ref
        self._cleared = False

    def __iter__(self) -> Iterator[Any]:
        state, now, ttl = self._state, self._now, self._state._ttl
        return_expired = state._return_expired
        any_unexpired = False
        for value, ts in self._stored:
            if ts + ttl > now:
                any_unexpired = True
                yield value
            elif return_expired:
                yield value
        if not any_unexpired and not self._cleared and self._stored:
            self._cleared = True
            state._clear_fully_expired(self._ref, self._stored)


class TtlListState(_TtlBase):
    """ListState with per-element TTL."""

    def get(self) -> Iterable[Any]:
        if self._access is not None:
            self._access()
        stored = self._raw.get()
        if not stored:
            return ()
        now = self._now()
        ref = self._raw.current_ref()
        if self._refresh:
            ttl = self._ttl
            refreshed = [(v, now) for v, ts in stored if ts + ttl > now]
            if refreshed:
                # Only unexpired elements are written back: expired ones are physically dropped.
                dropped = len(stored) - len(refreshed)
                if dropped:
                    self._counters.read += dropped
                self._raw.update(refreshed)
                if self._timers is not None:
                    self._register(now)
        return TtlListView(self, stored, now, ref)

    def _clear_fully_expired(self, ref: Any, stored: list) -> None:
        current = self._raw.ref_get(ref)
        if current is not None and len(current) == len(stored):
            self._raw.ref_delete(ref)
            self._counters.read += len(stored)

    def add(self, value: Any) -> None:
        if self._access is not None:
            self._access()
        if value is None:
            raise _none_error("add")
        now = self._now_fn()
        self._raw.add((self._check(value), now))
        if self._timers is not None:
            self._register(now)

    def _wrap_all(self, values: Any, what: str) -> list:
        if values is None:
            raise TypeError(f"List of values to {what} cannot be None.")
        now = self._now_fn()
        check = self._check
        out = []
        for v in values:
            if v is None:
                raise _none_error(what)
            out.append((check(v), now))
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

    def clear(self) -> None:
        if self._access is not None:
            self._access()
        self._raw.clear()


class TtlMapState(_TtlBase):
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

    def _read_entry(self, user_key: Any) -> Any:
        """The generic read path for one entry; ABSENT when nothing is visible."""
        if self._access is not None:
            self._access()
        user_key = self._check_key(user_key)
        stored = self._raw.get(user_key)
        if stored is ABSENT:
            return ABSENT
        now = self._now()
        if stored[1] + self._ttl <= now:
            self._raw.remove(user_key)
            self._counters.read += 1
            return stored[0] if self._return_expired else ABSENT
        if self._refresh:
            self._raw.put(user_key, (stored[0], now))
            if self._timers is not None:
                self._register(now, user_key)
        return stored[0]

    def get(self, user_key: Any) -> Any:
        value = self._read_entry(user_key)
        return None if value is ABSENT else value

    def contains(self, user_key: Any) -> bool:
        return self._read_entry(user_key) is not ABSENT

    def put(self, user_key: Any, value: Any) -> None:
        if self._access is not None:
            self._access()
        user_key = self._check_key(user_key)
        now = self._now_fn()
        self._raw.put(user_key, (self._check_value(value), now))
        if self._timers is not None:
            self._register(now, user_key)

    def put_all(self, entries: dict | None) -> None:
        if self._access is not None:
            self._access()
        if not entries:
            return
        now = self._now_fn()  # one timestamp for the whole put_all, as Flink
        wrapped = {self._check_key(k): (self._check_value(v), now) for k, v in entries.items()}
        self._raw.put_all(wrapped)
        if self._timers is not None:
            for uk in wrapped:
                self._register(now, uk)

    def remove(self, user_key: Any) -> None:
        if self._access is not None:
            self._access()
        self._raw.remove(self._check_key(user_key))

    def items(self) -> Iterator[tuple[Any, Any]]:
        """Lazy: each visited entry goes through the read path (expired ones are removed)."""
        if self._access is not None:
            self._access()
        entries = self._raw.items()
        return self._iterate(entries)

    def _iterate(self, entries: list) -> Iterator[tuple[Any, Any]]:
        now = self._now()
        ttl, raw = self._ttl, self._raw
        ref = raw.current_ref() if entries else None
        expired_keys = []
        try:
            for uk, (value, ts) in entries:
                if ts + ttl <= now:
                    expired_keys.append(uk)
                    if self._return_expired:
                        yield uk, value
                    continue
                if self._refresh:
                    self._refresh_entry(ref, uk, value, now)
                yield uk, value
        finally:
            if expired_keys:
                raw.ref_remove_entries(ref, expired_keys)
                self._counters.read += len(expired_keys)

    def _refresh_entry(self, ref: Any, user_key: Any, value: Any, now: int) -> None:
        self._raw.ref_put_entry(ref, user_key, (value, now))
        if self._timers is not None:
            self._timers.register(now + self._ttl, ref, user_key)

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

    def clear(self) -> None:
        if self._access is not None:
            self._access()
        self._raw.clear()
