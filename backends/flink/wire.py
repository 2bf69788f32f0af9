"""Encoding and decoding of the worker's frames (layout: see the package docstring)."""

from __future__ import annotations

import struct
from typing import Any

# control family
OPEN_BACKEND, SET_TIME, SET_KEY, REGISTER, COMPACT, COUNTS = 0x01, 0x02, 0x03, 0x04, 0x05, 0x06
SNAPSHOT, BENCH, CLOSE, FLUSH, PROPERTIES = 0x07, 0x08, 0x09, 0x0A, 0x0B
FORST_TTL_PROBE = 0x0C
# state-operation family: u16 state id, then arguments
CLEAR, VALUE_GET, VALUE_UPDATE = 0x20, 0x21, 0x22
LIST_GET, LIST_ADD, LIST_ADD_ALL, LIST_UPDATE = 0x23, 0x24, 0x25, 0x26
MAP_GET, MAP_PUT, MAP_PUT_ALL, MAP_REMOVE, MAP_CONTAINS = 0x27, 0x28, 0x29, 0x2A, 0x2B
MAP_ENTRIES, MAP_KEYS, MAP_VALUES, MAP_IS_EMPTY = 0x2C, 0x2D, 0x2E, 0x2F
REDUCING_GET, REDUCING_ADD, AGG_GET, AGG_ADD = 0x30, 0x31, 0x32, 0x33

# value tags (also the type codes of REGISTER)
T_NULL, T_LONG, T_STRING, T_DOUBLE, T_BOOL, T_LIST, T_MAP = 0, 1, 2, 3, 4, 5, 6

_Q = struct.Struct(">q")
_I = struct.Struct(">i")
_D = struct.Struct(">d")
_BQ = struct.Struct(">Bq")
_BD = struct.Struct(">Bd")


def put_str(buf: bytearray, text: str) -> None:
    raw = text.encode("utf-8")
    buf += _I.pack(len(raw))
    buf += raw


def put_value(buf: bytearray, value: Any, type_code: int) -> None:
    """A tagged value, coerced to the declared type so Flink's serializer accepts it."""
    if value is None:
        buf.append(T_NULL)
    elif type_code == T_LONG:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"expected an int for a LONG value, got {value!r}")
        buf += _BQ.pack(T_LONG, value)
    elif type_code == T_STRING:
        if not isinstance(value, str):
            raise TypeError(f"expected a str for a STRING value, got {value!r}")
        buf.append(T_STRING)
        put_str(buf, value)
    elif type_code == T_DOUBLE:
        buf += _BD.pack(T_DOUBLE, float(value))
    elif type_code == T_BOOL:
        buf.append(T_BOOL)
        buf.append(1 if value else 0)
    else:
        raise ValueError(f"unknown value type code {type_code}")


def put_list(buf: bytearray, values: Any, type_code: int) -> None:
    items = list(values)
    buf.append(T_LIST)
    buf += _I.pack(len(items))
    for item in items:
        put_value(buf, item, type_code)


def put_map(buf: bytearray, mapping: Any, key_code: int, value_code: int) -> None:
    items = list(dict(mapping).items())
    buf.append(T_MAP)
    buf += _I.pack(len(items))
    for k, v in items:
        put_value(buf, k, key_code)
        put_value(buf, v, value_code)


def get_value(data: memoryview, pos: int) -> tuple[Any, int]:
    """One tagged value at `pos`; returns it and the position after it."""
    tag = data[pos]
    pos += 1
    if tag == T_NULL:
        return None, pos
    if tag == T_LONG:
        return _Q.unpack_from(data, pos)[0], pos + 8
    if tag == T_STRING:
        n = _I.unpack_from(data, pos)[0]
        pos += 4
        return bytes(data[pos:pos + n]).decode("utf-8"), pos + n
    if tag == T_DOUBLE:
        return _D.unpack_from(data, pos)[0], pos + 8
    if tag == T_BOOL:
        return data[pos] != 0, pos + 1
    if tag == T_LIST:
        n = _I.unpack_from(data, pos)[0]
        pos += 4
        out = []
        for _ in range(n):
            item, pos = get_value(data, pos)
            out.append(item)
        return out, pos
    if tag == T_MAP:
        n = _I.unpack_from(data, pos)[0]
        pos += 4
        result = {}
        for _ in range(n):
            k, pos = get_value(data, pos)
            result[k], pos = get_value(data, pos)
        return result, pos
    raise ValueError(f"unknown value tag {tag} in a worker reply")


def all_longs(data: memoryview, count: int) -> list[int] | None:
    """Vectorised decode of `count` results that are all tagged longs (9 bytes each), e.g. the
    replies of a batch of value gets; None when any tag differs (then decode one by one)."""
    import numpy as np

    rec = np.frombuffer(data, dtype=np.dtype([("tag", "u1"), ("value", ">i8")]), count=count)
    if not (rec["tag"] == T_LONG).all():
        return None
    return rec["value"].astype(np.int64).tolist()


def encode_long_ops(opcode: int, state_id: int, keys: Any, values: Any = None) -> bytes:
    """Vectorised: for each i, SET_KEY(long keys[i]) then `opcode` on the state with LONG
    values[i] (or no argument when values is None). For batches of homogeneous ops, e.g. the
    protocol-overhead benchmark and workload replays, where a Python loop would dominate."""
    import numpy as np

    keys = np.asarray(keys, dtype=np.int64)
    fields = [("k_op", "u1"), ("k_tag", "u1"), ("key", ">i8"), ("op", "u1"), ("sid", ">u2")]
    if values is not None:
        fields += [("v_tag", "u1"), ("value", ">i8")]
    rec = np.empty(len(keys), dtype=np.dtype(fields))
    rec["k_op"] = SET_KEY
    rec["k_tag"] = T_LONG
    rec["key"] = keys
    rec["op"] = opcode
    rec["sid"] = state_id
    if values is not None:
        rec["v_tag"] = T_LONG
        rec["value"] = np.asarray(values, dtype=np.int64)
    return rec.tobytes()
