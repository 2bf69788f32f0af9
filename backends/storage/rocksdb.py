"""The RocksDB backend's raw storage, through rocksdict in raw mode (bytes in, bytes out).

Keys are `[key group: 2 bytes big-endian][serialized key]` (+ the serialized user key for a map
entry, each map entry being its own RocksDB key, as in Flink), so one key group is one contiguous
key range and rescaling or snapshotting a key group is a prefix scan. Values are produced by the
codecs in `codecs.py` (Flink's layout). A state lives in its own column family of the backend's
main DB, or, with the compaction-filter cleanup, in the default column family of a DB of its own
opened in RocksDB's TTL mode (RocksDB applies that TTL to the default column family only).

Snapshots: `freeze()` is a full snapshot's synchronous part for one state: a RocksDB iterator
over its column family (or DB), created now. A RocksDB iterator reads the DB as of its creation
(it pins a sequence number and the memtables and SST files of that moment, through later writes,
flushes and compactions), so the asynchronous part can scan it on another thread while the task
writes on. rocksdict's own `snapshot()` does not serve: in rocksdict 0.3.29 its `get` reads the
snapshot but its `iter()`/`items()` read the live DB (checked: puts and deletes made after the
snapshot show up), and `ReadOptions` has no `set_snapshot`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from backends.errors import NoCurrentKeyError
from backends.keygroups import TAG_INT, deserialize_key, key_group_prefix, serialize_key
from backends.storage.base import ABSENT
from backends.storage.codecs import ListCodec, MapValueCodec, ValueCodec
from backends.storage.layout import RawStateSpec

_LEN_AT = 3  # a variable-length key's 4-byte length follows the 2-byte key group and 1-byte tag


class RocksDBIOError(OSError):
    """An I/O error of statebench's RocksDB (a full disk, a folder gone or read-only).

    rocksdict raises these as a plain ``Exception("IO error: ...")``, which the CLI cannot tell
    from a bug, so a full disk was a 53-line traceback here and one line on Flink's lanes. As
    an OSError (``errno`` ENOSPC for a full disk, else EIO) it is the one line every other
    disk error is, in this process and from a Spark task alike."""


def rocksdb_io_error(exc: BaseException) -> RocksDBIOError | None:
    """``exc`` as a :class:`RocksDBIOError` when it is one of rocksdict's I/O errors (a plain
    ``Exception`` whose message starts with RocksDB's ``IO error:``), else None."""
    if type(exc) is not Exception:
        return None
    message = str(exc)
    if not message.startswith("IO error:"):
        return None
    import errno

    code = errno.ENOSPC if "No space left on device" in message else errno.EIO
    return RocksDBIOError(code, f"statebench's RocksDB: {message}")


def key_prefix_length(raw_key: bytes) -> int:
    """Length of `[key group][serialized key]` at the start of a stored RocksDB key."""
    if raw_key[2] == TAG_INT:
        return 11
    return 7 + int.from_bytes(raw_key[_LEN_AT:_LEN_AT + 4], "big")


