"""One snapshot data file: a standard Arrow IPC file (zstd buffers), one record batch per segment.

Any Arrow reader opens it (`pyarrow.ipc.open_file`). statebench's own reader instead jumps to the
segments it needs: while writing, the byte range and crc32 of every record batch message (a
*segment*: a run of whole key groups, or a slice of one large key group) and the rows of each key
group in it are recorded, along with the crc32 of the whole file, and go into the snapshot
metadata. A task restoring key groups R reads only the segments holding R's key groups, checks
each one's crc32 before decoding it and keeps exactly R's rows; a restore that needs the whole
file reads it in one go and checks the whole-file crc32 (so a flipped bit in the footer is caught
too). The file's size is always checked first, which catches truncation.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.ipc as ipc

from backends.errors import CorruptSnapshotError
from backends.snapshot.fsio import Location, ReadCounter

IPC_OPTIONS = ipc.IpcWriteOptions(compression="zstd")
MAX_SEGMENT_ROWS = 1 << 16
MAX_SEGMENTS = 16  # per file, unless key groups are larger than MAX_SEGMENT_ROWS
_MAGIC = b"ARROW1\x00\x00"


@dataclass
class Segment:
    """One record batch message: its bytes, checksum and (key group, rows) runs, in row order."""

    offset: int
    length: int
    crc32: int
    key_groups: list[tuple[int, int]]

    @property
    def rows(self) -> int:
        return sum(n for _, n in self.key_groups)

    def to_json(self) -> dict:
        return {"offset": self.offset, "length": self.length, "crc32": self.crc32,
                "key_groups": [list(kg) for kg in self.key_groups]}

    @classmethod
    def from_json(cls, data: dict) -> Segment:
        return cls(int(data["offset"]), int(data["length"]), int(data["crc32"]),
                   [(int(kg), int(n)) for kg, n in data["key_groups"]])


@dataclass
class FileLayout:
    """Where each segment of a data file is, with checksums (stored in the metadata)."""

    size: int = 0
    crc32: int = 0
    segments: list[Segment] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"size": self.size, "crc32": self.crc32,
                "segments": [seg.to_json() for seg in self.segments]}

    @classmethod
    def from_json(cls, data: dict) -> FileLayout:
        return cls(int(data["size"]), int(data["crc32"]),
                   [Segment.from_json(seg) for seg in data["segments"]])

    @property
    def total_rows(self) -> int:
        return sum(seg.rows for seg in self.segments)


def write_file(
    loc: Location,
    schema: pa.Schema,
    segments: Iterable[tuple[list[tuple[int, int]], pa.RecordBatch]],
) -> FileLayout:
    """Write `segments` ([(key group, rows), ...], batch) as an Arrow IPC file at `loc`.

    The file is assembled in memory (it is compressed: a state's snapshot size) and written with
    one call: faster than letting the IPC writer issue its many small writes to the file
    (docs/measurements.md, "Snapshot files"), and it gives every segment's bytes for its
    checksum for free."""
    sink = pa.BufferOutputStream()
    writer = ipc.new_file(sink, schema, options=IPC_OPTIONS)
    bounds: list[tuple[int, int, list[tuple[int, int]]]] = []
    for key_groups, batch in segments:
        start = sink.tell()
        writer.write_batch(batch)
        bounds.append((start, sink.tell(), key_groups))
    writer.close()
    data = memoryview(sink.getvalue())
    layout = FileLayout(len(data), zlib.crc32(data))
    for start, stop, key_groups in bounds:
        layout.segments.append(Segment(start, stop - start, zlib.crc32(data[start:stop]),
                                       key_groups))
    with loc.open_write() as out:
        out.write(data)
    return layout


def read_segments(
    loc: Location,
    layout: FileLayout,
    schema: pa.Schema,
    counter: ReadCounter,
    key_groups: object = None,
) -> list[pa.RecordBatch]:
    """The verified rows of the key groups in `key_groups` (all if None), as batches in file
    order; only the segments holding them are read."""
    wanted = [seg for seg in layout.segments
              if key_groups is None or any(kg in key_groups  # type: ignore[operator]
                                           for kg, _ in seg.key_groups)]
    size = loc.size()
    if size is None:
        raise CorruptSnapshotError(f"snapshot file {loc} is missing")
    if size != layout.size:
        raise CorruptSnapshotError(
            f"snapshot file {loc} has {size} bytes, the metadata says {layout.size} "
            "(truncated or replaced)")
    if not wanted:
        return []
    if len(wanted) == len(layout.segments):
        data = loc.read_all(counter)
        if len(data) != layout.size or zlib.crc32(data) != layout.crc32:
            raise CorruptSnapshotError(f"snapshot file {loc} fails its crc32 checksum")
        whole = pa.py_buffer(data)
        buffers = [whole.slice(seg.offset, seg.length) for seg in wanted]
    else:
        buffers = loc.read_ranges([(seg.offset, seg.length) for seg in wanted], counter)
        for seg, buf in zip(wanted, buffers):
            if zlib.crc32(buf) != seg.crc32:
                raise CorruptSnapshotError(
                    f"snapshot file {loc}: the segment at byte {seg.offset} (key groups "
                    f"{seg.key_groups[0][0]}..{seg.key_groups[-1][0]}) fails its crc32 checksum")
    batches = [_decode_segment(loc, buf, schema, seg.rows) for seg, buf in zip(wanted, buffers)]
    if key_groups is None:
        return batches
    return [_keep(batch, seg, key_groups) for seg, batch in zip(wanted, batches)]


def _keep(batch: pa.RecordBatch, seg: Segment, key_groups: object) -> pa.RecordBatch:
    """The rows of `batch` whose key group is wanted (one contiguous run: ranges are)."""
    start = stop = row = 0
    for kg, n in seg.key_groups:
        if kg in key_groups:  # type: ignore[operator]
            if stop == start:
                start = row
            stop = row + n
        row += n
    return batch.slice(start, stop - start)


def _decode_segment(loc: Location, buf: pa.Buffer, schema: pa.Schema, rows: int
                    ) -> pa.RecordBatch:
    """The record batch in a segment (the first segment also holds the magic and the schema)."""
    try:
        reader = pa.BufferReader(buf)
        if buf.size >= 8 and buf.slice(0, 8).to_pybytes() == _MAGIC:
            reader.seek(8)
        messages = ipc.MessageReader.open_stream(reader)
        while True:
            message = messages.read_next_message()
            if message.type == "record batch":
                batch = ipc.read_record_batch(message, schema)
                break
        batch.validate()
    except (pa.ArrowException, StopIteration, ValueError) as exc:
        raise CorruptSnapshotError(f"snapshot file {loc}: cannot decode a segment: {exc}") from exc
    if batch.num_rows != rows:
        raise CorruptSnapshotError(
            f"snapshot file {loc}: a segment has {batch.num_rows} rows, the metadata says {rows}")
    return batch
