"""Run an operator's query as a real Flink SQL job over Nexmark events (the ``flink-sql`` lane).

Why: statebench emulates Flink's operators as state accesses on its own lanes; this runs the
query itself on Flink's engine, so the emulation can be checked against it.
``statebench.flink.sql.SqlJob`` (Java, ``sql_java/``, compiled here on first use against every
jar of the ``flink`` extra's ``pyflink/lib``: the Table API, planner and filesystem/CSV
connectors are not in flink-dist, which is all the worker is compiled against) runs, on one
local MiniCluster per call and from the Table API, each job of a request: a filesystem CSV
table over the events (this module writes ``NEXMARK_SCHEMA`` rows to a CSV file: the CSV
format and the filesystem connector are the in-jar way to read a file of our rows in SQL,
with a computed rowtime column and its watermark), the query of the kind, ``table.exec.state.ttl``,
Flink's periodic checkpoints into a real folder, on HashMapStateBackend or
EmbeddedRocksDBStateBackend.

The queries (Nexmark's, over the events' columns; ``SqlJob.query``):

* ``dedup`` (q18): ``ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY event_time DESC)``,
  ``rn = 1``: the last bid per bidder and auction (RowTimeDeduplicateFunction, a ValueState
  per key);
* ``regular_join`` (q20): bids ``JOIN`` auctions ``ON auction = id``, with ``category >= 0``
  only the auctions of that category (StreamingJoinOperator; both sides without a unique key:
  a MapState of rows with counts per join key);
* ``tumbling_window`` (q7's window): ``agg`` (max | sum | count) of the bids' price per
  ``group_by`` (auction | bidder) per tumbling window of ``window_ms`` (the window TVF's
  slicing aggregate, one phase; its state is cleaned by event-time timers at the watermark,
  not by the TTL);
* ``group_agg``: ``agg`` of the price per ``group_by`` (auction | bidder; category: the
  auctions' initial price per category) (GroupAggFunction, a ValueState of the accumulator
  row per key);
* ``sliding_window`` (q5's window): ``agg`` per ``group_by`` per ``HOP`` window of
  ``window_ms`` sliding by ``slide_ms`` (the sliced window aggregate, slices shared);
* ``session_window`` (q11): ``agg`` per ``group_by`` per ``SESSION`` of gap ``gap_ms``
  (the unsliced, merging window aggregate);
* ``interval_join``: bids joined with their auction when ``bid.ts - auction.ts`` is in
  ``lower_ms .. upper_ms`` (RowTimeIntervalJoin; ``category >= 0``: that category only);
* ``topn`` (q19): the ``top_n`` highest bids per ``group_by``, ``ROW_NUMBER() ... <= top_n``
  without the rank column (AppendOnlyTopNFunction).

Each window query's row is the emulated operator's (key, [start,] window end in epoch ms,
aggregate), the join's and Top-N's the emulation's values, each with ``out_ts`` last.

Time: every job runs on a paced clock, as statebench's ProcessingTime runs do
(``workloads.run.pacing``): a ``PACE(ts)`` function in the source's computed rowtime column
releases each record when ``start_ms + wall elapsed * speedup >= ts``. A job that cannot keep
up releases records late (``late_records``, ``schedule_lag_max_ms``, as the paced lanes
report). The keyed backends' TtlTimeProvider (a wrapping state-backend factory; the RocksDB
compaction filter reads it too) is ``ttl_clock``: ``paced``, that clock; ``event``, the
records' time the keyed operator has reached (its task's input watermark + bound + 1, with a
watermark after every record, output buffers flushed at once and the source held until the
keyed tasks took in the record before), so a TTL expires on the records' time whatever the
machine's load - the emulation's TTL clock under EventTime.

What a job reports (``run_sql_jobs``): ``records`` and ``records_per_s`` (records released over
the wall time from the first to the last release: under pacing, the schedule's rate while the
job keeps up), ``job_s``, the output changelog by kind (``outputs``: ``+I``, ``-U``, ``+U``,
``-D``; with ``collect_outputs`` also ``output_hashes``: a 64-bit FNV-1a hash of each output
row's kind and values, to compare two runs' outputs as multisets), ``latency_us`` percentiles
(per output row: how far the paced clock is past the event time the row stands for - its
bid's, or its window's end - in real microseconds, measured in the sink function; rows the
clock had not reached yet are not measured, and with none measured the object is empty), Flink's
checkpoint statistics per checkpoint (``checkpoints``: ``state_bytes`` = the checkpoint's full
size, ``checkpointed_bytes``, end-to-end, sync, async and alignment ms, at their paced-clock
time) and state samples.

**The state-size measure.** On RocksDB: Flink's native RocksDB metrics
(``state.backend.rocksdb.metrics.*``), summed over every column family (each state, timers
included) and subtask and sampled on the paced clock by a MetricReporter of ours:
``estimate-num-keys`` (RocksDB's estimate of the entries: exact after compaction, counting an
overwritten or expired entry until a compaction drops it), ``estimate-live-data-size``,
``live-sst-files-size``, ``total-sst-files-size``, ``cur-size-all-mem-tables``, and
``estimate-num-keys`` per state. On HashMap, Flink exposes no state-size metric: the measure is
each checkpoint's full size (``state_bytes``: every entry serialized with Flink's row
serializers, expired ones not yet cleaned up included).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv

from backends import tempdirs
from backends.flink.build import (
    JAVAC_TIMEOUT_S,
    MANIFEST,
    build_lock,
    cache_root,
    find_flink_jar,
    find_jdk,
    java_sources,
    sources_digest,
    write_manifest,
)
from backends.flink.errors import FlinkUnavailableError
from backends.flink.jvm_job import run_job_jvm
from backends.flink.worker import JVM_OPTIONS

MAIN = "statebench.flink.sql.SqlJob"
SOURCES = Path(__file__).resolve().parent / "sql_java"
KINDS = ("dedup", "regular_join", "tumbling_window", "sliding_window", "group_agg",
         "interval_join", "topn", "session_window")
BACKENDS = ("hashmap", "rocksdb")
TTL_CLOCKS = ("paced", "event")
#: The reporter factory Flink finds through the service loader (written into the build).
_SERVICES = {
    "org.apache.flink.metrics.reporter.MetricReporterFactory":
        "statebench.flink.sql.StateReporter$Factory",
}
#: The columns of the CSV file, in the order of SqlJob's source table.
CSV_COLUMNS = ("event_type", "ts", "person_id", "auction_id", "price", "category",
               "expires_ms", "city")
DEFAULT_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class SqlBuild:
    """The compiled job and how to start it."""

    java: str
    classpath: str


def _lib_jars() -> list[Path]:
    """Every jar of ``pyflink/lib`` (flink-dist, the Table API, planner, runtime, connectors)."""
    lib = find_flink_jar().parent
    return sorted(lib.glob("*.jar"))


def _build_key(jars: list[Path]) -> str:
    digest = sources_digest(SOURCES)
    for jar in jars:
        stat = jar.stat()
        digest.update(f"{jar.name}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    digest.update(json.dumps(_SERVICES, sort_keys=True).encode())
    return digest.hexdigest()[:20]


def _complete(classes: Path) -> bool:
    """A finished build: its manifest lists the main class, and every listed file is there
    with its size (the manifest is written last)."""
    try:
        listed = json.loads((classes / MANIFEST).read_text(encoding="utf-8"))["files"]
        if MAIN.replace(".", "/") + ".class" not in listed:
            return False
        return all((classes / name).stat().st_size == entry[0] for name, entry in listed.items())
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return False


def ensure_sql_job_built() -> SqlBuild:
    """Compile ``sql_java/`` against the extra's jars into the cache unless built already."""
    jars = _lib_jars()
    javac, java = find_jdk()
    target = cache_root() / "flink-sql-job" / _build_key(jars)
    classes = target / "classes"
    classpath = os.pathsep.join([str(classes), *map(str, jars)])
    if _complete(classes):
        return SqlBuild(java=java, classpath=classpath)
    with build_lock(target, "the Flink SQL job"):
        if not _complete(classes):
            tempdirs.sweep([target])
            tmp = Path(tempdirs.make(".statebench-build-", dir=target))
            try:
                proc = subprocess.run(
                    [javac, "-nowarn", "-Xlint:-options", "-encoding", "UTF-8", "-d", str(tmp),
                     "-cp", os.pathsep.join(map(str, jars)),
                     *map(str, java_sources(SOURCES))],
                    capture_output=True, text=True, timeout=JAVAC_TIMEOUT_S)
                if proc.returncode != 0:
                    raise FlinkUnavailableError(
                        "compiling the Flink SQL job failed:\n"
                        + (proc.stderr or proc.stdout)[-4000:])
                services = tmp / "META-INF" / "services"
                services.mkdir(parents=True)
                for name, impl in _SERVICES.items():
                    (services / name).write_text(impl + "\n", encoding="utf-8")
                write_manifest(tmp)
                if classes.exists():
                    tempdirs.remove(classes)
                os.replace(tmp, classes)
                tempdirs.forget(tmp)
            except subprocess.TimeoutExpired:
                raise FlinkUnavailableError(
                    f"compiling the Flink SQL job did not finish within {JAVAC_TIMEOUT_S:.0f} s"
                ) from None
            finally:
                if tmp.exists():
                    tempdirs.remove(tmp)
    return SqlBuild(java=java, classpath=classpath)


