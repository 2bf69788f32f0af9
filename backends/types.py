"""Declared value types and their byte serializers (never pickle).

`Types.LONG()` etc. mirror PyFlink's `Types`. Each type is its own serializer: `check` validates a
Python value against the declared type (TypeError naming the state's type, so bad input never
reaches storage), `encode`/`decode` give the bytes RocksDB stores, the `*_delimited` forms are
self-delimiting so elements can be concatenated (list state, record fields), and `snapshot()` is
the versioned description written into snapshot metadata for schema evolution.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

_LEN = struct.Struct(">I")
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


class TypeInformation:
    """Base of every declared type. Subclasses set `type_name` and implement the codec."""

    type_name = "?"
    version = 1
    fixed_length: int | None = None
    struct_format: str | None = None  # set for fixed-width scalars: lets codecs fuse packs
    int_bounds: tuple[int, int] | None = None  # integer types: lets hot paths inline the check

    def check(self, value: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def encode(self, value: Any) -> bytes:  # pragma: no cover - abstract
        raise NotImplementedError

    def decode(self, data: bytes) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def encode_delimited(self, value: Any) -> bytes:
        data = self.encode(value)
        return data if self.fixed_length is not None else _LEN.pack(len(data)) + data

    def decode_from(self, buf: bytes, offset: int) -> tuple[Any, int]:
        """Decode one delimited value at `offset`; returns (value, offset after it)."""
        if self.fixed_length is not None:
            end = offset + self.fixed_length
        else:
            (length,) = _LEN.unpack_from(buf, offset)
            offset += 4
            end = offset + length
        if end > len(buf):
            raise ValueError(f"truncated {self.type_name} value at byte {offset}")
        return self.decode(buf[offset:end]), end

    def snapshot(self) -> dict:
        """Versioned, JSON-able description used to resolve compatibility on restore."""
        return {"type": self.type_name, "version": self.version}

    def _wrong(self, value: Any) -> TypeError:
        return TypeError(
            f"value {value!r} of type {type(value).__name__} does not match the declared "
            f"type {self}"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeInformation) and self.snapshot() == other.snapshot()

    def __hash__(self) -> int:
        return hash(repr(self))

    def __repr__(self) -> str:
        return f"{self.type_name}()"


class _StructType(TypeInformation):
    """Fixed-width scalar packed with `struct` (big-endian, as Java's DataOutput)."""

    def __init__(self) -> None:
        self._struct = struct.Struct(self.struct_format)
        self.fixed_length = self._struct.size
        self.encode = self._struct.pack  # type: ignore[method-assign]
        self._unpack = self._struct.unpack

    def decode(self, data: bytes) -> Any:
        return self._unpack(data)[0]


class _IntegerType(_StructType):
    low = INT64_MIN
    high = INT64_MAX

    def __init__(self) -> None:
        super().__init__()
        low, high, wrong = self.low, self.high, self._wrong
        self.int_bounds = (low, high)

        def check(value: Any) -> int:
            # A closure over constants: this runs on every write of the hot path.
            if value.__class__ is int and low <= value <= high:
                return value
            if isinstance(value, bool) or not isinstance(value, int):
                raise wrong(value)
            value = int(value)
            if not low <= value <= high:
                raise ValueError(f"value {value} is out of range for the declared type {self}")
            return value

        self.check = check  # type: ignore[method-assign]


class LongType(_IntegerType):
    type_name = "LONG"
    struct_format = ">q"


class IntType(_IntegerType):
    type_name = "INT"
    struct_format = ">i"
    low, high = INT32_MIN, INT32_MAX


class _FloatingType(_StructType):
    def check(self, value: Any) -> float:
        if value.__class__ is float:
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._wrong(value)
        return float(value)


class DoubleType(_FloatingType):
    type_name = "DOUBLE"
    struct_format = ">d"


class FloatType(_FloatingType):
    type_name = "FLOAT"
    struct_format = ">f"

    def check(self, value: Any) -> float:
        # Round through 32 bits so heap and RocksDB return the same number.
        return self._unpack(self.encode(super().check(value)))[0]


class BooleanType(_StructType):
    type_name = "BOOLEAN"
    struct_format = ">?"

    def check(self, value: Any) -> bool:
        if value.__class__ is not bool:
            raise self._wrong(value)
        return value


class StringType(TypeInformation):
    type_name = "STRING"

    def check(self, value: Any) -> str:
        if value.__class__ is not str:
            if not isinstance(value, str):
                raise self._wrong(value)
            value = str(value)
        return value

    def encode(self, value: str) -> bytes:
        return value.encode("utf-8", "surrogatepass")

    def decode(self, data: bytes) -> str:
        return bytes(data).decode("utf-8", "surrogatepass")


class BytesType(TypeInformation):
    type_name = "BYTES"

    def check(self, value: Any) -> bytes:
        if value.__class__ is not bytes:
            if not isinstance(value, bytes | bytearray | memoryview):
                raise self._wrong(value)
            value = bytes(value)
        return value

    def encode(self, value: bytes) -> bytes:
        return value

    def decode(self, data: bytes) -> bytes:
        return bytes(data)


_MISSING = object()


class RowType(TypeInformation):
    """A named record (Python value: a dict field -> value); fields may be None.

    Schema evolution follows Avro-style rules (see backends/schema.py): fields may be
    added with a default, removed, or widened int -> long -> float -> double.
    """

    type_name = "ROW"

    def __init__(
        self,
        names: Sequence[str],
        types: Sequence[TypeInformation],
        defaults: Mapping[str, Any] | None = None,
    ) -> None:
        if len(names) != len(types):
            raise ValueError("ROW_NAMED needs as many field types as field names")
        if len(set(names)) != len(names):
            raise ValueError(f"ROW_NAMED field names must be unique: {list(names)}")
        for t in types:
            if not isinstance(t, TypeInformation):
                raise TypeError(f"ROW_NAMED field types must be Types.*(), got {t!r}")
        self.names = tuple(names)
        self.types = tuple(types)
        self.defaults = dict(defaults or {})
        unknown = set(self.defaults) - set(self.names)
        if unknown:
            raise ValueError(f"defaults given for unknown fields: {sorted(unknown)}")

    def check(self, value: Any) -> dict:
        if not isinstance(value, Mapping):
            raise self._wrong(value)
        extra = set(value) - set(self.names)
        if extra:
            raise TypeError(f"record has fields {sorted(extra)} not declared in {self}")
        out = {}
        for name, typ in zip(self.names, self.types):
            field_value = value.get(name, _MISSING)
            if field_value is _MISSING:
                if name not in self.defaults:
                    raise TypeError(f"record is missing field '{name}' of {self}")
                field_value = self.defaults[name]
            out[name] = None if field_value is None else typ.check(field_value)
        return out

    def encode(self, value: Mapping) -> bytes:
        parts = []
        for name, typ in zip(self.names, self.types):
            field_value = value[name]
            if field_value is None:
                parts.append(b"\x00")
            else:
                parts.append(b"\x01")
                parts.append(typ.encode_delimited(field_value))
        return b"".join(parts)

    def decode(self, data: bytes) -> dict:
        buf = bytes(data)
        out, offset = {}, 0
        for name, typ in zip(self.names, self.types):
            flag = buf[offset]
            offset += 1
            if flag == 0:
                out[name] = None
            else:
                out[name], offset = typ.decode_from(buf, offset)
        if offset != len(buf):
            raise ValueError(f"{len(buf) - offset} trailing bytes after a {self} record")
        return out

    def snapshot(self) -> dict:
        return {
            "type": self.type_name,
            "version": self.version,
            "fields": [
                {"name": n, "type": t.snapshot(), **(
                    {"default": self.defaults[n]} if n in self.defaults else {})}
                for n, t in zip(self.names, self.types)
            ],
        }

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}: {t!r}" for n, t in zip(self.names, self.types))
        return f"ROW<{inner}>"

    def __hash__(self) -> int:
        return hash(repr(self))


