"""RocksDB incremental checkpoints: native SST files, uploaded once and shared between checkpoints.

Taking one (`mode="incremental"`, as Flink's RocksDB backend does it):
1. synchronous part: flush the memtables and make a RocksDB `Checkpoint` of the live DB (hard
   links) and of every native-TTL DB, in a local work folder;
2. asynchronous part: SST files are immutable and keep their names for the DB's life, so each
   one is uploaded once into `<target>/shared/` (named `<uploader id>-<db>-<sst name>`) and
   later checkpoints that still contain it only reference it; the small per-checkpoint files
   (MANIFEST, CURRENT, OPTIONS, ...) are copied as private files of `chk-<id>/`; operator state
   is written in the canonical format; the metadata is committed last.
3. retention: only the newest `retained_checkpoints + 1` complete incremental checkpoints in the
   target are kept. A shared file's reference count is the number of retained checkpoints whose
   metadata lists it; dropping a checkpoint deletes its folder (metadata first), and every shared
   file that no retained checkpoint references is deleted, including ones left by an
   interrupted upload.

Full-snapshot TTL cleanup does not apply (SST files are uploaded as they are, flink-ttl-facts
§2.1): a state asking for it is reported in `stats.not_applicable` instead.

Restoring one checks every file's size and crc32 while copying it into a staging folder, then
either adopts the files as the new backend's DB (RocksDB, same key groups: Flink's fast path) or,
when rescaling or restoring into the heap backend, opens them as a temporary DB and copies the
wanted key groups over (raw bytes into RocksDB, decoded containers into the heap).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
import weakref
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import rocksdict

from backends.clocks import ManualClock
from backends.errors import CorruptSnapshotError
from backends.keygroups import key_group_prefix
from backends.snapshot.fsio import Location, ReadCounter
from backends.snapshot.handle import RestoreStats, SnapshotHandle, SnapshotStats
from backends.snapshot.latest import complete_checkpoints
from backends.snapshot.metadata import METADATA_NAME, commit_metadata
from backends.snapshot.specs import spec_from_json, spec_to_json
from backends.snapshot.writer import (
    operator_states_of,
    prepare_snapshot_dir,
    snapshot_body,
    write_operator_states,
)
from backends.storage.rocksdb import key_prefix_length

SHARED_DIR = "shared"
MAIN_DB = "main"
NOT_APPLICABLE = ("full_snapshot cleanup: not applicable to incremental RocksDB checkpoints "
                  "(SST files are uploaded as they are, as in Flink)")


@dataclass
class SharedFile:
    name: str
    size: int
    crc32: int


@dataclass
class SharedRegistry:
    """The SST files one backend uploaded to one target: (db, local sst name) -> shared file."""

    uploader: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    uploaded: dict[tuple[str, str], SharedFile] = field(default_factory=dict)


_REGISTRIES: weakref.WeakKeyDictionary[Any, dict[str, SharedRegistry]] = (
    weakref.WeakKeyDictionary())


def _registry(backend: Any, target: Location) -> SharedRegistry:
    return _REGISTRIES.setdefault(backend, {}).setdefault(str(target), SharedRegistry())


# --------------------------------------------------------------------------- taking
def take_incremental(backend: Any, checkpoint_id: int, target: Location,
                     retained_checkpoints: int = 1, **options: Any) -> SnapshotHandle:
    if options:
        raise ValueError(f"unknown snapshot option(s): {sorted(options)}")
    if (isinstance(retained_checkpoints, bool) or not isinstance(retained_checkpoints, int)
            or retained_checkpoints < 0):
        raise ValueError(
            f"retained_checkpoints must be a non-negative int, got {retained_checkpoints!r}")
    start = time.perf_counter()
    stats = SnapshotStats(checkpoint_id, "incremental", backend.kind)
    snap = prepare_snapshot_dir(target, checkpoint_id)
    shared = target.child(SHARED_DIR)
    shared.makedirs()
    _report_not_applicable(backend, stats)
    # ---- synchronous part: flush and hard-link a RocksDB checkpoint of every DB
    sync_start = time.perf_counter()
    backend.flush()
    work_root = backend.path / "checkpoints"
    work_root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"chk-{checkpoint_id}-", dir=work_root))
    try:
        dbs = {MAIN_DB: backend.db}
        native_label: dict[str, str] = {}
        for name, (db, directory) in sorted(backend.native_ttl_dirs().items()):
            native_label[name] = f"ttl-{directory.name}"
            dbs[native_label[name]] = db
        for label, db in dbs.items():
            rocksdict.Checkpoint(db).create_checkpoint(str(work / label))
        op_data = operator_states_of(backend)
        states_meta = _state_entries(backend, native_label, stats)
        stats.sync_ms = (time.perf_counter() - sync_start) * 1000.0
        # ---- asynchronous part: upload what is new, then commit
        registry = _registry(backend, target)
        dbs_meta = {label: _upload_db(work / label, label, snap, shared, registry, stats)
                    for label in dbs}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    op_meta, stats.operator_state_bytes = write_operator_states(snap, op_data)
    body = snapshot_body(backend, checkpoint_id, "incremental")
    body.update({"states": states_meta, "dbs": dbs_meta, "operator_states": op_meta})
    snap.fsync()
    shared.fsync()
    stats.metadata_bytes = commit_metadata(snap, body)
    extra = stats.operator_state_bytes + stats.metadata_bytes
    stats.total_bytes += extra
    stats.uploaded_bytes += extra
    stats.files += len(op_meta) + 1
    apply_retention(target, retained_checkpoints, registry)
    stats.total_ms = (time.perf_counter() - start) * 1000.0
    return SnapshotHandle(str(snap), checkpoint_id, "incremental", stats)


def _report_not_applicable(backend: Any, stats: SnapshotStats) -> None:
    for name in sorted(backend._raw):
        desc = backend.descriptor(name)
        if desc is None or not desc.ttl_enabled:
            continue
        if desc.ttl_config.get_cleanup_strategies().in_full_snapshot():
            stats.not_applicable[name] = NOT_APPLICABLE
            if NOT_APPLICABLE not in backend.not_applicable.get(name, []):
                backend._note_not_applicable(name, NOT_APPLICABLE)


def _state_entries(backend: Any, native_label: dict[str, str], stats: SnapshotStats
                   ) -> list[dict[str, Any]]:
    """Each state's spec, where it lives (column family or native DB) and its SST bytes."""
    out = []
    for name in sorted(backend._raw):
        raw = backend._raw[name]
        entry = spec_to_json(raw.spec)
        if name in native_label:
            entry["db"] = native_label[name]
            handle = backend.native_ttl_db(name)
        else:
            entry["db"] = MAIN_DB
            entry["column_family"] = backend.column_family_name(raw)
            handle = raw.db
        size = handle.property_int_value("rocksdb.total-sst-files-size") or 0
        entry["bytes"] = size
        stats.bytes_per_state[name] = size
        out.append(entry)
    return out