def write_events_csv(batches: Iterable[pa.RecordBatch] | pa.Table, path: Path) -> int:
    """Write Nexmark events (``NEXMARK_SCHEMA`` columns) as the job's CSV file (no header, in
    the given order: the file's order is the order the source reads); the row count."""
    if isinstance(batches, pa.Table):
        batches = batches.to_batches()
    count = 0
    options = pacsv.WriteOptions(include_header=False)
    with pacsv.CSVWriter(str(path), pa.schema([(c, pa.int64()) for c in CSV_COLUMNS]),
                         write_options=options) as out:
        for batch in batches:
            missing = [c for c in CSV_COLUMNS if c not in batch.schema.names]
            if missing:
                raise ValueError(f"events lack the column(s) {', '.join(missing)}")
            out.write_batch(pa.RecordBatch.from_arrays(
                [batch.column(c).cast(pa.int64()) for c in CSV_COLUMNS],
                names=list(CSV_COLUMNS)))
            count += batch.num_rows
    if count == 0:
        raise ValueError("no events to write: a SQL job needs at least one")
    return count


@dataclass(frozen=True)
class SqlJobConfig:
    """One job: the events file, the query kind, TTL, checkpoints, backend and clock.

    ``ttl_ms`` 0 is no TTL. ``speedup``: paced-clock ms per real ms. ``conf``: more Flink
    configuration (e.g. RocksDB options), set last."""

    events: Path
    count: int
    kind: str
    backend: str
    checkpoint_dir: Path
    checkpoint_interval_ms: int = 1000
    incremental: bool = False
    ttl_ms: int = 0
    parallelism: int = 1
    speedup: float = 1.0
    start_ms: int = 0
    out_of_orderness_ms: int = 0
    window_ms: int = 10_000
    slide_ms: int = 2_000
    gap_ms: int = 1_000
    lower_ms: int = 0
    upper_ms: int = 10_000
    top_n: int = 3
    category: int = -1
    group_by: str = "auction"
    agg: str = "max"
    sample_interval_ms: int = 1000
    query_time_after_num_entries: int = 1000
    #: report a 64-bit hash of every output row (kind and values): ``output_hashes``
    collect_outputs: bool = False
    #: the keyed backends' TTL clock: ``paced`` (the paced wall clock) or ``event`` (the
    #: records' time the keyed operator has reached: its input watermark + bound + 1)
    ttl_clock: str = "paced"
    #: with the ``event`` clock: the records' times to checkpoint before (the emulation's
    #: barriers), instead of every ``checkpoint_interval_ms`` of wall time; empty: periodic
    checkpoint_times_ms: tuple[int, ...] = ()
    #: with the ``event`` clock: the records' times to sample RocksDB's state measures before
    #: (the emulation's sample barriers), instead of every ``sample_interval_ms`` of the paced
    #: clock; empty: on the paced clock
    sample_times_ms: tuple[int, ...] = ()
    conf: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"query kind {self.kind!r}: the SQL job runs {', '.join(KINDS)}")
        if self.ttl_clock not in TTL_CLOCKS:
            raise ValueError(f"ttl_clock {self.ttl_clock!r}: expected {' or '.join(TTL_CLOCKS)}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend {self.backend!r}: expected {' or '.join(BACKENDS)}")
        for name in ("count", "parallelism", "window_ms", "slide_ms", "gap_ms", "top_n",
                     "sample_interval_ms"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.checkpoint_interval_ms < 10:
            raise ValueError("checkpoint_interval_ms must be >= 10 (Flink's minimum)")
        if self.ttl_ms < 0 or self.out_of_orderness_ms < 0 or self.start_ms < 0:
            raise ValueError("ttl_ms, out_of_orderness_ms and start_ms must be >= 0")
        if self.kind == "sliding_window" and self.window_ms % self.slide_ms:
            raise ValueError(f"slide_ms {self.slide_ms} must divide window_ms {self.window_ms} "
                             "(Flink's sliced HOP window)")
        if self.lower_ms > self.upper_ms:
            raise ValueError(f"lower_ms {self.lower_ms} must be <= upper_ms {self.upper_ms}")
        if not self.speedup > 0:
            raise ValueError(f"speedup must be > 0, got {self.speedup}")
        for name in ("checkpoint_times_ms", "sample_times_ms"):
            times = list(getattr(self, name))
            if times != sorted(times):
                raise ValueError(f"{name} must be ascending, got {times[:5]}...")

    def as_request(self) -> dict[str, Any]:
        out = asdict(self)
        out["events"] = str(self.events)
        out["checkpoint_dir"] = str(self.checkpoint_dir)
        out["conf"] = {str(k): str(v) for k, v in self.conf.items()}
        return out


def run_sql_jobs(jobs: list[SqlJobConfig], heap_mb: int = 1024,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> list[dict[str, Any]]:
    """Run ``jobs`` one after the other on one MiniCluster in a fresh JVM; their reports (see
    the module docstring), in order."""
    if not jobs:
        raise ValueError("no SQL job given")
    build = ensure_sql_job_built()
    for job in jobs:
        job.checkpoint_dir.mkdir(parents=True, exist_ok=True)
    # the MiniCluster's temporary files (RocksDB's folders, the planner's jar, blobs) in an
    # owner-tagged folder removed after the call, not left in /tmp
    local = Path(tempdirs.make("statebench-sql-job-", dir=jobs[0].checkpoint_dir.parent))
    request = local / "request.json"
    request.write_text(json.dumps({"jobs": [j.as_request() for j in jobs]}), encoding="utf-8")
    cmd = [build.java, f"-Xmx{heap_mb}m", f"-Djava.io.tmpdir={local}", *JVM_OPTIONS,
           "-cp", build.classpath, MAIN, str(request)]
    report = run_job_jvm(
        cmd, local, timeout_s,
        timed_out=f"the Flink SQL job(s) did not finish within {timeout_s:.0f} s and were stopped",
        failed="the Flink SQL job", tag="statebench sql job")
    return list(report["jobs"])
