"""What every emulated operator shares: declared states, counted (and optionally traced) state
views, the event-time timer service whose timers are state, the watermark and the outputs.

An operator declares its states (:class:`StateDecl`: Flink's state name, shape and types, and
whether ``table.exec.state.ttl`` applies) and gets them bound to one backend as :class:`View`
objects. Every call through a view is one state access: it is counted (``accesses``, the
``state_ops_per_s`` of the run) and, when a trace list is given, appended to it as
``(state, method, *args)`` - what the hand-worked traces in the tests pin.

Timers (:class:`Timers`) are state, as in Flink: each registered timer is an entry of the
``event-timers`` map state of its key (map key: its timestamp and namespace, 16 bytes; value a
flag), so it is counted in live entries and bytes, written by checkpoints and restored; on
RocksDB it lives in RocksDB (Flink's ``state.backend.rocksdb.timer-service.factory = ROCKSDB``),
on heap in the heap backend (``HEAP``). The ordering index - which timer is due next - is an
in-memory heap beside it, as Flink's RocksDB priority queue caches its head in memory; a
registration of a timer already registered is a no-op without a state access
(``HeapPriorityQueueSet`` and ``RocksDBCachingPriorityQueueSet`` are sets). Timers carry no TTL.

Event time: the watermark is Flink's bounded-out-of-orderness one, ``max_ts - bound - 1``,
advanced before each record (Flink emits it every 200 ms of processing time: the emulation fires
timers as early as Flink could, never later); the end of input is a final watermark at
``+inf`` that fires every timer, as Flink's bounded sources end.
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import backends

#: Flink's ``Long.MAX_VALUE`` watermark at the end of a bounded input.
END_OF_INPUT = (1 << 63) - 1
TIMER_STATE = "event-timers"
_TIMER_KEY = struct.Struct(">qq")  # (timestamp, namespace), as Flink's timer key ends

#: One row of an operator's input: (event_type, ts, person_id, auction_id, price, category,
#: expires_ms) - workloads.nexmark's columns without the city.
Row = tuple[int, int, int, int, int, int, int]
#: One output record: a changelog kind ("+I", "-U", "+U", "-D") and the emitted values.
Output = tuple[Any, ...]


@dataclass(frozen=True)
class StateDecl:
    """One state an operator registers: Flink's name, its shape (value | map), the map key
    type and the value type, and whether the spec's TTL applies to it."""

    name: str
    shape: str
    value_type: Any
    key_type: Any = None
    ttl: bool = True

    def descriptor(self, ttl_config: backends.StateTtlConfig | None) -> backends.StateDescriptor:
        if self.shape == "value":
            desc: backends.StateDescriptor = backends.ValueStateDescriptor(self.name,
                                                                           self.value_type)
        elif self.shape == "map":
            desc = backends.MapStateDescriptor(self.name, self.key_type, self.value_type)
        else:
            raise ValueError(f"state {self.name}: unknown shape {self.shape!r}")
        if self.ttl and ttl_config is not None:
            desc.enable_time_to_live(ttl_config)
        return desc


class Access:
    """The access counter and optional trace every view of one operator shares."""

    def __init__(self, trace: list | None = None) -> None:
        self.count = 0
        self.trace = trace

    def log(self, *entry: Any) -> None:
        self.count += 1
        if self.trace is not None:
            self.trace.append(entry)


class View:
    """One registered state, every call a counted (and traced) state access."""

    def __init__(self, name: str, state: Any, access: Access) -> None:
        self.name, self._s, self._a = name, state, access

    # value state
    def value(self) -> Any:
        self._a.log(self.name, "value")
        return self._s.value()

    def update(self, v: Any) -> None:
        self._a.log(self.name, "update", v)
        self._s.update(v)

    def clear(self) -> None:
        self._a.log(self.name, "clear")
        self._s.clear()

    # map state
    def get(self, k: Any) -> Any:
        self._a.log(self.name, "get", k)
        return self._s.get(k)

    def put(self, k: Any, v: Any) -> None:
        self._a.log(self.name, "put", k, v)
        self._s.put(k, v)

    def remove(self, k: Any) -> None:
        self._a.log(self.name, "remove", k)
        self._s.remove(k)

    def items(self) -> list[tuple[Any, Any]]:
        """All entries, read in one access (Flink's ``entries()`` iteration), sorted so that
        outputs do not depend on a backend's iteration order."""
        self._a.log(self.name, "items")
        return sorted(self._s.items())


