"""RocksDB incremental checkpoints: native SST files, uploaded once and shared between checkpoints.

Taking one (`mode="incremental"`, as Flink's RocksDB backend does it):
1. synchronous part, in the task's thread: create `chk-<id>/` (writer.py), flush the memtables
   and make a RocksDB `Checkpoint` of the live DB (hard links) and of every native-TTL DB, in a
   local work folder;
2. asynchronous part, on the snapshot's own thread (pending.py) while the task goes on, reading
   only the hard-linked files: SST files are immutable and keep their names for the DB's life,
   so each one is uploaded once into `<target>/shared/` (named `<uploader id>-<db>-<sst name>`) and
   later checkpoints that still contain it only reference it; the small per-checkpoint files
   (MANIFEST, CURRENT, OPTIONS, ...) are copied as private files of `chk-<id>/`; operator state
   is written in the canonical format; the metadata is committed last.
3. retention: only the newest `retained_checkpoints + 1` complete incremental checkpoints in the
   target are kept. A shared file's reference count is the number of retained checkpoints whose
   metadata lists it; dropping a checkpoint deletes its folder (metadata first), and every shared
   file that no retained checkpoint references is deleted, including ones left by an
   interrupted upload.

Several checkpoints in flight (keyed_backend.py `max_in_flight`): each synchronous part links
its own work folder and reads nothing an earlier asynchronous part writes; the asynchronous
parts run one at a time, in order, on the backend's snapshot thread, so checkpoint k+1's upload
starts only after k's upload, commit and retention ended, and finds in the shared-file registry
every SST file k uploaded (reused, not uploaded again) and none that k's retention deleted (those
it uploads again). Retention never sees a pending checkpoint as complete, and no upload runs
beside it.

Full-snapshot TTL cleanup does not apply (SST files are uploaded as they are: docs/ttl.md,
"Flink's rules", full-snapshot cleanup): a state asking for it is reported in
`stats.not_applicable` instead.

Restoring one checks every file's size and crc32 while copying it into a staging folder, then
either adopts the files as the new backend's DB (RocksDB, same key groups: Flink's fast path) or,
when rescaling or restoring into the heap backend, opens them as a temporary DB and copies the
wanted key groups over (raw bytes into RocksDB, decoded containers into the heap).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import uuid
import weakref
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backends import tempdirs
from backends.errors import CorruptSnapshotError
from backends.rocksdb_dbs import DB_LABEL, MAIN_DB, CheckpointLayout, CheckpointReader
from backends.snapshot.fsio import Location, ReadCounter
from backends.snapshot.handle import RestoreStats, SnapshotHandle, SnapshotStats
from backends.snapshot.latest import complete_checkpoints
from backends.snapshot.metadata import METADATA_NAME
from backends.snapshot.opened import (
    OpenSnapshot,
    checked_file_name,
    data_file,
    file_in,
    wanted_key_groups,
)
from backends.snapshot.parts import commit_snapshot, discard_partial, snapshot_body
from backends.snapshot.specs import spec_from_json, spec_to_json

SHARED_DIR = "shared"
_RESTORED_FAMILY = re.compile(r"~[0-9]{1,9}")  # a migrated state's family: "<name>~<generation>"
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
def incremental_sync_part(backend: Any, checkpoint_id: int, target: Location,
                          snap: Location, stats: SnapshotStats, retained_checkpoints: int = 1,
                          **options: Any) -> Callable[[Callable[[], None]], SnapshotHandle]:
    """The synchronous part (flush, then hard-link a RocksDB checkpoint of every DB into a local
    work folder); returns the asynchronous part (upload what is new, commit, apply retention,
    remove the work folder), which reads only the hard-linked files, never the live DB."""
    if options:
        raise ValueError(f"unknown snapshot option(s): {sorted(options)}")
    if (isinstance(retained_checkpoints, bool) or not isinstance(retained_checkpoints, int)
            or retained_checkpoints < 0):
        raise ValueError(
            f"retained_checkpoints must be a non-negative int, got {retained_checkpoints!r}")
    _report_not_applicable(backend, stats)
    work_root = backend.path / "checkpoints"
    work_root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"chk-{checkpoint_id}-", dir=work_root))
    try:
        local = backend.create_checkpoint(work)
        op_data = backend.operator_state_data()
        states_meta = _state_entries(local, stats)
        body = snapshot_body(backend, checkpoint_id, "incremental")
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    registry = _registry(backend, target)

    def upload(check_cancelled: Callable[[], None]) -> SnapshotHandle:
        try:
            check_cancelled()
            shared = target.child(SHARED_DIR)
            shared.makedirs()
            dbs_meta = {}
            for label in local.dbs:
                check_cancelled()
                dbs_meta[label] = _upload_db(work / label, label, snap, shared, registry, stats)
            body.update({"states": states_meta, "dbs": dbs_meta})
            commit_snapshot(snap, body, op_data, stats, check_cancelled, shared)
        except BaseException:
            discard_partial(snap)
            raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
        extra = stats.operator_state_bytes + stats.metadata_bytes
        stats.total_bytes += extra
        stats.uploaded_bytes += extra
        stats.files += len(body["operator_states"]) + 1
        apply_retention(target, retained_checkpoints, registry)
        return SnapshotHandle(str(snap), checkpoint_id, "incremental", stats)

    return upload


def _report_not_applicable(backend: Any, stats: SnapshotStats) -> None:
    for name in backend.registered_state_names():
        desc = backend.descriptor(name)
        if desc is None or not desc.ttl_enabled:
            continue
        if desc.ttl_config.get_cleanup_strategies().in_full_snapshot():
            stats.not_applicable[name] = NOT_APPLICABLE
            backend.note_not_applicable(name, NOT_APPLICABLE)


def _state_entries(local: Any, stats: SnapshotStats) -> list[dict[str, Any]]:
    """Each state's spec, where it lives (column family or native DB) and its SST bytes."""
    out = []
    for placement in local.states:
        entry = spec_to_json(placement.spec)
        entry["db"] = placement.db
        if placement.column_family is not None:
            entry["column_family"] = placement.column_family
        entry["bytes"] = placement.sst_bytes
        stats.bytes_per_state[placement.spec.name] = placement.sst_bytes
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
@dataclass(frozen=True)
class _Download:
    """One file of a checkpoint: where it is read from, where it goes, what it must be."""

    source: Location
    label: str
    name: str
    size: int
    crc32: int


