"""The RocksDB backend: state in RocksDB through rocksdict (Flink's EmbeddedRocksDBStateBackend).

One DB per backend instance under `path`, one column family per state; a state with the
compaction-filter cleanup gets a DB of its own in RocksDB's TTL mode (see
cleanup/compaction_filter.py), and with `rocksdb_options={"state_layout": "ttl_db"}` every state
does. The same `rocksdb_options` tune every DB and column family alike (rocksdb_options.py), and
`rocksdb_stats()` reads back what RocksDB did (flushes, compactions, SST files). The write-ahead
log is off by default, as Flink runs RocksDB: checkpoints are the durability, and the WAL costs
~15-25% of put throughput here (docs/performance.md).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import rocksdict

from backends import descriptors as d
from backends.cleanup.compaction_filter import PeriodicCompaction, dropped_by_filter
from backends.keyed_backend import KEY_CACHE_LIMIT, KeyedStateBackend
from backends.keygroups import check_key, key_group_prefix, serialize_key
from backends.rocksdb_dbs import (
    MAIN_DB,
    TTL_DB_PREFIX,
    CheckpointLayout,
    LocalCheckpoint,
    StatePlacement,
    db_options,
    open_main_db,
    open_ttl_db,
    staged_db_folder,
    ttl_db_folder_name,
)
from backends.rocksdb_options import TTL_DB, RocksDBOptions, summed_statistics
from backends.storage.layout import RawStateSpec
from backends.storage.rocksdb import ROCKS_RAW_BY_SHAPE, key_prefix_length
from backends.ttl.context import TtlContext
from backends.ttl_config import StateTtlConfig


class RocksDBKeyedStateBackend(KeyedStateBackend):
    """Keyed state in RocksDB; full snapshots in the canonical format, incremental ones as SSTs."""

    kind = "rocksdb"
    native_checkpoints = True
    serialized_storage = True

    def __init__(
        self,
        clock: Any = None,
        max_parallelism: int = 128,
        path: str | Path | None = None,
        disable_wal: bool = True,
        key_group_range: Any = None,
        rocksdb_options: RocksDBOptions | dict[str, Any] | None = None,
    ) -> None:
        super().__init__(clock, max_parallelism, key_group_range)
        self.rocksdb_options = RocksDBOptions.of(rocksdb_options)
        self._cache = self.rocksdb_options.new_cache()
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
        self._options = self._db_options(self.rocksdb_options.statistics)
        self.db = rocksdict.Rdict(str(self.db_path), self._options)
        self.db.set_write_options(self._write_options)
        self._cf_names: dict[int, str] = {}
        self._native: dict[int, tuple[Any, Any, Path]] = {}  # id(raw) -> (db, options, dir)
        self._generation = 0
        self._cur_prefix: bytes | None = None
        self._prefix_cache: dict = {}
        self._make_key_selector()
        period = self.rocksdb_options.periodic_compaction_ms
        if period is not None:  # rocksdict has no periodic_compaction_seconds: statebench runs it
            every_db = SimpleNamespace(compact_range=self._compact_every_db)
            speedup = float(getattr(self.clock, "speedup", 1.0))
            self._record_hooks.append(PeriodicCompaction(every_db, period, speedup))

    def _db_options(self, statistics: bool = False) -> rocksdict.Options:
        """Options of a DB or column family of this backend: its tuning and block cache."""
        return db_options(statistics, self.rocksdb_options, self._cache)

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

    # ----------------------------------------------------------------- raw states
    def _spec_for(self, desc: d.StateDescriptor) -> RawStateSpec:
        spec = super()._spec_for(desc)
        cfg = desc.ttl_config
        if not desc.ttl_enabled or cfg is None:
            return self._in_layout(spec)
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
        return self._in_layout(spec)

    def _in_layout(self, spec: RawStateSpec) -> RawStateSpec:
        """A state without a compaction filter: a column family, or in the `ttl_db` layout a
        TTL DB of its own whose TTL (0) never expires."""
        native = 0 if self.rocksdb_options.state_layout == TTL_DB else None
        if spec.native_ttl_ms == native and spec.native_ttl_speedup == 1.0:
            return spec
        return replace(spec, native_ttl_ms=native, native_ttl_speedup=1.0)

    def _create_raw(self, spec: RawStateSpec, replacing: Any = None) -> Any:
        self._generation += 1
        suffix = "" if replacing is None else f"~{self._generation}"
        cls = ROCKS_RAW_BY_SHAPE[spec.shape]
        if spec.native_ttl_ms is not None:
            directory = self.path / "ttl" / ttl_db_folder_name(spec.name, self._generation)
            directory.mkdir(parents=True, exist_ok=True)
            return self._open_native(spec, directory)
        cf_name = spec.name + suffix
        db = self.db.create_column_family(cf_name, self._db_options())
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

    def _open_native(self, spec: RawStateSpec, directory: Path) -> Any:
        """Open a state's native-TTL DB in `directory` and register its raw state's handle.
        A compaction filter's DB always has statistics: they count what the filter dropped."""
        options = self._db_options(bool(spec.native_ttl_ms) or self.rocksdb_options.statistics)
        db = open_ttl_db(directory, spec, options)
        db.set_write_options(self._write_options)
        raw = ROCKS_RAW_BY_SHAPE[spec.shape](self, spec, db)
        self._native[id(raw)] = (db, options, directory)
        return raw

    def native_ttl_db(self, name: str) -> Any:
        """The TTL-mode DB of a state (compaction filter, or the `ttl_db` layout), or None."""
        native = self._native.get(id(self.raw_state(name)))
        return None if native is None else native[0]

    def _install_backend_cleanups(
        self, desc: d.StateDescriptor, raw: Any, ctx: TtlContext
    ) -> None:
        strategies = ctx.config.get_cleanup_strategies()
        if strategies.is_explicit_incremental():
            self.note_not_applicable(
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
            if native is not None and raw.spec.native_ttl_ms:
                self.counters(name).compaction_filter = dropped_by_filter(native[1])
        return super().cleanup_counts()

    # ----------------------------------------------------------------- sizes
    def _handles(self) -> list[Any]:
        """The main DB, every state's column family and every native-TTL DB. The states' own
        handles are used: a column-family handle fetched anew (`get_column_family`) flushes
        its memtable when it is garbage-collected, so asking for sizes would cause flushes."""
        handles = [self.db]
        handles += [raw.db for raw in self._raw.values() if id(raw) in self._cf_names]
        handles += [db for db, _, _ in self._native.values()]
        return handles

    def physical_bytes(self) -> int:
        """SST files plus memtables over every column family and native-TTL DB."""
        total = 0
        for h in self._handles():
            for prop in ("rocksdb.total-sst-files-size", "rocksdb.cur-size-all-mem-tables"):
                total += h.property_int_value(prop) or 0
        return total

    def rocksdb_stats(self) -> dict[str, int | float | bool | None]:
        """What RocksDB did and holds, summed over every column family and native-TTL DB.

        From properties: `sst_files` and `sst_bytes` (live SST files), `memtable_bytes`. From
        RocksDB statistics (None when `statistics` is off): `flushes`, `compactions`,
        `flush_bytes_written`, `compaction_bytes_read`, `compaction_bytes_written`,
        `compaction_keys_dropped` (by the compaction filter) and `write_amplification`, RocksDB's
        own "Sum" definition: bytes written by flushes and compactions / bytes flushed."""
        self._check_open()
        dbs = [(self.db, self._options)] + [(db, opts) for db, opts, _ in self._native.values()]
        files = [f for db, _ in dbs for f in db.live_files()]
        memtables = sum(h.property_int_value("rocksdb.cur-size-all-mem-tables") or 0
                        for h in self._handles())
        out: dict[str, int | float | bool | None] = {
            "sst_files": len(files), "sst_bytes": sum(f["size"] for f in files),
            "memtable_bytes": memtables, "statistics": self.rocksdb_options.statistics}
        counted = summed_statistics([opts.get_statistics() or "" for _, opts in dbs])
        if not self.rocksdb_options.statistics:
            out.update(dict.fromkeys(counted), write_amplification=None)
            return out
        out.update(counted)
        flushed = counted["flush_bytes_written"]
        written = flushed + counted["compaction_bytes_written"]
        out["write_amplification"] = written / flushed if flushed else None
        return out

    # ----------------------------------------------------------------- checkpoints and restore
    def create_checkpoint(self, folder: Path) -> LocalCheckpoint:
        """The synchronous part of an incremental checkpoint: flush the memtables, then
        hard-link a RocksDB checkpoint of every DB into `folder/<label>` (a folder that must
        not exist yet). Returns the labels and where each state lives, with its SST bytes."""
        self._check_open()
        self.flush()
        dbs = {MAIN_DB: self.db}
        states = []
        for _, raw in self.raw_states():
            native = self._native.get(id(raw))
            if native is None:
                label, cf_name, handle = MAIN_DB, self._cf_names[id(raw)], raw.db
            else:
                label, cf_name, handle = TTL_DB_PREFIX + native[2].name, None, native[0]
                dbs[label] = handle
            size = handle.property_int_value("rocksdb.total-sst-files-size") or 0
            states.append(StatePlacement(raw.spec, label, cf_name, size))
        for label, db in dbs.items():
            rocksdict.Checkpoint(db).create_checkpoint(str(folder / label))
        return LocalCheckpoint(folder, list(dbs), states)

    def adopt_checkpoint(self, staged: Path, layout: CheckpointLayout) -> None:
        """Make a restored RocksDB checkpoint this still-empty backend's DBs (Flink's fast
        path: same key groups, no copy). `staged/<label>` hold the checkpoint's verified files;
        they are moved under this backend's `path` and opened as `layout` says."""
        if self._raw:
            raise ValueError("a checkpoint can only be adopted by a backend without states")
        main = staged_db_folder(staged, MAIN_DB)
        natives = {name: (spec, staged_db_folder(staged, label))
                   for name, (spec, label) in layout.native.items()}
        self.db.close()
        shutil.rmtree(self.db_path, ignore_errors=True)
        shutil.move(str(main), str(self.db_path))
        self.db = open_main_db(self.db_path, self._options, list(layout.families),
                               self._db_options)
        self.db.set_write_options(self._write_options)
        for cf_name, spec in layout.families.items():
            handle = self.db.get_column_family(cf_name)
            handle.set_write_options(self._write_options)
            raw = ROCKS_RAW_BY_SHAPE[spec.shape](self, spec, handle)
            self._cf_names[id(raw)] = cf_name
            self._raw[spec.name] = raw
            suffix = cf_name.rpartition("~")[2]
            if suffix.isdigit():  # later migrations must not reuse a restored family's name
                self._generation = max(self._generation, int(suffix))
        for name, (spec, folder) in natives.items():
            self._generation += 1
            directory = self.path / "ttl" / ttl_db_folder_name(spec.name, self._generation)
            directory.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(folder), str(directory))
            self._raw[name] = self._open_native(spec, directory)

    def _placement(self, spec: RawStateSpec) -> RawStateSpec:
        """A compaction filter's native-TTL placement is kept where it can be reopened (on a
        wall-driven clock); every other restored state takes this backend's layout."""
        if spec.native_ttl_ms and getattr(self.clock, "wall_clock_driven", False):
            return spec
        return self._in_layout(spec)

    def copy_restored(self, source: Any, key_groups: Iterable[int]) -> int:
        """A state restored with the spec it was stored with is copied as its stored bytes,
        key group by key group (no decoding); otherwise entry by entry. Returns the keys."""
        raw = self._restored_raw(source.spec)
        if raw.spec != source.spec:
            return super().copy_restored(source, key_groups)
        put, is_map, last, keys = raw.db.put, source.spec.shape == "map", b"", 0
        for kg in key_groups:
            for k, v in source.scan(key_group_prefix(kg)):
                put(k, v)
                if is_map:  # a map holds one RocksDB entry per map entry
                    prefix = k[:key_prefix_length(k)]
                    if prefix == last:
                        continue
                    last = prefix
                keys += 1
        return keys

    # ----------------------------------------------------------------- lifecycle
    def flush(self) -> None:
        for h in self._handles():
            h.flush()

    def _compact_every_db(self, begin: bytes | None, end: bytes | None) -> None:
        """The periodic compaction: every column family and native-TTL DB, no flush first."""
        for h in self._handles():
            h.compact_range(begin, end)

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
        self._end_snapshots()  # its iterators and work folder go before the handles do
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
