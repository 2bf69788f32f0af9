"""State schema evolution: is a restored state's type readable with the new descriptor's type?

Avro-style rules, per unit: the same type is compatible as is; int -> long -> float -> double
widening and record changes that add a field with a default, remove a field or widen a field are
compatible after migration; anything else (renames, narrowing, other type changes, a changed map
key type) is incompatible and raises StateMigrationError naming the state and the change.

Every declared type is its own serializer and writes a versioned snapshot of itself
(`TypeInformation.snapshot()`) into snapshot metadata; `restored_type` rebuilds the old type from
it (refusing snapshots of unknown types or of a newer serializer version) and
`resolve_compatibility` classifies the change as Flink's TypeSerializerSchemaCompatibility does:
compatible as is, compatible after migration, or incompatible (raised).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from backends.errors import StateMigrationError
from backends.storage.layout import RawStateSpec
from backends.types import SINGLETON_TYPES, RowType, TypeInformation, type_from_snapshot

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


COMPATIBLE_AS_IS = "compatible_as_is"
COMPATIBLE_AFTER_MIGRATION = "compatible_after_migration"


def resolve_compatibility(old: RawStateSpec, new: RawStateSpec) -> str:
    """COMPATIBLE_AS_IS or COMPATIBLE_AFTER_MIGRATION for re-registering `old` data as `new`.

    Raises StateMigrationError (naming the state and the change) when incompatible. Switching
    TTL on or off is a migration (Flink 2.x), not an incompatibility."""
    value_fn = resolve_value_migration(old, new)
    if value_fn is None and old.ttl_layout == new.ttl_layout:
        return COMPATIBLE_AS_IS
    return COMPATIBLE_AFTER_MIGRATION


def _current_version(snap: Mapping) -> int | None:
    name = snap.get("type")
    if name == "ROW":
        return RowType.version
    cls = type(SINGLETON_TYPES[name]) if name in SINGLETON_TYPES else None
    return None if cls is None else cls.version


def _check_versions(state: str, snap: Mapping, path: str) -> None:
    current = _current_version(snap)
    if current is None:
        raise StateMigrationError(
            f"state '{state}': {path} was written by an unknown serializer {snap.get('type')!r}")
    version = snap.get("version")
    if not isinstance(version, int) or version > current:
        raise StateMigrationError(
            f"state '{state}': {path} was written by {snap.get('type')} serializer version "
            f"{version}, newer than this statebench's version {current}")
    for f in snap.get("fields", ()) if snap.get("type") == "ROW" else ():
        _check_versions(state, f["type"], f"{path}.{f['name']}")


def restored_type(state: str, snap: Mapping, path: str = "value") -> TypeInformation:
    """The type a state was written with, rebuilt from its serializer snapshot."""
    if not isinstance(snap, Mapping):
        raise StateMigrationError(f"state '{state}': {path} has no serializer snapshot")
    _check_versions(state, snap, path)
    return type_from_snapshot(snap)