def restore_incremental(backend: Any, snaps: list[OpenSnapshot], counter: ReadCounter,
                        stats: RestoreStats) -> int:
    """Restore incremental checkpoints into `backend`; returns the keys copied row by row (0
    when the files were adopted as they are). Every name in the metadata is checked before a
    file is fetched; files are staged in a folder of the backend's own (RocksDB) or a fresh
    temporary folder (heap), and nothing else is written."""
    mine = backend.key_group_range
    plans = [(_plan_downloads(snap), snap) for snap in snaps]
    layouts = [_layout(snap, {d.label for d in plan} | {MAIN_DB}) for plan, snap in plans]
    base = Path(backend.path) if backend.native_checkpoints else None
    staged: list[Path] = []
    try:
        for plan, _ in plans:  # phase 1: download and verify everything
            # owner-tagged: a heap restore stages in the temp dir, which a start-up after a
            # kill -9 sweeps of dead owners' folders only (backends.tempdirs)
            folder = Path(tempdirs.make("statebench-restore-", dir=base))
            staged.append(folder)
            _download(plan, folder, counter)
        for snap in snaps:
            for entry in snap.body["states"]:
                stats.bytes_per_state[entry["name"]] = (
                    stats.bytes_per_state.get(entry["name"], 0) + int(entry.get("bytes", 0)))
        if (backend.native_checkpoints and len(snaps) == 1
                and not backend.registered_state_names()
                and wanted_key_groups(snaps[0], mine) is None):
            backend.adopt_checkpoint(staged[0], layouts[0])
            return 0
        keys = 0
        for snap, folder, layout in zip(snaps, staged, layouts):
            groups = wanted_key_groups(snap, mine)
            if groups is None:
                groups = snap.key_group_range
            with CheckpointReader(folder, layout) as source:
                for _, raw in source.raw_states():
                    keys += backend.copy_restored(raw, groups)
        return keys
    finally:
        for folder in staged:
            tempdirs.remove(folder)


