"""The state operations statebench benchmarks, each beside a raw baseline doing the same work.

Operations mirror apache/flink-benchmarks' ValueState/ListState/MapState benchmarks (plus
reducing add). Each has three loops over the same pre-shuffled keys and values:
- `state`: the statebench API (`set_current_key` + the state call), on either backend;
- `raw_heap`: a plain Python dict loop storing the same `(value, ts)` units;
- `raw_rocksdb`: a raw rocksdict loop writing/reading the same bytes (same key layout, same
  TTL value layout, WAL off as the backend).
A loop returns how many units it did (map iteration counts entries, as Flink's
@OperationsPerInvocation(10)); rates are units per second.
"""

from __future__ import annotations

import struct
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import rocksdict

from backends.keygroups import key_group_for, key_group_prefix, serialize_key

from .fixtures import MAP_KEY_COUNT, Pools, StateFixture

TS = 1_000_000
_VALUE = struct.Struct(">qq")  # [ts][long], as the TTL value codec
_MAPVAL = struct.Struct(">Bqd")  # [null flag][ts][double]
_MAPKEY = struct.Struct(">q")
ADD_ALL_SIZE = 10


# ----------------------------------------------------------------------------- state loops
def value_update(fx: StateFixture, p: Pools) -> int:
    sk, up = fx.backend.set_current_key, fx.states["value"].update
    for k, v in zip(p.pick_keys(), p.values):
        sk(k)
        up(v)
    return p.ops


def value_add(fx: StateFixture, p: Pools) -> int:
    sk, up = fx.backend.set_current_key, fx.states["value"].update
    for k, v in zip(p.pick_keys(fresh=True), p.values):
        sk(k)
        up(v)
    return p.ops


def value_get(fx: StateFixture, p: Pools) -> int:
    sk, get = fx.backend.set_current_key, fx.states["value"].value
    for k in p.pick_keys():
        sk(k)
        get()
    return p.ops


def list_append(fx: StateFixture, p: Pools) -> int:
    sk, add = fx.backend.set_current_key, fx.states["list"].add
    for k, v in zip(p.pick_keys(), p.values):
        sk(k)
        add(v)
    return p.ops


def list_get(fx: StateFixture, p: Pools) -> int:
    sk, get = fx.backend.set_current_key, fx.states["list"].get
    for k in p.pick_keys():
        sk(k)
        for _ in get():
            pass
    return p.ops


def list_add_all(fx: StateFixture, p: Pools) -> int:
    sk, add_all = fx.backend.set_current_key, fx.states["list"].add_all
    chunk = p.values[:ADD_ALL_SIZE]
    for k in p.pick_keys():
        sk(k)
        add_all(chunk)
    return p.ops


def map_put(fx: StateFixture, p: Pools) -> int:
    sk, put = fx.backend.set_current_key, fx.states["map"].put
    for k, mk, v in zip(p.pick_keys(), p.map_keys, p.values):
        sk(k)
        put(mk, float(v))
    return p.ops


def map_get(fx: StateFixture, p: Pools) -> int:
    sk, get = fx.backend.set_current_key, fx.states["map"].get
    for k, mk in zip(p.pick_keys(), p.map_keys):
        sk(k)
        get(mk)
    return p.ops


def map_contains(fx: StateFixture, p: Pools) -> int:
    sk, contains = fx.backend.set_current_key, fx.states["map"].contains
    for k, mk in zip(p.pick_keys(), p.map_keys):
        sk(k)
        contains(mk << 1)  # about half hits, as flink-benchmarks' mapContains
    return p.ops


def map_iterate(fx: StateFixture, p: Pools) -> int:
    sk, items = fx.backend.set_current_key, fx.states["map"].items
    n = 0
    for k in p.pick_keys():
        sk(k)
        for _ in items():
            n += 1
    return n


def reducing_add(fx: StateFixture, p: Pools) -> int:
    sk, add = fx.backend.set_current_key, fx.states["reducing"].add
    for k, v in zip(p.pick_keys(), p.values):
        sk(k)
        add(v)
    return p.ops


