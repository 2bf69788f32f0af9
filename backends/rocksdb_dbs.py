"""How statebench opens RocksDB databases, shared by the RocksDB backend and checkpoint restore.

The backend keeps its states in column families of one main DB, and a compaction-filter state in
a DB of its own opened in RocksDB's TTL mode. A RocksDB checkpoint holds one folder per DB, named
by a label (`main`, or `ttl-<folder>` for a native-TTL DB). Restoring one either adopts those
folders as a backend's own DBs, or opens them where they are staged (`CheckpointReader`) so their
key groups can be copied into any backend. Both need to open DBs exactly as they were written,
which is why this lives below `rocksdb_backend.py` and `snapshot/`, and imports neither.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import rocksdict

from backends.cleanup.compaction_filter import native_ttl_seconds
from backends.rocksdb_options import RocksDBOptions
from backends.storage.layout import RawStateSpec
from backends.storage.rocksdb import ROCKS_RAW_BY_SHAPE

MAIN_DB = "main"
TTL_DB_PREFIX = "ttl-"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
# A DB label is one plain path component: no separator, no leading dot ("." and ".." excluded).
DB_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,200}")


def db_options(statistics: bool = False, tuning: RocksDBOptions | None = None,
               cache: Any = None) -> rocksdict.Options:
    """Options of every DB and column family statebench opens (raw bytes in and out), with
    the backend's tuning and shared block cache when given."""
    opts = rocksdict.Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.set_max_background_jobs(2)
    if tuning is not None:
        tuning.apply(opts, cache)
    if statistics:
        opts.enable_statistics()
    return opts


def ttl_db_folder_name(state_name: str, generation: int) -> str:
    """The folder of a state's native-TTL DB: the state's name made path-safe, plus a number."""
    return f"{_UNSAFE.sub('_', state_name)}-{generation}"


def open_ttl_db(directory: Path, spec: RawStateSpec, options: rocksdict.Options) -> Any:
    """Open (or create) the native-TTL DB of a state: a compaction-filter state's TTL, or
    for `native_ttl_ms == 0` (the `ttl_db` layout) RocksDB's TTL 0, which never expires."""
    assert spec.native_ttl_ms is not None
    ms = spec.native_ttl_ms
    seconds = 0 if ms == 0 else native_ttl_seconds(ms, spec.native_ttl_speedup)
    return rocksdict.Rdict(
        str(directory), options, access_type=rocksdict.AccessType.with_ttl(seconds))


def open_main_db(directory: Path, options: rocksdict.Options, families: list[str],
                 family_options: Callable[[], rocksdict.Options] = db_options) -> Any:
    """Open the main DB with these column families (besides the default one)."""
    column_families = {name: family_options() for name in families}
    return rocksdict.Rdict(str(directory), options, column_families=column_families)


def staged_db_folder(staged: Path, label: str) -> Path:
    """The folder of DB `label` inside a staged checkpoint; refuses a label that is not one
    plain path component, so nothing outside `staged` can be opened or moved."""
    if not isinstance(label, str) or not DB_LABEL.fullmatch(label):
        raise ValueError(f"bad RocksDB checkpoint DB label {label!r}")
    return staged / label


@dataclass
class CheckpointLayout:
    """Where each state of a RocksDB checkpoint lives: a column family of the main DB, or a
    native-TTL DB of its own (a label naming its folder in the checkpoint)."""

    families: dict[str, RawStateSpec] = field(default_factory=dict)  # column family -> spec
    native: dict[str, tuple[RawStateSpec, str]] = field(default_factory=dict)  # name -> label


@dataclass
class StatePlacement:
    """One state in a checkpoint just taken: its spec, DB label, column family and SST bytes."""

    spec: RawStateSpec
    db: str
    column_family: str | None
    sst_bytes: int


@dataclass
class LocalCheckpoint:
    """A RocksDB checkpoint of every DB of a backend, hard-linked into `folder/<label>`."""

    folder: Path
    dbs: list[str]
    states: list[StatePlacement]


class _Scanned:
    """Owner of a staged checkpoint's raw states: they are scanned, never read by current key,
    so a keyed access would raise NoCurrentKeyError."""

    _cur_prefix = None


class CheckpointReader:
    """A staged RocksDB checkpoint opened where it is, to copy its key groups elsewhere.

    Use as a context manager: every DB it opened is closed on exit. The staged folders are
    opened, so RocksDB may write (logs, compactions) inside them, and nowhere else."""

    def __init__(self, staged: Path, layout: CheckpointLayout) -> None:
        self._dbs: list[Any] = []
        self._raw: dict[str, Any] = {}
        owner = _Scanned()
        try:
            main = open_main_db(staged_db_folder(staged, MAIN_DB), db_options(),
                                list(layout.families))
            self._dbs.append(main)
            for cf_name, spec in layout.families.items():
                handle = main.get_column_family(cf_name)
                self._raw[spec.name] = ROCKS_RAW_BY_SHAPE[spec.shape](owner, spec, handle)
            for name, (spec, label) in layout.native.items():
                db = open_ttl_db(staged_db_folder(staged, label), spec, db_options())
                self._dbs.append(db)
                self._raw[name] = ROCKS_RAW_BY_SHAPE[spec.shape](owner, spec, db)
        except BaseException:
            self.close()
            raise

    def raw_states(self) -> list[tuple[str, Any]]:
        """(state name, raw state) of every state in the checkpoint, by name."""
        return sorted(self._raw.items())

    def close(self) -> None:
        for raw in self._raw.values():
            raw.release()
        self._raw.clear()
        for db in reversed(self._dbs):  # column-family handles before their DB
            db.close()
        self._dbs.clear()

    def __enter__(self) -> CheckpointReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