class Timers:
    """Event-time timers per (key, namespace): state entries plus an in-memory ordering index
    (module docstring). ``fire(ts, key, ns)`` is the operator's ``onEventTime``."""

    DECL = StateDecl(TIMER_STATE, "map", backends.Types.BOOLEAN(), backends.Types.BYTES(),
                     ttl=False)

    def __init__(self, view: View, set_key: Callable[[Any], None],
                 fire: Callable[[int, Any, int], None], access: Access) -> None:
        self._view, self._set_key, self._fire, self._a = view, set_key, fire, access
        self._queue: list[tuple[int, Any, int]] = []
        self._live: set[tuple[int, Any, int]] = set()
        self.registered = 0
        self.fired = 0

    def __len__(self) -> int:
        return len(self._live)

    def register(self, key: Any, ts: int, ns: int) -> None:
        timer = (ts, key, ns)
        if timer in self._live:  # a set: registering again changes nothing
            if self._a.trace is not None:
                self._a.trace.append(("timer", "exists", ts, ns))
            return
        self._live.add(timer)
        heapq.heappush(self._queue, timer)
        self.registered += 1
        self._view.put(_TIMER_KEY.pack(ts, ns), True)

    def delete(self, key: Any, ts: int, ns: int) -> None:
        timer = (ts, key, ns)
        if timer not in self._live:
            return
        self._live.discard(timer)  # the index entry is skipped when it comes up
        self._view.remove(_TIMER_KEY.pack(ts, ns))

    def advance(self, watermark: int) -> None:
        """Fire every timer at or before ``watermark``, in (time, key, namespace) order."""
        queue = self._queue
        while queue and queue[0][0] <= watermark:
            timer = heapq.heappop(queue)
            if timer not in self._live:
                continue
            self._live.discard(timer)
            ts, key, ns = timer
            self._set_key(key)
            self._view.remove(_TIMER_KEY.pack(ts, ns))
            self.fired += 1
            self._fire(ts, key, ns)


class EmulatedOperator:
    """Base of every operator kind: subclasses declare ``STATES`` and implement ``process``
    (and ``on_timer`` when they register timers); see ``workloads.operators``.

    ``retention`` says whether the job runs with a state TTL (``table.exec.state.ttl`` set):
    SQL operators change what they emit when it is (``GroupAggFunction`` then emits an update
    even when the aggregate did not change), so a reference run without TTL is built with the
    same ``retention`` and differs from the TTL run only by expiry.
    """

    STATES: tuple[StateDecl, ...] = ()
    USES_TIMERS = False

    def __init__(self, params: Any, out_of_orderness_ms: int, retention: bool) -> None:
        self.params = params
        self.bound = out_of_orderness_ms
        self.retention = retention
        #: the state TTL in ms (None: none), for what an operator ties to it besides its states
        #: (``topn``'s buffer cache); set by ``workloads.operators.make_operator``
        self.ttl_ms: int | None = None
        self.outputs: list[Output] = []
        self.access = Access()
        self.key: Any = None
        self.watermark = -(1 << 63)
        self.timers: Timers | None = None
        self._backend: Any = None

    def declared(self) -> tuple[StateDecl, ...]:
        return self.STATES + ((Timers.DECL,) if self.USES_TIMERS else ())

    def descriptors(self, ttl_config: backends.StateTtlConfig | None
                    ) -> dict[str, backends.StateDescriptor]:
        return {d.name: d.descriptor(ttl_config) for d in self.declared()}

    def bind(self, backend: Any, descs: dict[str, backends.StateDescriptor],
             trace: list | None = None) -> None:
        """Register every state on ``backend`` and make the views (``self.<attr>``)."""
        self._backend = backend
        self.access = Access(trace)
        views = {}
        for decl in self.declared():
            desc = descs[decl.name]
            state = (backend.get_state(desc) if decl.shape == "value"
                     else backend.get_map_state(desc))
            views[decl.name] = View(decl.name, state, self.access)
        self.bind_views(views)
        if self.USES_TIMERS:
            self.timers = Timers(views[TIMER_STATE], self.set_key, self._on_timer, self.access)

    def bind_views(self, views: dict[str, View]) -> None:
        """Keep the views the kind uses (subclasses)."""

    def set_key(self, key: Any) -> None:
        if key != self.key:
            self.key = key
            self._backend.set_current_key(key)

    def _on_timer(self, ts: int, key: Any, ns: int) -> None:
        if self.access.trace is not None:
            self.access.trace.append(("timer", "fire", ts, ns))
        self.on_timer(ts, key, ns)

    # ------------------------------------------------------------------ driven by the task
    def advance_watermark(self, ts: int) -> None:
        """Before a record at ``ts``: Flink's bounded-out-of-orderness watermark."""
        wm = ts - self.bound - 1
        if wm > self.watermark:
            self.watermark = wm
            if self.timers is not None:
                self.timers.advance(wm)

    def end_of_input(self) -> None:
        """The final watermark (+inf): every timer fires."""
        self.watermark = END_OF_INPUT
        if self.timers is not None:
            self.timers.advance(END_OF_INPUT)

    def element(self, key: Any, row: Row) -> None:
        """One input record: its key selected, then the kind's ``process``."""
        self.set_key(key)
        self.process(row)

    # ------------------------------------------------------------------ subclasses
    def process(self, row: Row) -> None:
        raise NotImplementedError

    def on_timer(self, ts: int, key: Any, ns: int) -> None:
        raise NotImplementedError

    def emit(self, *record: Any) -> None:
        self.outputs.append(record)