# ----------------------------------------------------------------------------- raw dict loops
@dataclass
class RawHeap:
    """Plain dicts holding what the heap backend holds, pre-filled the same way."""

    value: dict
    lists: dict
    maps: dict
    reducing: dict

    @classmethod
    def make(cls, p: Pools, root: str | None = None) -> RawHeap:
        """The dicts over `p`'s setup keys (`root` is RawRocks.make's folder: none here)."""
        entries = {mk: (0.5, TS) for mk in range(MAP_KEY_COUNT)}
        return cls(
            {k: (k, TS) for k in p.setup_keys},
            {k: [(k, TS)] for k in p.setup_keys},
            {k: dict(entries) for k in p.setup_keys},
            {k: (k, TS) for k in p.setup_keys},
        )

    def close(self) -> None:
        """Nothing to release."""


def raw_heap_value_update(r: RawHeap, p: Pools) -> int:
    d = r.value
    for k, v in zip(p.pick_keys(), p.values):
        d[k] = (v, TS)
    return p.ops


def raw_heap_value_add(r: RawHeap, p: Pools) -> int:
    d = r.value
    for k, v in zip(p.pick_keys(fresh=True), p.values):
        d[k] = (v, TS)
    return p.ops


def raw_heap_value_get(r: RawHeap, p: Pools) -> int:
    get = r.value.get
    for k in p.pick_keys():
        get(k)
    return p.ops


def raw_heap_list_append(r: RawHeap, p: Pools) -> int:
    d = r.lists
    for k, v in zip(p.pick_keys(), p.values):
        d[k].append((v, TS))
    return p.ops


def raw_heap_list_get(r: RawHeap, p: Pools) -> int:
    d = r.lists
    for k in p.pick_keys():
        for _ in d[k]:
            pass
    return p.ops


def raw_heap_list_add_all(r: RawHeap, p: Pools) -> int:
    d = r.lists
    chunk = [(v, TS) for v in p.values[:ADD_ALL_SIZE]]
    for k in p.pick_keys():
        d[k].extend(chunk)
    return p.ops


def raw_heap_map_put(r: RawHeap, p: Pools) -> int:
    d = r.maps
    for k, mk, v in zip(p.pick_keys(), p.map_keys, p.values):
        d[k][mk] = (float(v), TS)
    return p.ops


def raw_heap_map_get(r: RawHeap, p: Pools) -> int:
    d = r.maps
    for k, mk in zip(p.pick_keys(), p.map_keys):
        d[k].get(mk)
    return p.ops


def raw_heap_map_contains(r: RawHeap, p: Pools) -> int:
    d = r.maps
    for k, mk in zip(p.pick_keys(), p.map_keys):
        _ = (mk << 1) in d[k]
    return p.ops


def raw_heap_map_iterate(r: RawHeap, p: Pools) -> int:
    d, n = r.maps, 0
    for k in p.pick_keys():
        for _ in d[k].items():
            n += 1
    return n


def raw_heap_reducing_add(r: RawHeap, p: Pools) -> int:
    d = r.reducing
    for k, v in zip(p.pick_keys(), p.values):
        old = d.get(k)
        d[k] = (v if old is None else old[0] + v, TS)
    return p.ops


# ----------------------------------------------------------------------------- raw rocksdict loops
@dataclass
class RawRocks:
    """A raw rocksdict DB with one column family per state and the backend's byte layout."""

    db: Any
    cfs: dict[str, Any]
    key_bytes: dict[int, bytes]
    tmp: Any

    @classmethod
    def make(cls, p: Pools, root: str | None = None) -> RawRocks:
        tmp = tempfile.TemporaryDirectory(prefix="statebench-rawrocks-", dir=root)
        opts = rocksdict.Options(raw_mode=True)
        db = rocksdict.Rdict(tmp.name + "/db", opts)
        wo = rocksdict.WriteOptions()
        wo.disable_wal = True
        db.set_write_options(wo)
        cfs = {}
        for name in ("value", "list", "map", "reducing"):
            cfs[name] = db.create_column_family(name, rocksdict.Options(raw_mode=True))
            cfs[name].set_write_options(wo)
        key_bytes = {
            k: key_group_prefix(key_group_for(k, 128)) + serialize_key(k)
            for k in p.setup_keys + p.new_keys
        }
        mapval = _MAPVAL.pack(0, TS, 0.5)
        for k in p.setup_keys:
            kb = key_bytes[k]
            packed = _VALUE.pack(TS, k)
            cfs["value"].put(kb, packed)
            cfs["list"].put(kb, packed)
            cfs["reducing"].put(kb, packed)
            for mk in range(MAP_KEY_COUNT):
                cfs["map"].put(kb + _MAPKEY.pack(mk), mapval)
        db.flush()
        return cls(db, cfs, key_bytes, tmp)

    def close(self) -> None:
        self.db.close()
        self.tmp.cleanup()


