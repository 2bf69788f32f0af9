"""The documented ranges of every numeric spec field and CLI option, with one message each.

Why a module of its own: a number means the same to the user whether it comes from a spec file
or from the command line (``events = 0`` and ``--events 0`` are the same mistake), so the spec
parser (``workloads.spec``) and the CLI (``workloads.cli``) check against the same
:class:`Limit` and print the same words. The ranges are chosen so that:

* a run ends: at most :data:`MAX_EVENTS` events, at least one event per logical second;
* logical time fits int64 milliseconds with room for ``ts + ttl`` and out-of-orderness: every
  time and duration stays within :data:`MAX_TIME_MS` (2**53 ms, ~285,000 years, also exact as a
  float64, which the sine time line computes in);
* nothing reaches a numpy overflow or divide-by-zero (Pareto shape, exponential percentile,
  key-insert rates are bounded away from the degenerate ends).
"""

from __future__ import annotations

import math
import os
import stat
from dataclasses import dataclass
from typing import Any

#: Events of one run (over all partitions): 10 billion, hours at a million events per second.
MAX_EVENTS = 10**10
#: Events per logical second: at least one (the time line works in whole ms), at most 10**9.
MIN_RATE = 1.0
MAX_RATE = 1e9
#: Every logical time, duration and TTL in ms: 2**53, so start + duration + ttl fits int64.
MAX_TIME_MS = 2**53
#: Key ids are int64; ids and counts stay below 2**62 so ``newest - draw`` cannot wrap.
MAX_KEYS = 2**62
#: Bytes of one value: 64 MiB (a larger value is a different benchmark, and one per event
#: would fill any disk).
MAX_VALUE_BYTES = 64 << 20
#: Live sessions at once: their slots are held in memory by every generator partition.
MAX_CONCURRENT_SESSIONS = 10**7
#: Generator partitions of the source stage.
MAX_SOURCE_PARTITIONS = 10_000
#: Repetitions of each scenario.
MAX_REPETITIONS = 1_000
#: Rows of one Arrow batch.
MAX_BATCH_SIZE = 1 << 24
#: The smallest non-zero sine amplitude: a smaller one changes no arrival time by a ms and, near
#: the subnormal floats (5e-324), makes the time line's wave term underflow.
MIN_SINE_AMPLITUDE = 1e-6
#: Windows one record of a sliding window belongs to (``window_ms / slide_ms``): each is a
#: state access, a state entry and a timer per record, so the work and state of a record grow
#: with it (Nexmark q5: 5; an hour sliding by a second: 3,600).
MAX_SLIDING_WINDOWS = 10_000
#: Speedup of the scaled wall clock of compaction-filter scenarios.
MIN_TIME_SPEEDUP = 1e-3
MAX_TIME_SPEEDUP = 1e6


def _show(value: float) -> str:
    """A bound as the user would type it (ints plainly, floats without noise)."""
    if isinstance(value, int):
        return str(value)
    return f"{value:g}"


