"""Byte layouts of stored objects in RocksDB, following Flink's TTL serializer.

A TTL unit is `[last_access_ts: 8 bytes big-endian][user bytes]` (value, reducing, aggregating
state, and each list element); a map entry's value is `[null flag: 1][ts: 8][user bytes]`, so the
timestamp sits at offset 1 exactly where Flink's compaction filter looks for it. Unlike Flink,
list elements are not separated by a 1-byte delimiter (Flink needs it for RocksDB's merge
operator, which rocksdict does not expose): fixed-width elements are packed back to back and
variable-width ones carry a 4-byte length. Fixed-width scalars fuse timestamp and value into one
`struct` call, which is most of what makes the RocksDB TTL path cheap in Python.
"""

from __future__ import annotations

import struct
from typing import Any

from backends.types import TypeInformation

TS = struct.Struct(">q")
_LEN = struct.Struct(">I")


class ValueCodec:
    """Stored object <-> bytes for one whole value (plain user value, or (value, ts))."""

    def __init__(self, value_type: TypeInformation, ttl_layout: bool) -> None:
        self.value_type = value_type
        self.ttl_layout = ttl_layout
        fmt = value_type.struct_format
        if not ttl_layout:
            self.encode = value_type.encode
            self.decode = value_type.decode
        elif fmt is not None:
            fused = struct.Struct(">q" + fmt[1:])
            pack, unpack = fused.pack, fused.unpack

            def encode(stored: tuple) -> bytes:
                return pack(stored[1], stored[0])

            def decode(data: bytes) -> tuple:
                ts, value = unpack(data)
                return (value, ts)

            self.encode, self.decode = encode, decode
        else:
            user_encode, user_decode, pack_ts = value_type.encode, value_type.decode, TS.pack
            unpack_ts = TS.unpack_from

            def encode(stored: tuple) -> bytes:
                return pack_ts(stored[1]) + user_encode(stored[0])

            def decode(data: bytes) -> tuple:
                return (user_decode(data[8:]), unpack_ts(data)[0])

            self.encode, self.decode = encode, decode


class ListCodec:
    """A list of stored elements <-> one concatenated byte string."""

    def __init__(self, element_type: TypeInformation, ttl_layout: bool) -> None:
        self.element_type = element_type
        self.ttl_layout = ttl_layout
        fmt = element_type.struct_format
        if fmt is not None:
            elem = struct.Struct((">q" + fmt[1:]) if ttl_layout else fmt)
            self._elem, self._fixed = elem, True
        else:
            self._elem, self._fixed = None, False

    def encode_element(self, stored: Any) -> bytes:
        if self._fixed:
            return self._elem.pack(stored[1], stored[0]) if self.ttl_layout else self._elem.pack(
                stored
            )
        if self.ttl_layout:
            data = self.element_type.encode(stored[0])
            return TS.pack(stored[1]) + _LEN.pack(len(data)) + data
        data = self.element_type.encode(stored)
        return _LEN.pack(len(data)) + data

    def encode_all(self, elements: list) -> bytes:
        if self._fixed:
            pack = self._elem.pack
            if self.ttl_layout:
                return b"".join([pack(ts, v) for v, ts in elements])
            return b"".join([pack(v) for v in elements])
        return b"".join([self.encode_element(e) for e in elements])

    def decode_all(self, data: bytes) -> list:
        if self._fixed:
            if len(data) % self._elem.size:
                raise ValueError(
                    f"list value of {len(data)} bytes is not a whole number of "
                    f"{self._elem.size}-byte elements"
                )
            if self.ttl_layout:
                return [(v, ts) for ts, v in self._elem.iter_unpack(data)]
            return [t[0] for t in self._elem.iter_unpack(data)]
        out, offset, end = [], 0, len(data)
        decode = self.element_type.decode
        while offset < end:
            ts = None
            if self.ttl_layout:
                (ts,) = TS.unpack_from(data, offset)
                offset += 8
            (length,) = _LEN.unpack_from(data, offset)
            offset += 4
            if offset + length > end:
                raise ValueError("truncated list element")
            value = decode(data[offset:offset + length])
            offset += length
            out.append((value, ts) if self.ttl_layout else value)
        return out


class MapValueCodec:
    """A map entry's stored value (user value may be None) <-> `[null flag][ts][user bytes]`."""

    def __init__(self, value_type: TypeInformation, ttl_layout: bool) -> None:
        self.value_type = value_type
        self.ttl_layout = ttl_layout

    def encode(self, stored: Any) -> bytes:
        if self.ttl_layout:
            value, ts = stored
            if value is None:
                return b"\x01" + TS.pack(ts)
            return b"\x00" + TS.pack(ts) + self.value_type.encode(value)
        if stored is None:
            return b"\x01"
        return b"\x00" + self.value_type.encode(stored)

    def decode(self, data: bytes) -> Any:
        is_null = data[0] == 1
        if self.ttl_layout:
            (ts,) = TS.unpack_from(data, 1)
            return (None if is_null else self.value_type.decode(data[9:]), ts)
        return None if is_null else self.value_type.decode(data[1:])
