"""Where snapshots live: a folder on any `pyarrow.fs` filesystem, plus the durability steps.

Every byte of a snapshot goes through `pyarrow.fs`, so a target may be a local path or a URI
(`file://`, and `s3://`, `hdfs://` where the installed pyarrow supports them). pyarrow's output
streams cannot fsync, so on the local filesystem a closed file (and, after a rename, its folder)
is fsynced through `os`; object stores make an object durable and visible when its upload
completes, which is what the commit protocol (metadata written last) needs there.

Reads are counted (`ReadCounter`) so a restore can report exactly how many bytes it read.
"""

from __future__ import annotations

import contextlib
import os
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from backends.errors import CorruptSnapshotError

COPY_CHUNK = 4 << 20
_GONE = " (deleted, e.g. by checkpoint retention, or never copied)"
WRITE_BUFFER = 1 << 20


@dataclass
class ReadCounter:
    """Bytes and files a restore read, summed over everything it opened."""

    bytes: int = 0
    files: int = 0


@dataclass(frozen=True)
class Location:
    """A file or folder on a pyarrow filesystem, printable as the path or URI the user gave."""

    fs: pafs.FileSystem
    path: str
    scheme: str = ""  # "" for a plain local path, else e.g. "file://" or "s3://"
    query: str = ""  # a URI's "?..." options, kept for printing child URIs
    local: bool = field(default=True)

    @classmethod
    def parse(cls, target: Any) -> Location:
        text = os.fspath(target) if hasattr(target, "__fspath__") else str(target)
        if "://" not in text:
            return cls(pafs.LocalFileSystem(), os.path.abspath(text))
        fs, path = pafs.FileSystem.from_uri(text)
        base, _, query = text.partition("?")
        scheme = base[: base.index("://") + 3]
        local = isinstance(fs, pafs.LocalFileSystem)
        return cls(fs, path.rstrip("/") or "/", scheme, query, local)

    def child(self, *names: str) -> Location:
        path = "/".join([self.path.rstrip("/"), *names])
        return Location(self.fs, path, self.scheme, self.query, self.local)

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    def __str__(self) -> str:
        if not self.scheme:
            return self.path
        text = self.scheme + self.path.lstrip("/") if self.scheme != "file://" else (
            self.scheme + self.path)
        return f"{text}?{self.query}" if self.query else text

    # ------------------------------------------------------------------ inspection
    def info(self) -> pafs.FileInfo:
        return self.fs.get_file_info(self.path)

    def exists(self) -> bool:
        return self.info().type != pafs.FileType.NotFound

    def is_dir(self) -> bool:
        return self.info().type == pafs.FileType.Directory

    def size(self) -> int | None:
        info = self.info()
        return info.size if info.type == pafs.FileType.File else None

    def children(self) -> list[pafs.FileInfo]:
        """Direct children (files and folders); empty when the folder does not exist."""
        if not self.is_dir():
            return []
        return self.fs.get_file_info(pafs.FileSelector(self.path, recursive=False))

    # ------------------------------------------------------------------ writing
    def makedirs(self) -> None:
        self.fs.create_dir(self.path, recursive=True)

    @contextlib.contextmanager
    def open_write(self) -> Iterator[Any]:
        """A buffered output stream; the file is fsynced (local) once it is closed."""
        stream = self.fs.open_output_stream(self.path, compression=None, buffer_size=WRITE_BUFFER)
        try:
            yield stream
        finally:
            stream.close()
        self.fsync()

    def write_bytes(self, data: bytes) -> None:
        with self.open_write() as out:
            out.write(data)

    def commit_bytes(self, data: bytes) -> None:
        """Write `data` under this name atomically: a temporary sibling, fsync, rename last."""
        tmp = Location(self.fs, f"{self.path}.tmp-{uuid.uuid4().hex}", self.scheme, self.query,
                       self.local)
        tmp.write_bytes(data)
        self.fs.move(tmp.path, self.path)
        self.parent().fsync()

    def parent(self) -> Location:
        return Location(self.fs, self.path.rstrip("/").rsplit("/", 1)[0] or "/", self.scheme,
                        self.query, self.local)

    def fsync(self) -> None:
        """Flush a local file or folder to disk (a no-op where pyarrow owns durability)."""
        if not self.local:
            return
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def delete_file(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(self.path)

    def delete_dir(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_dir(self.path)

    # ------------------------------------------------------------------ reading
    def regular_file(self) -> pafs.FileInfo:
        """This file's info if it is a regular file, else CorruptSnapshotError: a checkpoint
        folder's files are untrusted, and opening a FIFO named ``_metadata`` blocked
        ``latest_checkpoint`` for ever (a folder, socket or device is no snapshot file
        either). Missing passes through as FileNotFoundError, for the caller's message."""
        info = self.info()
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(self.path)
        if info.type != pafs.FileType.File:
            what = "a folder" if info.type == pafs.FileType.Directory else (
                "a FIFO, socket or device")
            raise CorruptSnapshotError(f"snapshot file {self} is {what}, not a regular file")
        return info

    def read_all(self, counter: ReadCounter | None = None, max_bytes: int | None = None) -> bytes:
        """The whole file; with ``max_bytes``, CorruptSnapshotError when it is larger (a
        metadata file is read whole into memory)."""
        try:
            info = self.regular_file()
            if max_bytes is not None and info.size is not None and info.size > max_bytes:
                raise CorruptSnapshotError(
                    f"snapshot file {self} is {info.size} bytes; at most {max_bytes} are read")
            with self.fs.open_input_stream(self.path, compression=None) as f:
                data = f.read()
        except FileNotFoundError:
            raise CorruptSnapshotError(f"snapshot file {self} is missing{_GONE}") from None
        if counter is not None:
            counter.bytes += len(data)
            counter.files += 1
        return data

    def read_ranges(self, ranges: list[tuple[int, int]], counter: ReadCounter) -> list[pa.Buffer]:
        """The byte ranges (offset, length) of one file, read with one open."""
        try:
            self.regular_file()
            f = self.fs.open_input_file(self.path)
        except FileNotFoundError:
            raise CorruptSnapshotError(f"snapshot file {self} is missing{_GONE}") from None
        with f:
            out = [pa.py_buffer(f.read_at(length, offset)) for offset, length in ranges]
        counter.bytes += sum(len(b) for b in out)
        counter.files += 1
        return out

    def upload_from_local(self, local_path: str) -> tuple[int, int]:
        """Copy a local file here; returns (size, crc32) of what was copied."""
        size, crc = 0, 0
        with open(local_path, "rb") as src, self.open_write() as out:
            while chunk := src.read(COPY_CHUNK):
                out.write(chunk)
                size += len(chunk)
                crc = zlib.crc32(chunk, crc)
        return size, crc

    def download_verified(
        self, local_path: str, size: int, crc: int, counter: ReadCounter
    ) -> None:
        """Copy this file to a local path, checking its size and crc32 against the metadata."""
        got_size, got_crc = 0, 0
        try:
            self.regular_file()
            src = self.fs.open_input_stream(self.path, compression=None)
        except FileNotFoundError:
            raise CorruptSnapshotError(f"snapshot file {self} is missing{_GONE}") from None
        with src, open(local_path, "wb") as out:
            while chunk := src.read(COPY_CHUNK):
                out.write(chunk)
                got_size += len(chunk)
                got_crc = zlib.crc32(chunk, got_crc)
        counter.bytes += got_size
        counter.files += 1
        if got_size != size:
            raise CorruptSnapshotError(
                f"snapshot file {self} has {got_size} bytes, the metadata says {size} (truncated "
                "or replaced)"
            )
        if got_crc != crc:
            raise CorruptSnapshotError(f"snapshot file {self} fails its crc32 checksum")
