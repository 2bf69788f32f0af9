"""A tiny operation language for the differential tests: one seeded generator, two interpreters.

The generator writes abstract ops; `run_statebench` applies them to a statebench backend through
its public API, `run_flink` records them into ONE worker batch. Both return the visible result of
every read, in order, normalised the same way (map iteration sorted by user key).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import backends as B
from backends.flink import FlinkWorker

TTL_MS = 50
MAP_KEYS = 4


class SumAgg(B.AggregateFunction):
    """The Python twin of the worker's Java 'sum' aggregate (LONG accumulator)."""

    def create_accumulator(self) -> int:
        return 0

    def add(self, value: int, accumulator: int) -> int:
        return accumulator + value

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, a: int, b: int) -> int:
        return a + b


def descriptors(cfg: B.StateTtlConfig | None) -> dict[str, B.StateDescriptor]:
    """All five state types; value STRING, list LONG, map LONG -> DOUBLE (None allowed)."""
    descs = {
        "v": B.ValueStateDescriptor("v", B.Types.STRING()),
        "l": B.ListStateDescriptor("l", B.Types.LONG()),
        "m": B.MapStateDescriptor("m", B.Types.LONG(), B.Types.DOUBLE()),
        "r": B.ReducingStateDescriptor("r", lambda a, b: a + b, B.Types.LONG()),
        "a": B.AggregatingStateDescriptor("a", SumAgg(), B.Types.LONG()),
    }
    if cfg is not None:
        for d in descs.values():
            d.enable_time_to_live(cfg)
    return descs


@dataclass
class Program:
    ops: list[tuple] = field(default_factory=list)
    boundary_hits: int = 0  # clock steps landing exactly on last_access + ttl of some access


def generate(seed: int, steps: int, keys: list[Any], with_counts: bool,
             with_is_empty: bool = True) -> Program:
    """`with_counts` adds physical-count probes every 50 steps; `with_is_empty=False` leaves out
    MapState.isEmpty(), which ignores TTL (Flink) and so reports what cleanup left behind."""
    rng = random.Random(seed)
    prog = Program()
    now = 0
    accesses: list[int] = [0]
    for step in range(steps):
        if rng.random() < 0.3:
            alive = [t for t in accesses[-30:] if t + TTL_MS > now]
            if alive:
                t = rng.choice(alive)
                if rng.random() < 0.7:
                    now = t + TTL_MS  # exactly on the boundary: expired
                    prog.boundary_hits += 1
                else:
                    now = t + TTL_MS - 1  # one ms before: still alive
        else:
            now += rng.choice((0, 0, 1, 3, 10, 40, 60))
        prog.ops.append(("time", now))
        if rng.random() < 0.7:
            prog.ops.append(("key", rng.choice(keys)))
        accesses.append(now)
        op = rng.randrange(23)
        if op == 0:
            prog.ops.append(("v_update", rng.choice(["", "x", "yy", "ü", None])))
        elif op in (1, 2):
            prog.ops.append(("v_get",))
        elif op == 3:
            prog.ops.append(("clear", rng.choice("vlmra")))
        elif op == 4:
            prog.ops.append(("l_add", rng.randrange(-5, 5)))
        elif op == 5:
            prog.ops.append(("l_add_all", [rng.randrange(100) for _ in range(rng.randrange(3))]))
        elif op in (6, 7):
            prog.ops.append(("l_get",))
        elif op == 8:
            prog.ops.append(("l_update", [rng.randrange(9) for _ in range(rng.randrange(3))]))
        elif op == 9:
            prog.ops.append(("m_put", rng.randrange(MAP_KEYS), rng.choice([1.5, None, -2.0])))
        elif op == 10:
            prog.ops.append(("m_get", rng.randrange(MAP_KEYS)))
        elif op == 11:
            prog.ops.append(("m_contains", rng.randrange(MAP_KEYS)))
        elif op == 12:
            prog.ops.append(("m_items",))
        elif op == 13:
            prog.ops.append(("m_remove", rng.randrange(MAP_KEYS)))
        elif op == 14:
            prog.ops.append(("m_is_empty",) if with_is_empty else ("m_get", 0))
        elif op == 15:
            prog.ops.append(("m_put_all", {rng.randrange(MAP_KEYS): float(step)
                                           for _ in range(2)}))
        elif op == 16:
            prog.ops.append(("m_keys",))
        elif op == 17:
            prog.ops.append(("m_values",))
        elif op in (18, 19):
            prog.ops.append(("r_add", rng.randrange(10)))
        elif op == 20:
            prog.ops.append(("r_get",))
        elif op == 21:
            prog.ops.append(("a_add", rng.randrange(10)))
        else:
            prog.ops.append(("a_get",))
        if step % 200 == 199:  # RocksDB compactions (Flink's compaction filter) are slow-ish
            prog.ops.append(("compact",))
        if with_counts and step % 50 == 49:
            prog.ops.append(("counts",))
    return prog