def _kb(r: RawRocks, keys: list[int]) -> list[bytes]:
    return [r.key_bytes[k] for k in keys]


def raw_rocksdb_value_update(r: RawRocks, p: Pools) -> int:
    put, pack = r.cfs["value"].put, _VALUE.pack
    for kb, v in zip(_kb(r, p.pick_keys()), p.values):
        put(kb, pack(TS, v))
    return p.ops


def raw_rocksdb_value_add(r: RawRocks, p: Pools) -> int:
    put, pack = r.cfs["value"].put, _VALUE.pack
    for kb, v in zip(_kb(r, p.pick_keys(fresh=True)), p.values):
        put(kb, pack(TS, v))
    return p.ops


def raw_rocksdb_value_get(r: RawRocks, p: Pools) -> int:
    get = r.cfs["value"].get
    for kb in _kb(r, p.pick_keys()):
        get(kb)
    return p.ops


def raw_rocksdb_list_append(r: RawRocks, p: Pools) -> int:
    cf, pack = r.cfs["list"], _VALUE.pack
    get, put = cf.get, cf.put
    for kb, v in zip(_kb(r, p.pick_keys()), p.values):
        old = get(kb)
        put(kb, pack(TS, v) if old is None else old + pack(TS, v))
    return p.ops


def raw_rocksdb_list_get(r: RawRocks, p: Pools) -> int:
    get, unpack = r.cfs["list"].get, _VALUE.iter_unpack
    for kb in _kb(r, p.pick_keys()):
        for _ in unpack(get(kb)):
            pass
    return p.ops


def raw_rocksdb_list_add_all(r: RawRocks, p: Pools) -> int:
    cf = r.cfs["list"]
    get, put = cf.get, cf.put
    chunk = b"".join(_VALUE.pack(TS, v) for v in p.values[:ADD_ALL_SIZE])
    for kb in _kb(r, p.pick_keys()):
        old = get(kb)
        put(kb, chunk if old is None else old + chunk)
    return p.ops


def raw_rocksdb_map_put(r: RawRocks, p: Pools) -> int:
    put, pk, pv = r.cfs["map"].put, _MAPKEY.pack, _MAPVAL.pack
    for kb, mk, v in zip(_kb(r, p.pick_keys()), p.map_keys, p.values):
        put(kb + pk(mk), pv(0, TS, float(v)))
    return p.ops


def raw_rocksdb_map_get(r: RawRocks, p: Pools) -> int:
    get, pk = r.cfs["map"].get, _MAPKEY.pack
    for kb, mk in zip(_kb(r, p.pick_keys()), p.map_keys):
        get(kb + pk(mk))
    return p.ops


def raw_rocksdb_map_contains(r: RawRocks, p: Pools) -> int:
    get, pk = r.cfs["map"].get, _MAPKEY.pack
    for kb, mk in zip(_kb(r, p.pick_keys()), p.map_keys):
        _ = get(kb + pk(mk << 1)) is not None
    return p.ops


def raw_rocksdb_map_iterate(r: RawRocks, p: Pools) -> int:
    cf, n = r.cfs["map"], 0
    for kb in _kb(r, p.pick_keys()):
        it = cf.iter()
        it.seek(kb)
        while it.valid():
            key = it.key()
            if not key.startswith(kb):
                break
            it.value()
            n += 1
            it.next()
    return n


def raw_rocksdb_reducing_add(r: RawRocks, p: Pools) -> int:
    cf, pack, unpack = r.cfs["reducing"], _VALUE.pack, _VALUE.unpack
    get, put = cf.get, cf.put
    for kb, v in zip(_kb(r, p.pick_keys()), p.values):
        old = get(kb)
        put(kb, pack(TS, v if old is None else unpack(old)[1] + v))
    return p.ops


OPS: dict[str, Callable[[StateFixture, Pools], int]] = {
    f.__name__: f
    for f in (value_update, value_get, value_add, list_append, list_get, list_add_all,
              map_put, map_get, map_iterate, map_contains, reducing_add)
}
RAW: dict[str, dict[str, Callable[[Any, Pools], int]]] = {
    "heap": {name: globals()[f"raw_heap_{name}"] for name in OPS},
    "rocksdb": {name: globals()[f"raw_rocksdb_{name}"] for name in OPS},
}
RAW_FIXTURES = {"heap": RawHeap.make, "rocksdb": RawRocks.make}
