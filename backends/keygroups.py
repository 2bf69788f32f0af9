"""Key groups, as Flink assigns them, and the byte form of keys.

A key's key group is `murmurHash(hashCode(key)) % max_parallelism`; an operator instance owns a
contiguous key-group range, so rescaling moves whole key groups. For int keys the hash code is
Java's Long.hashCode, so an int key lands in the same key group as in Flink; str and bytes keys
use CRC-32 of their bytes (Java's String.hashCode is a per-character loop, far too slow in
Python), which is equally stable across processes and machines, unlike Python's own hash().
"""

from __future__ import annotations

import struct
import zlib

DEFAULT_MAX_PARALLELISM = 128
MAX_MAX_PARALLELISM = 1 << 15
_M32 = 0xFFFFFFFF
_KG = struct.Struct(">H")
_KEY_INT = struct.Struct(">Bq")
_KEY_VAR = struct.Struct(">BI")
TAG_INT, TAG_STR, TAG_BYTES = 1, 2, 3


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def murmur_hash(code: int) -> int:
    """Flink's MathUtils.murmurHash(int): one murmur3 round plus fmix32, made non-negative."""
    code &= _M32
    code = (code * 0xCC9E2D51) & _M32
    code = _rotl(code, 15)
    code = (code * 0x1B873593) & _M32
    code = _rotl(code, 13)
    code = (code * 5 + 0xE6546B64) & _M32
    code ^= 4
    code ^= code >> 16
    code = (code * 0x85EBCA6B) & _M32
    code ^= code >> 13
    code = (code * 0xC2B2AE35) & _M32
    code ^= code >> 16
    if code >= 0x80000000:  # as a signed Java int it is negative
        signed = code - (1 << 32)
        return 0 if signed == -(1 << 31) else -signed
    return code


def hash_code(key: str | int | bytes) -> int:
    """A stable 32-bit hash code for a key (Java's Long.hashCode for ints)."""
    cls = key.__class__
    if cls is int:
        v = key & 0xFFFFFFFFFFFFFFFF
        return (v ^ (v >> 32)) & _M32
    if cls is str:
        return zlib.crc32(key.encode("utf-8", "surrogatepass"))
    if cls is bytes:
        return zlib.crc32(key)
    raise TypeError(
        f"keys must be str, int or bytes, got {type(key).__name__} ({key!r})"
    )


def key_group_for(key: str | int | bytes, max_parallelism: int) -> int:
    return murmur_hash(hash_code(key)) % max_parallelism


def check_key(key: object) -> None:
    cls = key.__class__
    if cls is int:
        if not -(1 << 63) <= key < (1 << 63):  # type: ignore[operator]
            raise ValueError(f"int keys must fit in 64 bits, got {key}")
        return
    if cls is not str and cls is not bytes:
        raise TypeError(f"keys must be str, int or bytes, got {type(key).__name__} ({key!r})")


def serialize_key(key: str | int | bytes) -> bytes:
    """Self-delimiting key bytes: a type tag, then the key (so map user keys can follow it)."""
    cls = key.__class__
    if cls is int:
        return _KEY_INT.pack(TAG_INT, key)
    if cls is str:
        data = key.encode("utf-8", "surrogatepass")
        return _KEY_VAR.pack(TAG_STR, len(data)) + data
    return _KEY_VAR.pack(TAG_BYTES, len(key)) + key


def deserialize_key(buf: bytes, offset: int = 0) -> tuple[str | int | bytes, int]:
    """Inverse of serialize_key; returns (key, offset after it)."""
    tag = buf[offset]
    if tag == TAG_INT:
        return _KEY_INT.unpack_from(buf, offset)[1], offset + 9
    (_, length) = _KEY_VAR.unpack_from(buf, offset)
    start = offset + 5
    data = bytes(buf[start:start + length])
    if len(data) != length:
        raise ValueError("truncated key bytes")
    if tag == TAG_STR:
        return data.decode("utf-8", "surrogatepass"), start + length
    if tag == TAG_BYTES:
        return data, start + length
    raise ValueError(f"unknown key tag {tag}")


def key_group_prefix(key_group: int) -> bytes:
    return _KG.pack(key_group)


def check_max_parallelism(max_parallelism: int) -> int:
    if isinstance(max_parallelism, bool) or not isinstance(max_parallelism, int):
        raise TypeError(f"max_parallelism must be an int, got {max_parallelism!r}")
    if not 1 <= max_parallelism <= MAX_MAX_PARALLELISM:
        raise ValueError(
            f"max_parallelism must be in [1, {MAX_MAX_PARALLELISM}], got {max_parallelism}"
        )
    return max_parallelism


class KeyGroupRange:
    """An inclusive range of key groups [start, end] owned by one operator instance."""

    __slots__ = ("end", "start")

    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end

    @classmethod
    def of_operator(
        cls, operator_index: int, parallelism: int, max_parallelism: int
    ) -> KeyGroupRange:
        """Flink's computeKeyGroupRangeForOperatorIndex."""
        if not 0 <= operator_index < parallelism <= max_parallelism:
            raise ValueError(
                f"need 0 <= operator_index ({operator_index}) < parallelism ({parallelism}) "
                f"<= max_parallelism ({max_parallelism})"
            )
        start = (operator_index * max_parallelism + parallelism - 1) // parallelism
        end = ((operator_index + 1) * max_parallelism - 1) // parallelism
        return cls(start, end)

    @classmethod
    def all(cls, max_parallelism: int) -> KeyGroupRange:
        return cls(0, max_parallelism - 1)

    def __contains__(self, key_group: int) -> bool:
        return self.start <= key_group <= self.end

    def __iter__(self):
        return iter(range(self.start, self.end + 1))

    def __len__(self) -> int:
        return max(0, self.end - self.start + 1)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KeyGroupRange) and (self.start, self.end) == (
            other.start,
            other.end,
        )

    def __hash__(self) -> int:
        return hash((self.start, self.end))

    def __repr__(self) -> str:
        return f"KeyGroupRange({self.start}, {self.end})"


def operator_index_for_key_group(key_group: int, parallelism: int, max_parallelism: int) -> int:
    """Flink's computeOperatorIndexForKeyGroup."""
    return key_group * parallelism // max_parallelism
