"""Errors of the state API.

They are distinct types so callers (and outside conformance suites) can tell a programming
mistake (no current key) from an incompatible restore (schema/serializer change)."""

from __future__ import annotations


class NoCurrentKeyError(RuntimeError):
    """A keyed state was accessed before `set_current_key` gave it a key to work on."""

    def __init__(self, state_name: str | None = None) -> None:
        where = f" (state '{state_name}')" if state_name else ""
        super().__init__(
            f"no current key set{where}: call backend.set_current_key(key) before accessing state"
        )


class StateMigrationError(Exception):
    """A restored state cannot be read with the descriptor it is re-registered with.

    Mirrors Flink's StateMigrationException: the message names the state and the change."""


class CorruptSnapshotError(ValueError):
    """A snapshot file is truncated, has a bad checksum or does not parse; names the file."""


class SnapshotNotFoundError(CorruptSnapshotError, FileNotFoundError):
    """A snapshot folder is gone (deleted by checkpoint retention, or a wrong path).

    A CorruptSnapshotError, so one `except` catches every unusable snapshot; also a
    FileNotFoundError, as it was before it had a type of its own."""