def _upload_db(folder: Path, label: str, snap: Location, shared: Location,
               registry: SharedRegistry, stats: SnapshotStats) -> dict[str, Any]:
    files = []
    for fname in sorted(os.listdir(folder)):
        local = str(folder / fname)
        if fname.endswith(".sst"):
            known = registry.uploaded.get((label, fname))
            if known is None:
                name = f"{registry.uploader}-{label}-{fname}"
                size, crc = shared.child(name).upload_from_local(local)
                known = SharedFile(name, size, crc)
                registry.uploaded[(label, fname)] = known
                stats.uploaded_bytes += size
            files.append({"name": fname, "shared": known.name, "size": known.size,
                          "crc32": known.crc32})
            stats.total_bytes += known.size
        else:
            private = f"db-{label}-{fname}"
            size, crc = snap.child(private).upload_from_local(local)
            stats.uploaded_bytes += size
            stats.total_bytes += size
            files.append({"name": fname, "private": private, "size": size, "crc32": crc})
        stats.files += 1
    return {"files": files}


# --------------------------------------------------------------------------- retention
def _complete_incremental(target: Location) -> list[tuple[int, Location, dict]]:
    return [c for c in complete_checkpoints(target) if c[2].get("mode") == "incremental"]


def _shared_names(body: dict) -> list[str]:
    return [f["shared"] for db in body.get("dbs", {}).values() for f in db["files"]
            if "shared" in f]


def shared_file_references(target: Any) -> dict[str, int]:
    """Shared file -> number of complete incremental checkpoints under `target` using it."""
    refs: Counter[str] = Counter()
    for _, _, body in _complete_incremental(Location.parse(target)):
        refs.update(_shared_names(body))
    return dict(refs)


def apply_retention(target: Location, retained: int, registry: SharedRegistry | None = None
                    ) -> list[int]:
    """Drop all but the newest `retained + 1` incremental checkpoints; delete unreferenced
    shared files. Returns the dropped checkpoint ids."""
    complete = _complete_incremental(target)
    keep = complete[-(retained + 1):]
    dropped = complete[: len(complete) - len(keep)]
    for _, loc, _ in dropped:
        loc.child(METADATA_NAME).delete_file()  # incomplete from here on, whatever happens next
        loc.delete_dir()
    refs: Counter[str] = Counter()
    for _, _, body in keep:
        refs.update(_shared_names(body))
    for info in target.child(SHARED_DIR).children():
        if refs[info.base_name] == 0:
            target.child(SHARED_DIR, info.base_name).delete_file()
    if registry is not None:
        registry.uploaded = {k: v for k, v in registry.uploaded.items() if refs[v.name] > 0}
    return [cid for cid, _, _ in dropped]


