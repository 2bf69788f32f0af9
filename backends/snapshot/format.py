"""The canonical snapshot rows: containers of any backend <-> Arrow tables, one row per unit.

A state's rows are `key_group: uint16`, `key`, (`user_key` for map state), `value` and, when the
state stores TTL timestamps, `ts: int64` (the unit's last-access time, milliseconds). A value
state has one row per key, a list state one row per element (in list order), a map state one row
per entry. Rows are ordered by key group and the rows of one key are contiguous, so a reader can
rebuild containers in one pass and a key group is a contiguous run of rows.

Columns are typed as Arrow types where the declared type maps cleanly (LONG -> int64, ROW ->
struct, ...) so any Arrow tool can read a snapshot; the column's *encoding* ("arrow",
"serialized" = bytes of the type's own serializer, and for keys "int64" / "string" / "binary" /
"tagged" = `keygroups.serialize_key`) is recorded in the metadata, so odd values (a string with a
lone surrogate, keys of mixed Python types) still round-trip. Key groups are computed vectorized
with numpy (the pure-Python murmur hash would cost more than the rest of a snapshot).
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from backends.keygroups import deserialize_key, hash_code, serialize_key
from backends.storage.layout import RawStateSpec
from backends.types import RowType, TypeInformation

_SCALARS = {
    "LONG": pa.int64(),
    "INT": pa.int32(),
    "DOUBLE": pa.float64(),
    "FLOAT": pa.float32(),
    "BOOLEAN": pa.bool_(),
    "STRING": pa.string(),
    "BYTES": pa.binary(),
}
_KEY_TYPES = {"int64": pa.int64(), "string": pa.string(), "binary": pa.binary(),
              "tagged": pa.binary()}
MIN_SEGMENT_ROWS = 1024
_CONVERSION_ERRORS = (pa.ArrowException, TypeError, ValueError, OverflowError, UnicodeError)


def arrow_type(t: TypeInformation) -> pa.DataType:
    """The Arrow type a declared type's values are written as (encoding "arrow")."""
    if isinstance(t, RowType):
        return pa.struct([pa.field(n, arrow_type(ft)) for n, ft in zip(t.names, t.types)])
    return _SCALARS[t.type_name]


def column_type(t: TypeInformation, encoding: str) -> pa.DataType:
    return arrow_type(t) if encoding == "arrow" else pa.binary()


def state_schema(spec: RawStateSpec, encodings: dict[str, str]) -> pa.Schema:
    """The Arrow schema of a state's file, from its spec and column encodings."""
    fields = [pa.field("key_group", pa.uint16(), nullable=False),
              pa.field("key", _KEY_TYPES[encodings["key"]], nullable=False)]
    if spec.shape == "map":
        assert spec.key_type is not None
        fields.append(pa.field("user_key", column_type(spec.key_type, encodings["user_key"])))
    fields.append(pa.field("value", column_type(spec.value_type, encodings["value"])))
    if spec.ttl_layout:
        fields.append(pa.field("ts", pa.int64(), nullable=False))
    return pa.schema(fields)


# --------------------------------------------------------------------------- key groups
_M32 = np.uint32(0xFFFFFFFF)


def murmur_key_groups(codes: np.ndarray, max_parallelism: int) -> np.ndarray:
    """`keygroups.murmur_hash(code) % max_parallelism` for a uint32 array of hash codes."""
    c = codes.astype(np.uint32, copy=True)
    with np.errstate(over="ignore"):
        c *= np.uint32(0xCC9E2D51)
        c = (c << np.uint32(15)) | (c >> np.uint32(17))
        c *= np.uint32(0x1B873593)
        c = (c << np.uint32(13)) | (c >> np.uint32(19))
        c = c * np.uint32(5) + np.uint32(0xE6546B64)
        c ^= np.uint32(4)
        c ^= c >> np.uint32(16)
        c *= np.uint32(0x85EBCA6B)
        c ^= c >> np.uint32(13)
        c *= np.uint32(0xC2B2AE35)
        c ^= c >> np.uint32(16)
    wide = c.astype(np.int64)
    # As a Java int a code >= 2^31 is negative: Flink returns -code, and 0 for Integer.MIN_VALUE.
    negative = wide >= (1 << 31)
    wide = np.where(negative, np.where(wide == (1 << 31), 0, (1 << 32) - wide), wide)
    return wide % max_parallelism