def _plan_downloads(snap: OpenSnapshot) -> list[_Download]:
    """Every RocksDB file the metadata lists, checked: labels and names are plain names,
    sources resolve inside the snapshot folder or the checkpoint dir's `shared` folder."""
    target = snap.location.parent()
    shared = target.child(SHARED_DIR)
    out: list[_Download] = []
    try:
        dbs = snap.body["dbs"]
        if not isinstance(dbs, dict) or MAIN_DB not in dbs:
            raise ValueError(f"no {MAIN_DB!r} DB")
        for label, db in dbs.items():
            if not isinstance(label, str) or not DB_LABEL.fullmatch(label):
                raise snap.corrupt(f"names a bad RocksDB DB label {label!r}")
            names: set[str] = set()
            for f in db["files"]:
                name = checked_file_name(snap, f["name"], "RocksDB file")
                if name in names:
                    raise snap.corrupt(f"lists RocksDB file {label}/{name} twice")
                names.add(name)
                if "shared" in f:
                    source = file_in(snap, shared, f["shared"], "shared file", within=target)
                else:
                    source = data_file(snap, f["private"])
                size, crc = f["size"], f["crc32"]
                if not (isinstance(size, int) and isinstance(crc, int) and size >= 0):
                    raise ValueError(f"file {name!r} has size {size!r} and crc32 {crc!r}")
                out.append(_Download(source, label, name, size, crc))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, CorruptSnapshotError):
            raise
        raise snap.corrupt(f"lists its RocksDB files badly: {exc!r}") from None
    return out


def _download(plan: list[_Download], folder: Path, counter: ReadCounter) -> None:
    """Fetch and verify the planned files into `folder/<label>/<name>`."""
    for label in sorted({d.label for d in plan}):
        (folder / label).mkdir()
    for d in plan:
        d.source.download_verified(str(folder / d.label / d.name), d.size, d.crc32, counter)


def _layout(snap: OpenSnapshot, labels: set[str]) -> CheckpointLayout:
    """Where each state lives: a column family of the main DB, or a native-TTL DB of its own
    (one of the checkpoint's DB `labels`). Checked, as the metadata is untrusted."""
    layout = CheckpointLayout()
    seen: set[str] = set()
    try:
        for entry in snap.body["states"]:
            spec = spec_from_json(entry)
            if spec.name in seen:
                raise snap.corrupt(f"lists state {spec.name!r} twice")
            seen.add(spec.name)
            db = entry["db"]
            if db == MAIN_DB:
                family = entry["column_family"]
                if not (isinstance(family, str) and family.startswith(spec.name) and (
                        family == spec.name
                        or _RESTORED_FAMILY.fullmatch(family[len(spec.name):]))):
                    raise snap.corrupt(
                        f"gives state {spec.name!r} the column family {family!r}; expected "
                        "the state's name, or its name and '~<number>'")
                layout.families[family] = spec
            elif isinstance(db, str) and db in labels and spec.native_ttl_ms is not None:
                if db in {label for _, label in layout.native.values()}:
                    raise snap.corrupt(f"places two states in native-TTL DB {db!r}")
                layout.native[spec.name] = (spec, db)
            else:
                raise snap.corrupt(
                    f"places state {spec.name!r} in DB {db!r}, which is not a native-TTL DB "
                    f"of this checkpoint (its DBs: {sorted(labels)})")
    except CorruptSnapshotError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise snap.corrupt(f"describes its states badly: {exc!r}") from None
    return layout