class _RocksRaw:
    """Shared plumbing: the DB handle, the current prefix, scans and bulk access."""

    def __init__(self, backend: Any, spec: RawStateSpec, db: Any) -> None:
        self._b = backend
        self.spec = spec
        self.name = spec.name
        self.db = db
        self._get, self._put, self._delete = db.get, db.put, db.delete

    def _prefix(self) -> bytes:
        prefix = self._b._cur_prefix
        if prefix is None:
            raise NoCurrentKeyError(self.name)
        return prefix

    current_ref = _prefix

    def scan(self, prefix: bytes, it: Any = None) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) of every RocksDB key starting with `prefix`, in key order (from the
        iterator `it` if given: a frozen view, else a new one)."""
        if it is None:
            it = self.db.iter()
        it.seek(prefix)
        while it.valid():
            key = it.key()
            if not key.startswith(prefix):
                break
            yield key, it.value()
            it.next()

    def scan_keys(self, prefix: bytes) -> list[bytes]:
        return [k for k, _ in self.scan(prefix)]

    def _scan_range(self, key_groups: Any, it: Any = None) -> Iterator[tuple[bytes, bytes]]:
        if key_groups is None:
            yield from self.scan(b"", it)
            return
        for kg in key_groups:
            yield from self.scan(key_group_prefix(kg), it)

    def freeze(self) -> RocksFrozen:
        """A full snapshot's synchronous part for this state (see the module docstring)."""
        return RocksFrozen(self, self.db.iter())

    def iter_entries(self, key_groups: Any = None, it: Any = None
                     ) -> Iterator[tuple[int, Any, Any]]:
        """(key group, key, container) of every key with data (in key_groups, if given; read
        through the iterator `it` if given)."""
        for key, data in self._scan_range(key_groups, it):
            user_key = deserialize_key(key, 2)[0]
            yield int.from_bytes(key[:2], "big"), user_key, self._decode_container(data)

    def count_keys(self) -> int:
        count, last = 0, None
        for key, _ in self.scan(b""):
            if self.spec.shape == "map":
                plen = key_prefix_length(key)
                if last is not None and key.startswith(last) and len(last) == plen:
                    continue
                last = key[:plen]
            count += 1
        return count

    def drop_all(self) -> None:
        self.db.delete_range(b"\x00\x00", b"\xff\xff")

    def ref_delete(self, ref: bytes) -> None:
        self._delete(ref)

    def release(self) -> None:
        """Drop this state's DB handle and bound methods (the backend is closing)."""
        self.db = self._get = self._put = self._delete = None

    def load(self, key_group: int, key: Any, container: Any) -> None:
        self.ref_put(key_group_prefix(key_group) + serialize_key(key), container)


class RocksFrozen:
    """A RocksDB state as of a snapshot's synchronous part: an iterator created then."""

    __slots__ = ("_it", "_raw")

    def __init__(self, raw: _RocksRaw, it: Any) -> None:
        self._raw, self._it = raw, it

    def iter_entries(self) -> Iterator[tuple[int, Any, Any]]:
        """(key group, key, container) of every key the state held when frozen."""
        if self._it is None:
            raise RuntimeError(f"the frozen view of state '{self._raw.name}' was released")
        return self._raw.iter_entries(None, self._it)

    def release(self) -> None:
        """Drop the iterator (RocksDB then lets go of the files and memtables it pinned)."""
        self._it = None


class RocksRawValue(_RocksRaw):
    """Current key -> one encoded stored object."""

    kind = "value"

    def __init__(self, backend: Any, spec: RawStateSpec, db: Any) -> None:
        super().__init__(backend, spec, db)
        codec = ValueCodec(spec.value_type, spec.ttl_layout)
        self.encode, self.decode = codec.encode, codec.decode

    def value(self) -> Any:
        prefix = self._b._cur_prefix
        if prefix is None:
            raise NoCurrentKeyError(self.name)
        data = self._get(prefix)
        return None if data is None else self.decode(data)

    def update(self, stored: Any) -> None:
        prefix = self._b._cur_prefix
        if prefix is None:
            raise NoCurrentKeyError(self.name)
        self._put(prefix, self.encode(stored))

    def clear(self) -> None:
        self._delete(self._prefix())

    def ref_get(self, ref: bytes) -> Any:
        data = self._get(ref)
        return None if data is None else self.decode(data)

    def ref_put(self, ref: bytes, container: Any) -> None:
        if container is None:
            self._delete(ref)
        else:
            self._put(ref, self.encode(container))

    def _decode_container(self, data: bytes) -> Any:
        return self.decode(data)


class RocksRawList(_RocksRaw):
    """Current key -> the concatenated encoded elements; add is read, append bytes, write."""

    kind = "list"

    def __init__(self, backend: Any, spec: RawStateSpec, db: Any) -> None:
        super().__init__(backend, spec, db)
        self.codec = ListCodec(spec.value_type, spec.ttl_layout)

    def get(self) -> list | None:
        data = self._get(self._prefix())
        return None if data is None else self.codec.decode_all(data)

    def add(self, element: Any) -> None:
        prefix = self._prefix()
        data = self._get(prefix)
        encoded = self.codec.encode_element(element)
        self._put(prefix, encoded if data is None else data + encoded)

    def add_all(self, elements: list) -> None:
        if not elements:
            return
        prefix = self._prefix()
        data = self._get(prefix)
        encoded = self.codec.encode_all(elements)
        self._put(prefix, encoded if data is None else data + encoded)

    def update(self, elements: list) -> None:
        prefix = self._prefix()
        if elements:
            self._put(prefix, self.codec.encode_all(elements))
        else:
            self._delete(prefix)

    def clear(self) -> None:
        self._delete(self._prefix())

    def ref_get(self, ref: bytes) -> list | None:
        data = self._get(ref)
        return None if data is None else self.codec.decode_all(data)

    def ref_put(self, ref: bytes, container: list | None) -> None:
        if container:
            self._put(ref, self.codec.encode_all(container))
        else:
            self._delete(ref)

    def _decode_container(self, data: bytes) -> list:
        return self.codec.decode_all(data)