def key_groups_of(keys: list, key_array: pa.Array, encoding: str,
                  max_parallelism: int) -> np.ndarray:
    """Key group of every key, as Flink assigns them (see backends.keygroups)."""
    if encoding == "int64":
        v = key_array.to_numpy(zero_copy_only=False).view(np.uint64)
        codes = ((v ^ (v >> np.uint64(32))) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    elif encoding == "string":
        crc = zlib.crc32
        codes = np.fromiter((crc(k.encode("utf-8", "surrogatepass")) for k in keys),
                            dtype=np.uint32, count=len(keys))
    elif encoding == "binary":
        crc = zlib.crc32
        codes = np.fromiter((crc(k) for k in keys), dtype=np.uint32, count=len(keys))
    else:
        codes = np.fromiter((hash_code(k) for k in keys), dtype=np.uint32, count=len(keys))
    return murmur_key_groups(codes, max_parallelism)


def key_array(keys: list) -> tuple[pa.Array, str]:
    """The key column and its encoding: typed when every key has one Python type.

    pyarrow's inference is strict where an explicit pa.string() would quietly take bytes keys;
    an explicit pa.int64() is strict too (it refuses str, bytes and bool)."""
    if not keys:
        return pa.array([], pa.int64()), "int64"
    if keys[0].__class__ is int:
        try:  # explicit int64 is faster than inference and still refuses str/bytes keys
            return pa.array(keys, pa.int64()), "int64"
        except _CONVERSION_ERRORS:
            pass
    try:
        arr = pa.array(keys)
    except _CONVERSION_ERRORS:
        arr = None
    if arr is not None:
        for encoding, typ, cls in (("int64", pa.int64(), int), ("string", pa.string(), str),
                                   ("binary", pa.binary(), bytes)):
            # inference takes str and bytes together as binary: such keys are tagged
            if arr.type == typ and all(k.__class__ is cls for k in keys):
                return arr, encoding
    return pa.array([serialize_key(k) for k in keys], pa.binary()), "tagged"


def value_array(values: list, t: TypeInformation) -> tuple[pa.Array, str]:
    """A value (or user key) column: typed when Arrow takes every value, else serializer bytes."""
    try:
        return pa.array(values, type=arrow_type(t)), "arrow"
    except _CONVERSION_ERRORS:
        encode = t.encode
        return pa.array([None if v is None else encode(v) for v in values], pa.binary()), (
            "serialized")


# --------------------------------------------------------------------------- encoding
@dataclass
class EncodedState:
    """A state's rows, sorted by key group, ready to be cut into per-key-group segments."""

    table: pa.Table
    key_groups: np.ndarray  # key group of each row (sorted)
    encodings: dict[str, str]
    keys: int  # containers (keys) encoded
    units: int  # rows


def encode_containers(
    spec: RawStateSpec,
    keys: list,
    containers: list,
    max_parallelism: int,
    key_groups: np.ndarray | None = None,
) -> EncodedState:
    """Rows of `containers` (one per key) as an Arrow table sorted by key group."""
    shape, ttl = spec.shape, spec.ttl_layout
    keys_arr, key_enc = key_array(keys)
    if key_groups is None:
        key_groups = key_groups_of(keys, keys_arr, key_enc, max_parallelism)
    user_keys = None
    if shape == "value":
        stored = containers
    else:
        lengths = np.fromiter((len(c) for c in containers), dtype=np.int64,
                              count=len(containers))
        rows = np.repeat(np.arange(len(keys), dtype=np.int64), lengths)
        keys_arr = keys_arr.take(pa.array(rows))
        key_groups = key_groups[rows]
        if shape == "list":
            stored = [e for c in containers for e in c]
        else:
            items = [it for c in containers for it in c.items()]
            user_keys = [k for k, _ in items]
            stored = [s for _, s in items]
    if ttl:
        values = [s[0] for s in stored]
        stamps = pa.array([s[1] for s in stored], pa.int64())
    else:
        values, stamps = stored, None
    columns: dict[str, pa.Array] = {
        "key_group": pa.array(key_groups.astype(np.uint16)),
        "key": keys_arr,
    }
    encodings = {"key": key_enc}
    if user_keys is not None:
        assert spec.key_type is not None
        columns["user_key"], encodings["user_key"] = value_array(user_keys, spec.key_type)
    columns["value"], encodings["value"] = value_array(values, spec.value_type)
    if stamps is not None:
        columns["ts"] = stamps
    table = pa.table(columns, schema=state_schema(spec, encodings))
    if len(key_groups) > 1 and np.any(key_groups[1:] < key_groups[:-1]):
        # key groups fit 16 bits: numpy's stable sort is then a linear-time radix sort
        order = np.argsort(key_groups.astype(np.uint16), kind="stable")
        table = table.take(pa.array(order))
        key_groups = key_groups[order]
    return EncodedState(table, key_groups, encodings, len(keys), table.num_rows)


def segments(encoded: EncodedState, max_rows: int, max_segments: int
             ) -> Iterator[tuple[list[tuple[int, int]], pa.RecordBatch]]:
    """Cut the sorted rows into segments of whole key groups: ([(key group, rows), ...], batch).

    A segment gathers consecutive key groups until it holds total/max_segments rows (at least
    MIN_SEGMENT_ROWS): every record batch costs a fixed compression and metadata overhead, which
    one batch per key group would pay up to 32768 times. A key group larger than `max_rows` is
    cut into several segments of its own (a list's or map's rows may then continue into the next
    segment; the reader joins them)."""
    kgs = encoded.key_groups
    total = len(kgs)
    if not total:
        return
    table = encoded.table.combine_chunks()
    target = min(max_rows, max(MIN_SEGMENT_ROWS, -(-total // max_segments)))
    starts = np.concatenate(([0], np.flatnonzero(np.diff(kgs)) + 1, [total])).tolist()
    groups: list[tuple[int, int]] = []
    first = 0
    for a, b in itertools.pairwise(starts):
        kg = int(kgs[a])
        if b - a > max_rows:  # a huge key group: flush, then cut it alone
            if groups:
                yield groups, _batch(table, first, a)
                groups = []
            for lo in range(a, b, max_rows):
                hi = min(b, lo + max_rows)
                yield [(kg, hi - lo)], _batch(table, lo, hi)
            first = b
            continue
        groups.append((kg, b - a))
        if b - first >= target:
            yield groups, _batch(table, first, b)
            groups, first = [], b
    if groups:
        yield groups, _batch(table, first, total)


def _batch(table: pa.Table, start: int, stop: int) -> pa.RecordBatch:
    return table.slice(start, stop - start).to_batches()[0]


# --------------------------------------------------------------------------- decoding
def decode_keys(column: pa.Array, encoding: str) -> list:
    if encoding == "tagged":
        return [deserialize_key(b)[0] for b in column.to_pylist()]
    return column.to_pylist()


def decode_values(column: pa.Array, t: TypeInformation, encoding: str) -> list:
    if encoding == "arrow":
        return column.to_pylist()
    decode = t.decode
    return [None if b is None else decode(b) for b in column.to_pylist()]


def decode_rows(
    spec: RawStateSpec, encodings: dict[str, str], batches: Iterable[pa.RecordBatch]
) -> Iterator[tuple[int, Any, Any]]:
    """(key group, key, container) from batches in file order.

    A list's or map's rows may continue into the next batch of the same key group, so the
    container being built is only yielded once a different key starts."""
    shape, ttl = spec.shape, spec.ttl_layout
    pending_key: Any = _NONE
    pending_kg, pending = 0, None
    for batch in batches:
        if not batch.num_rows:
            continue
        kgs = batch.column("key_group").to_pylist()
        keys = decode_keys(batch.column("key"), encodings["key"])
        values = decode_values(batch.column("value"), spec.value_type, encodings["value"])
        stored = list(zip(values, batch.column("ts").to_pylist())) if ttl else values
        if shape == "value":
            yield from zip(kgs, keys, stored)
            continue
        if shape == "map":
            assert spec.key_type is not None
            user_keys = decode_values(batch.column("user_key"), spec.key_type,
                                      encodings["user_key"])
        for i, key in enumerate(keys):
            if key != pending_key or key.__class__ is not pending_key.__class__:
                if pending is not None:
                    yield pending_kg, pending_key, pending
                pending_key, pending_kg = key, kgs[i]
                pending = [] if shape == "list" else {}
            if shape == "list":
                pending.append(stored[i])
            else:
                pending[user_keys[i]] = stored[i]
    if pending is not None:
        yield pending_kg, pending_key, pending


class _NoneYet:
    __slots__ = ()


_NONE: Any = _NoneYet()
