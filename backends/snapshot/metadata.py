"""The snapshot metadata file `_metadata`: what a snapshot holds, and the mark that it is complete.

It is JSON (never pickle): `{"format": ..., "crc32": c, "body": {...}}` where `c` is the crc32
(8 hex digits, so equal bodies give equal sizes) of the body's canonical JSON (sorted keys, no
spaces). The body lists every state with its kind,
layout, serializer snapshots (versioned, for schema evolution), column encodings and data file
layout (sizes, per-segment offsets and crc32s), the snapshot's key-group range and max
parallelism, its operator states and, for an incremental checkpoint, its RocksDB files.

A snapshot is complete exactly when `_metadata` exists: it is written last, to a temporary name,
fsynced, then renamed into place (`Location.commit_bytes`). Readers ignore folders without it.
"""

from __future__ import annotations

import json
import zlib

from backends.errors import CorruptSnapshotError, SnapshotNotFoundError
from backends.snapshot.fsio import Location, ReadCounter

METADATA_NAME = "_metadata"
FORMAT = "statebench-snapshot"
FORMAT_VERSION = 1
#: Largest `_metadata` read (it is read whole): far above any real snapshot's listing.
MAX_METADATA_BYTES = 256 << 20


def _canonical(body: dict) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def encode_metadata(body: dict) -> bytes:
    """The bytes of a `_metadata` file for `body` (deterministic: same body, same bytes)."""
    canonical = _canonical(body)
    envelope = {"format": FORMAT, "format_version": FORMAT_VERSION,
                "crc32": f"{zlib.crc32(canonical):08x}", "body": body}
    # No trailing newline: cutting any byte off leaves JSON that does not parse.
    return json.dumps(envelope, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def commit_metadata(snapshot_dir: Location, body: dict) -> int:
    """Write `_metadata` atomically (the commit point); returns its size in bytes."""
    data = encode_metadata(body)
    snapshot_dir.child(METADATA_NAME).commit_bytes(data)
    return len(data)


def decode_metadata(where: str, data: bytes) -> dict:
    """The body of a `_metadata` file, or CorruptSnapshotError naming the file."""
    try:
        envelope = json.loads(data)
        body = envelope["body"]
        stored_crc = envelope["crc32"]
        fmt, version = envelope["format"], envelope["format_version"]
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptSnapshotError(f"snapshot metadata {where} does not parse: {exc}") from None
    if not isinstance(body, dict) or f"{zlib.crc32(_canonical(body)):08x}" != stored_crc:
        raise CorruptSnapshotError(f"snapshot metadata {where} fails its crc32 checksum")
    if fmt != FORMAT:
        raise CorruptSnapshotError(f"{where} is not a statebench snapshot (format {fmt!r})")
    if version != FORMAT_VERSION:
        raise CorruptSnapshotError(
            f"snapshot metadata {where} has format version {version}; this statebench reads "
            f"version {FORMAT_VERSION}")
    return body


def read_metadata(snapshot_dir: Location, counter: ReadCounter | None = None) -> dict:
    """The verified metadata of a complete snapshot folder."""
    meta = snapshot_dir.child(METADATA_NAME)
    if not snapshot_dir.exists():
        raise SnapshotNotFoundError(
            f"no snapshot at {snapshot_dir}: the folder does not exist (an older checkpoint "
            "deleted by checkpoint retention, or a wrong path)")
    if not meta.exists():
        raise CorruptSnapshotError(
            f"{snapshot_dir} has no {METADATA_NAME}: not a complete snapshot (an interrupted "
            "checkpoint, or the wrong folder)")
    return decode_metadata(str(meta), meta.read_all(counter, MAX_METADATA_BYTES))


def is_complete(snapshot_dir: Location) -> bool:
    return snapshot_dir.child(METADATA_NAME).exists()
