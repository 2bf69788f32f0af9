"""The RocksDB backend: state in RocksDB through rocksdict (Flink's EmbeddedRocksDBStateBackend).

One DB per backend instance under `path`, one column family per state; a state with the
compaction-filter cleanup gets a DB of its own in RocksDB's TTL mode (see
cleanup/compaction_filter.py). The write-ahead log is off by default, as Flink runs RocksDB:
checkpoints are the durability, and the WAL costs ~15-25% of put throughput here (README).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import rocksdict

from backends import descriptors as d
from backends.cleanup.compaction_filter import (
    PeriodicCompaction,
    dropped_by_filter,
    native_ttl_seconds,
)
from backends.keyed_backend import KEY_CACHE_LIMIT, KeyedStateBackend
from backends.keygroups import check_key, key_group_prefix, serialize_key
from backends.storage.rocksdb import ROCKS_RAW_BY_SHAPE
from backends.storage.spec import RawStateSpec
from backends.ttl.context import TtlContext
from backends.ttl_config import StateTtlConfig

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def _db_options(statistics: bool = False) -> rocksdict.Options:
    opts = rocksdict.Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.set_max_background_jobs(2)
    if statistics:
        opts.enable_statistics()
    return opts


class RocksDBKeyedStateBackend(KeyedStateBackend):
    """Keyed state in RocksDB; full snapshots in the canonical format, incremental ones as SSTs."""

    kind = "rocksdb"

    def __init__(
        self,
        clock: Any = None,
        max_parallelism: int = 128,
        path: str | Path | None = None,
        disable_wal: bool = True,
        key_group_range: Any = None,
    ) -> None:
        super().__init__(clock, max_parallelism, key_group_range)
        self._tmp = None
        if path is None:
            self._tmp = tempfile.mkdtemp(prefix="statebench-rocksdb-")
            path = self._tmp
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.disable_wal = disable_wal
        self._write_options = rocksdict.WriteOptions()
        self._write_options.disable_wal = disable_wal
        self.db_path = self.path / "db"
        if self.db_path.exists() and any(self.db_path.iterdir()):
            raise ValueError(
                f"RocksDB path {self.db_path} already holds a database; use restore_backend to "
                "open state from a snapshot, or give an empty path"
            )
        self._options = _db_options()
        self.db = rocksdict.Rdict(str(self.db_path), self._options)
        self.db.set_write_options(self._write_options)
        self._cf_names: dict[int, str] = {}
        self._native: dict[int, tuple[Any, Any, Path]] = {}  # id(raw) -> (db, options, dir)
        self._generation = 0
        self._cur_prefix: bytes | None = None
        self._prefix_cache: dict = {}
        self._make_key_selector()

    # ----------------------------------------------------------------- keys
    def _make_key_selector(self) -> None:
        """Build set_current_key as a closure: it runs once per record."""
        cache, hooks, prefix_of, backend = (
            self._prefix_cache, self._record_hooks, self._prefix_of, self)

        def set_current_key(key: Any) -> None:
            cls = key.__class__
            if cls is int or cls is str or cls is bytes:
                try:
                    prefix = cache[key]
                except KeyError:
                    prefix = prefix_of(key)
            else:
                prefix = prefix_of(key)
            backend._cur_key = key
            backend._cur_prefix = prefix
            if hooks:
                for hook in hooks:
                    hook()

        self.set_current_key = set_current_key  # type: ignore[method-assign]

    def _prefix_of(self, key: Any) -> bytes:
        check_key(key)
        kg = self.key_group(key)
        if kg not in self.key_group_range:
            raise ValueError(
                f"key {key!r} is in key group {kg}, outside this backend's {self.key_group_range}"
            )
        prefix = key_group_prefix(kg) + serialize_key(key)
        if len(self._prefix_cache) >= KEY_CACHE_LIMIT:
            self._prefix_cache.clear()
        self._prefix_cache[key] = prefix
        return prefix

    @property
    def _cur_kg(self) -> int | None:
        p = self._cur_prefix
        return None if p is None else int.from_bytes(p[:2], "big")

    # ----------------------------------------------------------------- raw states
    def _spec_for(self, desc: d.StateDescriptor) -> RawStateSpec:
        spec = super()._spec_for(desc)
        cfg = desc.ttl_config
        if not desc.ttl_enabled or cfg is None:
            return spec
        strategy = cfg.get_cleanup_strategies().get_rocksdb_compact_filter_cleanup_strategy()
        processing = (
            cfg.get_ttl_time_characteristic()
            is StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
        )
        if strategy is not None and processing and getattr(self.clock, "wall_clock_driven", False):
            return replace(
                spec,
                native_ttl_ms=cfg.get_ttl(),
                native_ttl_speedup=float(getattr(self.clock, "speedup", 1.0)),
            )
        return spec

    def _create_raw(self, spec: RawStateSpec, replacing: Any = None) -> Any:
        self._generation += 1
        suffix = "" if replacing is None else f"~{self._generation}"
        cls = ROCKS_RAW_BY_SHAPE[spec.shape]
        if spec.native_ttl_ms is not None:
            seconds = native_ttl_seconds(spec.native_ttl_ms, spec.native_ttl_speedup)
            directory = self.path / "ttl" / f"{_SAFE.sub('_', spec.name)}-{self._generation}"
            directory.mkdir(parents=True, exist_ok=True)
            options = _db_options(statistics=True)
            db = rocksdict.Rdict(
                str(directory), options, access_type=rocksdict.AccessType.with_ttl(seconds)
            )
            db.set_write_options(self._write_options)
            raw = cls(self, spec, db)
            self._native[id(raw)] = (db, options, directory)
            return raw
        cf_name = spec.name + suffix
        db = self.db.create_column_family(cf_name, _db_options())
        db.set_write_options(self._write_options)
        raw = cls(self, spec, db)
        self._cf_names[id(raw)] = cf_name
        return raw

    def _drop_raw(self, raw: Any) -> None:
        native = self._native.pop(id(raw), None)
        if native is not None:
            db, _, directory = native
            db.close()
            shutil.rmtree(directory, ignore_errors=True)
            return
        cf_name = self._cf_names.pop(id(raw), None)
        if cf_name is not None:
            self.db.drop_column_family(cf_name)

    def column_family_name(self, raw: Any) -> str | None:
        return self._cf_names.get(id(raw))

    def native_ttl_db(self, name: str) -> Any:
        """The TTL-mode DB of a compaction-filter state, or None."""
        native = self._native.get(id(self.raw_state(name)))
        return None if native is None else native[0]

    def _install_backend_cleanups(
        self, desc: d.StateDescriptor, raw: Any, ctx: TtlContext
    ) -> None:
        strategies = ctx.config.get_cleanup_strategies()
        if strategies.is_explicit_incremental():
            self._note_not_applicable(
                desc.name,
                "incremental: RocksDB has no in-memory entry iterator (Flink skips it silently)",
            )
        native = self._native.get(id(raw))
        if native is not None:
            filter_cfg = strategies.get_rocksdb_compact_filter_cleanup_strategy()
            if filter_cfg is not None and filter_cfg.periodic_compaction_time_ms > 0:
                self._hook(
                    desc.name,
                    PeriodicCompaction(
                        native[0], filter_cfg.periodic_compaction_time_ms,
                        raw.spec.native_ttl_speedup,
                    ),
                )

    def cleanup_counts(self) -> dict[str, dict[str, int | float]]:
        for name, raw in self._raw.items():
            native = self._native.get(id(raw))
            if native is not None:
                self.counters(name).compaction_filter = dropped_by_filter(native[1])
        return super().cleanup_counts()

    # ----------------------------------------------------------------- sizes
    def _handles(self) -> list[Any]:
        handles = [self.db]
        handles += [self.db.get_column_family(n) for n in self._cf_names.values()]
        handles += [db for db, _, _ in self._native.values()]
        return handles

    def physical_bytes(self) -> int:
        """SST files plus memtables over every column family and native-TTL DB."""
        total = 0
        for h in self._handles():
            for prop in ("rocksdb.total-sst-files-size", "rocksdb.cur-size-all-mem-tables"):
                total += h.property_int_value(prop) or 0
        return total

    # ----------------------------------------------------------------- restore from checkpoints
    def adopt_checkpoint_db(
        self,
        staged: Path,
        column_families: dict[str, RawStateSpec],
        native: dict[str, tuple[RawStateSpec, Path]] | None = None,
    ) -> None:
        """Replace this still-empty backend's DB by a restored RocksDB checkpoint.

        Used by backends/snapshot/incremental.py. `staged` holds the checkpoint's verified files;
        it is moved into place and opened with `column_families` (column family name -> the spec
        its state was written with). `native` maps a state name to (spec, staged folder) for
        states that lived in a native-TTL DB of their own (compaction-filter cleanup)."""
        if self._raw:
            raise ValueError("a checkpoint can only be adopted by a backend without states")
        self.db.close()
        shutil.rmtree(self.db_path, ignore_errors=True)
        shutil.move(str(staged), str(self.db_path))
        families = {name: _db_options() for name in column_families}
        self.db = rocksdict.Rdict(str(self.db_path), self._options, column_families=families)
        self.db.set_write_options(self._write_options)
        for cf_name, spec in column_families.items():
            handle = self.db.get_column_family(cf_name)
            handle.set_write_options(self._write_options)
            raw = ROCKS_RAW_BY_SHAPE[spec.shape](self, spec, handle)
            self._cf_names[id(raw)] = cf_name
            self._raw[spec.name] = raw
            suffix = cf_name.rpartition("~")[2]
            if suffix.isdigit():  # later migrations must not reuse a restored family's name
                self._generation = max(self._generation, int(suffix))
        for spec, folder in (native or {}).values():
            assert spec.native_ttl_ms is not None
            self._generation += 1
            directory = self.path / "ttl" / f"{_SAFE.sub('_', spec.name)}-{self._generation}"
            directory.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(folder), str(directory))
            options = _db_options(statistics=True)
            seconds = native_ttl_seconds(spec.native_ttl_ms, spec.native_ttl_speedup)
            db = rocksdict.Rdict(
                str(directory), options, access_type=rocksdict.AccessType.with_ttl(seconds)
            )
            db.set_write_options(self._write_options)
            raw = ROCKS_RAW_BY_SHAPE[spec.shape](self, spec, db)
            self._native[id(raw)] = (db, options, directory)
            self._raw[spec.name] = raw

    def native_ttl_dirs(self) -> dict[str, tuple[Any, Path]]:
        """State name -> (native-TTL DB, its folder), for checkpoints."""
        out = {}
        for name, raw in self._raw.items():
            native = self._native.get(id(raw))
            if native is not None:
                out[name] = (native[0], native[2])
        return out

    # ----------------------------------------------------------------- lifecycle
    def flush(self) -> None:
        for h in self._handles():
            h.flush()

    def compact(self) -> None:
        """Manual compaction of every column family (and native-TTL DB), after a flush."""
        self._check_open()
        for h in self._handles():
            h.flush()
            h.compact_range(None, None)

    def close(self) -> None:
        """Close every handle before the folder may go: a column-family handle that outlives
        its DB flushes when garbage-collected, and if its folder is gone RocksDB stalls ~1 s."""
        if self._closed:
            return
        for raw in self._raw.values():
            raw.release()
        for db, _, _ in self._native.values():
            db.close()
        self._native.clear()
        self.db.close()
        super().close()
        self._raw.clear()
        self._states.clear()
        self._timer_indexes.clear()
        self._timer_clocks.clear()
        self._record_hooks.clear()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