class RocksRawMap(_RocksRaw):
    """Current key -> one RocksDB key per map entry: `[prefix][user key bytes]`."""

    kind = "map"

    def __init__(self, backend: Any, spec: RawStateSpec, db: Any) -> None:
        super().__init__(backend, spec, db)
        assert spec.key_type is not None
        self._kenc, self._kdec = spec.key_type.encode, spec.key_type.decode
        codec = MapValueCodec(spec.value_type, spec.ttl_layout)
        self._venc, self._vdec = codec.encode, codec.decode

    def get(self, user_key: Any) -> Any:
        data = self._get(self._prefix() + self._kenc(user_key))
        return ABSENT if data is None else self._vdec(data)

    def put(self, user_key: Any, stored: Any) -> None:
        self._put(self._prefix() + self._kenc(user_key), self._venc(stored))

    def put_all(self, entries: dict) -> None:
        prefix, kenc, venc, put = self._prefix(), self._kenc, self._venc, self._put
        for uk, stored in entries.items():
            put(prefix + kenc(uk), venc(stored))

    def remove(self, user_key: Any) -> None:
        self._delete(self._prefix() + self._kenc(user_key))

    def contains(self, user_key: Any) -> bool:
        return self._get(self._prefix() + self._kenc(user_key)) is not None

    def _entries(self, prefix: bytes) -> list[tuple[Any, Any]]:
        plen, kdec, vdec = len(prefix), self._kdec, self._vdec
        return [(kdec(k[plen:]), vdec(v)) for k, v in self.scan(prefix)]

    def items(self) -> list[tuple[Any, Any]]:
        return self._entries(self._prefix())

    def is_empty(self) -> bool:
        prefix = self._prefix()
        return next(iter(self.scan(prefix)), None) is None

    def clear(self) -> None:
        self.ref_delete(self._prefix())

    def ref_get(self, ref: bytes) -> dict | None:
        entries = self._entries(ref)
        return dict(entries) if entries else None

    def ref_put(self, ref: bytes, container: dict | None) -> None:
        self.ref_delete(ref)
        if container:
            kenc, venc, put = self._kenc, self._venc, self._put
            for uk, stored in container.items():
                put(ref + kenc(uk), venc(stored))

    def ref_delete(self, ref: bytes) -> None:
        delete = self._delete
        for key in self.scan_keys(ref):
            delete(key)

    def ref_get_entry(self, ref: bytes, user_key: Any) -> Any:
        data = self._get(ref + self._kenc(user_key))
        return ABSENT if data is None else self._vdec(data)

    def ref_put_entry(self, ref: bytes, user_key: Any, stored: Any) -> None:
        self._put(ref + self._kenc(user_key), self._venc(stored))

    def ref_remove_entries(self, ref: bytes, user_keys: Iterable[Any]) -> None:
        for uk in user_keys:
            self._delete(ref + self._kenc(uk))

    def iter_entries(self, key_groups: Any = None, it: Any = None
                     ) -> Iterator[tuple[int, Any, Any]]:
        """(key group, key, {user key: stored}) per key: consecutive entries grouped by prefix."""
        current, entries = None, {}
        kdec, vdec = self._kdec, self._vdec
        for key, data in self._scan_range(key_groups, it):
            plen = key_prefix_length(key)
            prefix = key[:plen]
            if prefix != current:
                if current is not None:
                    yield _split_prefix(current, entries)
                current, entries = prefix, {}
            entries[kdec(key[plen:])] = vdec(data)
        if current is not None:
            yield _split_prefix(current, entries)


def _split_prefix(prefix: bytes, entries: dict) -> tuple[int, Any, dict]:
    return int.from_bytes(prefix[:2], "big"), deserialize_key(prefix, 2)[0], entries


ROCKS_RAW_BY_SHAPE = {"value": RocksRawValue, "list": RocksRawList, "map": RocksRawMap}