@dataclass(frozen=True)
class Limit:
    """A closed (or half-open) range with a unit and the reason for it, for one quantity."""

    lo: float
    hi: float
    unit: str = ""
    why: str = ""
    integer: bool = True
    lo_open: bool = False
    hi_open: bool = False

    def describe(self) -> str:
        """``in 1..10000000000 events (so that a run ends)``: the range as documented."""
        left = "(" if self.lo_open else "["
        right = ")" if self.hi_open else "]"
        if not self.lo_open and not self.hi_open:
            text = f"in {_show(self.lo)}..{_show(self.hi)}"
        else:
            text = f"in {left}{_show(self.lo)}, {_show(self.hi)}{right}"
        if self.unit:
            text += f" {self.unit}"
        if self.why:
            text += f" ({self.why})"
        return text

    def problem(self, value: Any) -> str | None:
        """None when ``value`` is allowed, else the message (without the field name)."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            kind = "an integer" if self.integer else "a number"
            return f"expected {kind}, got {value!r}"
        if self.integer and not isinstance(value, int):
            return f"expected an integer, got {value!r}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"must be a finite number {self.describe()}, got {value}"
        too_low = value <= self.lo if self.lo_open else value < self.lo
        too_high = value >= self.hi if self.hi_open else value > self.hi
        if too_low or too_high:
            return f"must be {self.describe()}, got {_show(value)}"
        return None


EVENTS = Limit(1, MAX_EVENTS, "events", "a run must have events and must end")
RATE = Limit(MIN_RATE, MAX_RATE, "events per logical second",
             "time is in whole ms; at least one event per second", integer=False)
DURATION_MS = Limit(1, MAX_TIME_MS, "ms", "logical time must fit int64 ms")
TIME_MS = Limit(0, MAX_TIME_MS, "ms", "logical time must fit int64 ms")
POSITIVE_TIME_MS = Limit(1, MAX_TIME_MS, "ms", "logical time must fit int64 ms")
PERIOD_MS = Limit(1.0, float(MAX_TIME_MS), "ms", "logical time must fit int64 ms", integer=False)
KEY_COUNT = Limit(1, MAX_KEYS, "keys", "key ids are int64")
INSERT_RATE = Limit(0.0, MAX_RATE, "keys per logical second", integer=False, lo_open=True)
SESSION_START_RATE = Limit(0.0, MAX_RATE, "sessions per logical second", integer=False,
                           lo_open=True)
CONCURRENT_SESSIONS = Limit(1, MAX_CONCURRENT_SESSIONS, "sessions",
                            "every live session is held in memory")
VALUE_BYTES = Limit(0, MAX_VALUE_BYTES, "bytes", "64 MiB per value at most")
PARETO_SHAPE = Limit(0.1, 100.0, "", "a smaller tail index puts nearly every value at max",
                     integer=False)
PARETO_SCALE = Limit(1.0, float(MAX_VALUE_BYTES), "bytes", integer=False)
EXPONENTIAL_PERCENTILE = Limit(0.001, 99.999, "%", integer=False)
EXPONENTIAL_FRACTION = Limit(1e-6, 1e6, "", integer=False)
SEED = Limit(0, 2**63 - 1)
MAP_KEYS = Limit(1, 2**31 - 1, "map keys")
SOURCE_PARTITIONS = Limit(1, MAX_SOURCE_PARTITIONS, "partitions")
REPETITIONS = Limit(1, MAX_REPETITIONS, "repetitions")
SAMPLE_INTERVAL_MS = Limit(1, MAX_TIME_MS, "logical ms", "logical time must fit int64 ms")
BATCH_SIZE = Limit(1, MAX_BATCH_SIZE, "rows")
SINE_AMPLITUDE = Limit(MIN_SINE_AMPLITUDE, 1.0, "",
                       "or 0 for a constant rate; < 1 so the rate stays > 0", integer=False,
                       hi_open=True)
WARMUP = Limit(0.0, 1.0, "", integer=False, hi_open=True)
#: Checkpoints in flight per task (``[checkpoints] max_in_flight``): each holds a frozen view of
#: the state (heap: copy-on-write of what the task changes meanwhile) until its asynchronous
#: phase ends, so the queue is bounded.
MAX_CHECKPOINTS_IN_FLIGHT = 64
DEFAULT_CHECKPOINTS_IN_FLIGHT = 8
CHECKPOINTS_IN_FLIGHT = Limit(1, MAX_CHECKPOINTS_IN_FLIGHT, "checkpoints",
                              "each one in flight holds a frozen view of the state")
TIME_SPEEDUP = Limit(MIN_TIME_SPEEDUP, MAX_TIME_SPEEDUP, "x wall-clock", integer=False)

# The spec's [rocksdb] table: the same bounds as backends.rocksdb_options (a real buffer, small
# enough for a run that wants flushes every few hundred writes, never more than a machine holds).
_KIB, _GIB = 1 << 10, 1 << 30
ROCKSDB_BYTES = Limit(64 * _KIB, 4 * _GIB, "bytes", "64 KiB..4 GiB")
ROCKSDB_WRITE_BUFFERS = Limit(1, 64, "buffers")
ROCKSDB_L0_TRIGGER = Limit(1, 1024, "files")
ROCKSDB_CACHE_BYTES = Limit(0, 64 * _GIB, "bytes", "at most 64 GiB")
ROCKSDB_PERIOD_MS = Limit(1, 10 * 365 * 86_400_000, "ms", "at most ten years")

# Flink's reference lanes (backends "flink-heap", "flink-rocksdb") send a strategy's arguments
# to their Java worker in fixed-width fields (Java int and long), and Flink itself takes them
# as such: a larger number used to end mid-run in a struct.error. statebench's own backends
# take Python ints and are not bounded by these.
TEN_YEARS_MS = 10 * 365 * 86_400_000
FLINK_INCREMENTAL_CLEANUP_SIZE = Limit(1, 2**31 - 1, "entries",
                                       "Flink's cleanupIncrementally takes a Java int")
FLINK_QUERY_TIME_AFTER_NUM_ENTRIES = Limit(0, 2**63 - 1, "entries",
                                           "Flink's compaction filter takes a Java long")
FLINK_PERIODIC_COMPACTION_MS = Limit(0, TEN_YEARS_MS, "ms", "at most ten years")


def flink_lane_problem(lane: str, strategy: str) -> str | None:
    """None when a Flink lane can carry ``strategy``'s arguments, else one line naming the
    argument and its bound (``strategy`` is its canonical text, e.g. ``incremental(5, false)``).
    """
    from backends.strategies import COMPACTION_FILTER, INCREMENTAL, parse_strategy

    parsed = parse_strategy(strategy)
    checks: list[tuple[str, Limit, Any]] = []
    if parsed.kind is INCREMENTAL and parsed.args:
        checks.append(("cleanup_size", FLINK_INCREMENTAL_CLEANUP_SIZE, parsed.args[0]))
    elif parsed.kind is COMPACTION_FILTER and parsed.args:
        checks.append(("query_time_after_num_entries", FLINK_QUERY_TIME_AFTER_NUM_ENTRIES,
                       parsed.args[0]))
        if len(parsed.args) > 1:
            checks.append(("periodic_compaction_ms", FLINK_PERIODIC_COMPACTION_MS,
                           parsed.args[1]))
    for name, limit, value in checks:
        problem = limit.problem(value)
        if problem is not None:
            return f"strategy '{strategy}' on {lane}: {parsed.name} {name} {problem}"
    return None


# ------------------------------------------------------------------------------------------------
# Untrusted files: a spec, a trace, a run folder's JSON may be anything (any size, any type, any
# encoding). They are read through these, which never block (a FIFO, a device) and never read
# more than a bound, and say in one line what is wrong with the file.
# ------------------------------------------------------------------------------------------------

#: Bytes of a spec file (the largest shipped one is ~2 KB).
MAX_SPEC_BYTES = 1 << 20
#: Bytes of a trace file (Parquet): a recorded trace may be large, but not beyond a disk.
MAX_TRACE_BYTES = 1 << 40
#: Bytes of a trace's Parquet footer, and of one row group's decoded columns that a run reads.
MAX_TRACE_FOOTER_BYTES = 64 << 20
MAX_TRACE_ROW_GROUP_BYTES = 1 << 30
#: Bytes of a run folder's run.json and rows.parquet that ``report``/``diff`` read whole.
MAX_RUN_JSON_BYTES = 64 << 20
MAX_RUN_ROWS_BYTES = 4 << 30
#: Checkpoint barriers and state samples of one scenario: each is work and rows, and all of them
#: are planned before the run (a trace whose timestamps spanned 2**62 ms asked for billions).
MAX_CHECKPOINTS = 100_000
MAX_SAMPLES = 1_000_000
#: Wall time of one paced (ProcessingTime) scenario: it releases each record at its timestamp
#: on a clock running ``time_speedup`` times real time, so a span of years takes years.
MAX_PACED_WALL_MS = 7 * 86_400_000


class FileProblem(ValueError):
    """A file that cannot be used as what it should be; the message names the file."""


def open_regular(path: str | os.PathLike[str], what: str) -> int:
    """A read-only fd of ``path`` if it is a regular file; never blocks (a FIFO is opened
    non-blocking and refused). FileNotFoundError passes through; other problems are one
    :class:`FileProblem` naming the file."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except IsADirectoryError:
        raise FileProblem(f"{what} {path}: is a folder, not a file") from None
    except OSError as exc:
        raise FileProblem(f"{what} {path}: cannot be read ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise FileProblem(f"{what} {path}: is a folder, not a file")
        if not stat.S_ISREG(mode):
            raise FileProblem(f"{what} {path}: is not a regular file (a FIFO, socket or "
                              "device); give a file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bounded(path: str | os.PathLike[str], max_bytes: int, what: str) -> bytes:
    """The bytes of regular file ``path``, at most ``max_bytes`` (else one FileProblem)."""
    fd = open_regular(path, what)
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise FileProblem(f"{what} {path}: is {size} bytes; at most {max_bytes} are read")
        chunks, got = [], 0
        while got <= max_bytes:
            try:
                chunk = os.read(fd, min(1 << 20, max_bytes + 1 - got))
            except OSError as exc:
                raise FileProblem(f"{what} {path}: cannot be read ({exc.strerror or exc})") \
                    from None
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > max_bytes:
            raise FileProblem(f"{what} {path}: is more than {max_bytes} bytes; at most "
                              f"{max_bytes} are read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def decode_text(data: bytes, path: str | os.PathLike[str], what: str) -> str:
    """``data`` as UTF-8 text, or one FileProblem: a binary file, another encoding."""
    if b"\0" in data:
        raise FileProblem(f"{what} {path}: is a binary file (it has NUL bytes), not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem(f"{what} {path}: is not UTF-8 text (invalid byte at offset "
                          f"{exc.start}); save it as UTF-8") from None


def schedule_problem(span_ms: int, checkpoint_interval_ms: int | None,
                     sample_interval_ms: int | None) -> str | None:
    """None when a run over ``span_ms`` logical ms plans a bounded number of checkpoints and
    samples, else what it would ask for (without the subject)."""
    if checkpoint_interval_ms and span_ms > 0:
        count = (span_ms - 1) // checkpoint_interval_ms
        if count > MAX_CHECKPOINTS:
            return (f"spans {span_ms} ms, which with a checkpoint every {checkpoint_interval_ms} "
                    f"ms is {count} checkpoints; at most {MAX_CHECKPOINTS} per scenario")
    if sample_interval_ms and span_ms > 0:
        count = -(-span_ms // sample_interval_ms)
        if count > MAX_SAMPLES:
            return (f"spans {span_ms} ms, which with a sample every {sample_interval_ms} ms is "
                    f"{count} samples; at most {MAX_SAMPLES} per scenario")
    return None


def paced_problem(span_ms: int, speedup: float) -> str | None:
    """None when a paced run over ``span_ms`` logical ms at ``speedup`` ends within
    :data:`MAX_PACED_WALL_MS` of wall time, else what it would take (without the subject)."""
    wall_ms = span_ms / speedup
    if wall_ms <= MAX_PACED_WALL_MS:
        return None
    return (f"spans {span_ms} ms of processing time, which at time_speedup {speedup:g} takes "
            f"{wall_ms / 86_400_000:.3g} days of wall time per scenario; at most "
            f"{MAX_PACED_WALL_MS // 86_400_000} days (raise --time-speedup or state."
            "time_speedup, or use EventTime)")