# --------------------------------------------------------------------------- restoring
def restore_incremental(backend: Any, snaps: list[Any], counter: ReadCounter,
                        stats: RestoreStats) -> int:
    """Restore incremental checkpoints (reader.OpenSnapshot) into `backend`; returns the keys
    copied row by row (0 when the files were adopted as they are)."""
    from backends.snapshot.reader import raw_for, wanted_key_groups

    mine = backend.key_group_range
    base = Path(backend.path) if backend.kind == "rocksdb" else None
    staged = []
    try:
        for snap in snaps:  # phase 1: download and verify everything
            folder = Path(tempfile.mkdtemp(prefix="restore-", dir=base))
            staged.append(folder)
            _download(snap, folder, counter)
        for snap in snaps:
            for entry in snap.body["states"]:
                stats.bytes_per_state[entry["name"]] = (
                    stats.bytes_per_state.get(entry["name"], 0) + int(entry.get("bytes", 0)))
        if (backend.kind == "rocksdb" and len(snaps) == 1 and not backend._raw
                and wanted_key_groups(snaps[0], mine) is None):
            families, native = _layout(snaps[0], staged[0])
            backend.adopt_checkpoint_db(staged[0] / MAIN_DB, families, native)
            return 0
        keys = 0
        for snap, folder in zip(snaps, staged):
            keys += _copy_key_groups(backend, snap, folder, wanted_key_groups(snap, mine),
                                     raw_for)
        return keys
    finally:
        for folder in staged:
            shutil.rmtree(folder, ignore_errors=True)


def _download(snap: Any, folder: Path, counter: ReadCounter) -> None:
    from backends.snapshot.reader import data_file

    target = snap.location.parent()
    try:
        dbs = snap.body["dbs"]
        for label, db in dbs.items():
            if not isinstance(label, str) or "/" in label or label.startswith("."):
                raise ValueError(f"bad db label {label!r}")
            (folder / label).mkdir()
            for f in db["files"]:
                name = f["name"]
                if not isinstance(name, str) or "/" in name or name.startswith("."):
                    raise ValueError(f"bad file name {name!r}")
                if "shared" in f:
                    shared_name = f["shared"]
                    if not isinstance(shared_name, str) or "/" in shared_name:
                        raise ValueError(f"bad shared file name {shared_name!r}")
                    source = target.child(SHARED_DIR, shared_name)
                else:
                    source = data_file(snap, f["private"])
                source.download_verified(str(folder / label / name), int(f["size"]),
                                         int(f["crc32"]), counter)
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptSnapshotError(
            f"snapshot metadata of {snap.location} lists its RocksDB files badly: {exc}"
        ) from None


def _layout(snap: Any, folder: Path) -> tuple[dict[str, Any], dict[str, tuple[Any, Path]]]:
    """Column family -> spec in the main DB, and state -> (spec, folder) of native DBs."""
    families: dict[str, Any] = {}
    native: dict[str, tuple[Any, Path]] = {}
    for entry in snap.body["states"]:
        spec = spec_from_json(entry)
        if entry["db"] == MAIN_DB:
            families[entry["column_family"]] = spec
        else:
            native[spec.name] = (spec, folder / entry["db"])
    return families, native


def _copy_key_groups(backend: Any, snap: Any, folder: Path, key_groups: Any, raw_for: Any
                     ) -> int:
    """Copy the wanted key groups of a staged checkpoint into `backend`, state by state."""
    from backends.rocksdb_backend import RocksDBKeyedStateBackend

    source = RocksDBKeyedStateBackend(
        clock=ManualClock(0), max_parallelism=backend.max_parallelism, path=folder / "open")
    try:
        families, native = _layout(snap, folder)
        source.adopt_checkpoint_db(folder / MAIN_DB, families, native)
        groups = key_groups if key_groups is not None else snap.key_group_range
        keys = 0
        for _, src in sorted(source._raw.items()):
            dst = raw_for(backend, src.spec)
            if backend.kind == "rocksdb" and dst.spec == src.spec:
                put, is_map, last = dst.db.put, src.spec.shape == "map", b""
                for kg in groups:  # same layout: copy the stored bytes as they are
                    for k, v in src.scan(key_group_prefix(kg)):
                        put(k, v)
                        if is_map:  # a map holds one RocksDB entry per map entry
                            prefix = k[:key_prefix_length(k)]
                            if prefix == last:
                                continue
                            last = prefix
                        keys += 1
            else:
                load = dst.load
                for kg, key, container in src.iter_entries(groups):
                    load(kg, key, container)
                    keys += 1
        return keys
    finally:
        source.close()