def _sorted_values(values: Any) -> list:
    return sorted(values, key=lambda x: (x is not None, x if x is not None else 0))


def run_statebench(backend: B.KeyedStateBackend, clock: B.ManualClock,
                   descs: dict[str, B.StateDescriptor], prog: Program) -> list[Any]:
    st = {
        "v": backend.get_state(descs["v"]), "l": backend.get_list_state(descs["l"]),
        "m": backend.get_map_state(descs["m"]), "r": backend.get_reducing_state(descs["r"]),
        "a": backend.get_aggregating_state(descs["a"]),
    }
    v, lst, m, r, a = st["v"], st["l"], st["m"], st["r"], st["a"]
    out: list[Any] = []
    has_key = False
    for op in prog.ops:
        name = op[0]
        if name == "time":
            clock.set(op[1])
            continue
        if name == "key":
            backend.set_current_key(op[1])
            has_key = True
            continue
        if name == "compact":
            backend.compact()
            continue
        if name == "counts":
            out.append(("counts", {n: backend.physical_entries(n) for n in "vlmra"}))
            continue
        if not has_key:
            continue
        if name == "v_update":
            v.update(op[1])
        elif name == "v_get":
            out.append(v.value())
        elif name == "clear":
            st[op[1]].clear()
        elif name == "l_add":
            lst.add(op[1])
        elif name == "l_add_all":
            lst.add_all(op[1])
        elif name == "l_get":
            out.append(list(lst.get()))
        elif name == "l_update":
            lst.update(op[1])
        elif name == "m_put":
            m.put(op[1], op[2])
        elif name == "m_get":
            out.append(m.get(op[1]))
        elif name == "m_contains":
            out.append(m.contains(op[1]))
        elif name == "m_items":
            out.append(sorted(m.items(), key=lambda kv: kv[0]))
        elif name == "m_remove":
            m.remove(op[1])
        elif name == "m_is_empty":
            out.append(m.is_empty())
        elif name == "m_put_all":
            m.put_all(op[1])
        elif name == "m_keys":
            out.append(sorted(m.keys()))
        elif name == "m_values":
            out.append(_sorted_values(m.values()))
        elif name == "r_add":
            r.add(op[1])
        elif name == "r_get":
            out.append(r.get())
        elif name == "a_add":
            a.add(op[1])
        elif name == "a_get":
            out.append(a.get())
        else:
            raise AssertionError(f"unknown op {op}")
    return out


def run_flink(worker: FlinkWorker, descs: dict[str, B.StateDescriptor],
              prog: Program) -> list[Any]:
    """The whole program as one batch; results normalised like run_statebench's."""
    b = worker.batch()
    fn = {"r": "sum", "a": "sum"}
    st = {n: b.register(d, fn.get(n)) for n, d in descs.items()}
    v, lst, m, r, a = st["v"], st["l"], st["m"], st["r"], st["a"]
    posts: list[Any] = []
    has_key = False
    for op in prog.ops:
        name = op[0]
        post = None
        if name == "time":
            b.set_time(op[1])
            continue
        if name == "key":
            b.set_key(op[1])
            has_key = True
            continue
        if name == "compact":
            b.compact()
            continue
        if name == "counts":
            b.counts()
            posts.append(lambda c: ("counts", c["keys"]))
            continue
        if not has_key:
            continue
        if name == "v_update":
            b.value_update(v, op[1])
            continue
        if name == "clear":
            b.clear(st[op[1]])
            continue
        if name == "l_add":
            b.list_add(lst, op[1])
            continue
        if name == "l_add_all":
            b.list_add_all(lst, op[1])
            continue
        if name == "l_update":
            b.list_update(lst, op[1])
            continue
        if name == "m_put":
            b.map_put(m, op[1], op[2])
            continue
        if name == "m_remove":
            b.map_remove(m, op[1])
            continue
        if name == "m_put_all":
            b.map_put_all(m, op[1])
            continue
        if name == "r_add":
            b.reducing_add(r, op[1])
            continue
        if name == "a_add":
            b.aggregating_add(a, op[1])
            continue
        if name == "v_get":
            b.value_get(v)
        elif name == "l_get":
            b.list_get(lst)
        elif name == "m_get":
            b.map_get(m, op[1])
        elif name == "m_contains":
            b.map_contains(m, op[1])
        elif name == "m_items":
            b.map_items(m)
            post = lambda items: sorted(items, key=lambda kv: kv[0])  # noqa: E731
        elif name == "m_is_empty":
            b.map_is_empty(m)
        elif name == "m_keys":
            b.map_keys(m)
            post = sorted
        elif name == "m_values":
            b.map_values(m)
            post = _sorted_values
        elif name == "r_get":
            b.reducing_get(r)
        elif name == "a_get":
            b.aggregating_get(a)
        else:
            raise AssertionError(f"unknown op {op}")
        posts.append(post)
    results = b.flush()
    return [x if p is None else p(x) for x, p in zip(results, posts)]
