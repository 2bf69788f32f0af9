"""State schema evolution: is a restored state's type readable with the new descriptor's type?

Avro-style rules, per unit: the same type is compatible as is; int -> long -> float -> double
widening and record changes that add a field with a default, remove a field or widen a field are
compatible after migration; anything else (renames, narrowing, other type changes, a changed map
key type) is incompatible and raises StateMigrationError naming the state and the change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from backends.errors import StateMigrationError
from backends.storage.spec import RawStateSpec
from backends.types import RowType, TypeInformation

_WIDENING = ["INT", "LONG", "FLOAT", "DOUBLE"]


def _incompatible(state: str, what: str) -> StateMigrationError:
    return StateMigrationError(f"state '{state}': incompatible schema change: {what}")


def type_migration(old: TypeInformation, new: TypeInformation, state: str,
                   path: str = "value") -> Callable[[Any], Any] | None:
    """None when `old` data reads as `new` unchanged, else a value -> value converter."""
    if old == new:
        return None
    if old.type_name in _WIDENING and new.type_name in _WIDENING:
        if _WIDENING.index(new.type_name) > _WIDENING.index(old.type_name):
            if new.type_name in ("FLOAT", "DOUBLE"):
                return lambda v, check=new.check: check(float(v))
            return lambda v: v
        raise _incompatible(state, f"{path} narrows {old.type_name} to {new.type_name}")
    if isinstance(old, RowType) and isinstance(new, RowType):
        return _record_migration(old, new, state, path)
    raise _incompatible(state, f"{path} changes type {old!r} -> {new!r}")


def _record_migration(old: RowType, new: RowType, state: str, path: str) -> Callable[[Any], Any]:
    old_fields = dict(zip(old.names, old.types))
    converters: dict[str, Callable[[Any], Any] | None] = {}
    for name, typ in zip(new.names, new.types):
        if name in old_fields:
            converters[name] = type_migration(old_fields[name], typ, state, f"{path}.{name}")
        elif name not in new.defaults:
            raise _incompatible(
                state, f"{path}.{name} is a new field without a default (a rename is not allowed)"
            )
    defaults = dict(new.defaults)

    def migrate(value: dict) -> dict:
        out = {}
        for name in new.names:
            if name in converters:
                v = value.get(name)
                fn = converters[name]
                out[name] = v if v is None or fn is None else fn(v)
            else:
                out[name] = defaults[name]
        return out

    return migrate


def resolve_value_migration(old: RawStateSpec, new: RawStateSpec) -> Callable[[Any], Any] | None:
    """The per-unit converter from `old` to `new` user values (None if none is needed)."""
    if old.kind != new.kind:
        raise StateMigrationError(
            f"state '{new.name}' holds {old.kind} state and cannot be registered as "
            f"{new.kind} state"
        )
    if old.key_type is not None and new.key_type is not None and old.key_type != new.key_type:
        raise _incompatible(
            new.name, f"map key type changes {old.key_type!r} -> {new.key_type!r}"
        )
    return type_migration(old.value_type, new.value_type, new.name)