class Types:
    """PyFlink-style factory of declared types."""

    @staticmethod
    def LONG() -> LongType:
        return SINGLETON_TYPES["LONG"]

    @staticmethod
    def INT() -> IntType:
        return SINGLETON_TYPES["INT"]

    @staticmethod
    def DOUBLE() -> DoubleType:
        return SINGLETON_TYPES["DOUBLE"]

    @staticmethod
    def FLOAT() -> FloatType:
        return SINGLETON_TYPES["FLOAT"]

    @staticmethod
    def BOOLEAN() -> BooleanType:
        return SINGLETON_TYPES["BOOLEAN"]

    @staticmethod
    def STRING() -> StringType:
        return SINGLETON_TYPES["STRING"]

    @staticmethod
    def BYTES() -> BytesType:
        return SINGLETON_TYPES["BYTES"]

    @staticmethod
    def PRIMITIVE_ARRAY(element: TypeInformation) -> BytesType:  # PyFlink's BYTE array spelling
        if not isinstance(element, BytesType):
            raise TypeError("only PRIMITIVE_ARRAY(Types.BYTE()) is supported; use Types.BYTES()")
        return SINGLETON_TYPES["BYTES"]

    @staticmethod
    def ROW_NAMED(
        field_names: Sequence[str],
        field_types: Sequence[TypeInformation],
        defaults: Mapping[str, Any] | None = None,
    ) -> RowType:
        return RowType(field_names, field_types, defaults)

    RECORD = ROW_NAMED


SINGLETON_TYPES: dict[str, TypeInformation] = {
    "LONG": LongType(),
    "INT": IntType(),
    "DOUBLE": DoubleType(),
    "FLOAT": FloatType(),
    "BOOLEAN": BooleanType(),
    "STRING": StringType(),
    "BYTES": BytesType(),
}


def type_from_snapshot(snap: Mapping) -> TypeInformation:
    """Rebuild a declared type from its `snapshot()` (used when reading snapshot metadata)."""
    name = snap.get("type")
    if name == "ROW":
        fields = snap["fields"]
        return RowType(
            [f["name"] for f in fields],
            [type_from_snapshot(f["type"]) for f in fields],
            {f["name"]: f["default"] for f in fields if "default" in f},
        )
    if name not in SINGLETON_TYPES:
        raise ValueError(f"unknown serialized type '{name}' in snapshot metadata")
    return SINGLETON_TYPES[name]
