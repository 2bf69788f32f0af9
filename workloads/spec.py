"""Workload specs: a TOML file in, a frozen, validated :class:`WorkloadSpec` out.

A spec says *what* traffic a run replays (keys, operation mix, value sizes, event time) and *how*
the state under test is configured (TTL, cleanup strategies, checkpoints). Everything is checked
up front, strictly: an unknown field is an error (a typo such as ``thetaa`` must not silently fall
back to a default), and every error is a :class:`SpecError` whose message starts with the dotted
path of the offending field, e.g. ``keys.distribution: unknown distribution 'zipf'; ...``.

Format (all sections; defaults in brackets)::

    name = "ycsb-a"                    # required, used in result rows
    description = "..."                # [""]
    seed = 42                          # [0] root of every random stream (numpy SeedSequence)

    [keys]                             # which key each event touches
    count = 100_000                    # key ids are 0..count-1 (not allowed for "sessions")
    distribution = "zipfian"    # uniform | zipfian | latest | hotspot | exponential | sessions
    theta = 0.99                       # zipfian/latest: skew, 0 < theta < 1            [0.99]
    scrambled = false                  # zipfian: YCSB ScrambledZipfian (FNV-1a 64)      [false]
    # latest:      theta, initial_keys [count/10], insert_rate (keys/s) [reach count at the end],
    #              lifetime_ms (keys older than this are never chosen again)           [none];
    #              count may be left out when insert_rate is given (ids then grow without bound)
    # hotspot:     hot_data_fraction [0.2], hot_op_fraction [0.8]
    # exponential: percentile [95], fraction [0.8571428571]  (YCSB exponential.*)
    # sessions:    concurrent = N  or  start_rate = sessions/s  (exactly one), and
    #              length = { distribution = "exponential", mean_ms = 2000 }
    #                     | { distribution = "uniform", min_ms = 500, max_ms = 5000 }
    #                     | { distribution = "constant", ms = 2000 }

    [operations]                       # op name -> proportion; must sum to 1 (within 1e-9)
    value_get = 0.5                    # names: see workloads.ops.OP_NAMES
    value_update = 0.5

    [values]
    type = "long"                      # long | string | bytes                            [long]
    size = { distribution = "constant", bytes = 8 }  # | uniform min/max | pareto shape/scale/max
    range = [0, 1_000_000]             # payload numbers, inclusive             [0, 2**31 - 1]

    [time]                             # logical (event) time
    rate = 100_000                     # events/s over all partitions (a fraction p/q, q<=1000)
    events = 300_000                   # or duration_ms = 3000 (exactly one)
    start_ms = 0                       # [0]
    sine_amplitude = 0.0               # rate*(1 + a*sin(2*pi*t/period)), 0 or 1e-6..<1 [0]
    sine_period_ms = 60_000            # required when sine_amplitude > 0
    max_out_of_orderness_ms = 0        # each ts jittered back by up to this            [0]

    [state]
    ttl_ms = 10_000                    # absent = TTL disabled
    update_type = "OnCreateAndWrite"   # | OnReadAndWrite
    visibility = "NeverReturnExpired"  # | ReturnExpiredIfNotCleanedUp
    time_characteristic = "EventTime"  # | ProcessingTime                       [ProcessingTime]
    time_speedup = 20.0                # ProcessingTime: clock ms per real ms  [the run's, 1]
    strategies = ["none", "incremental(10, true)", "timer"]      # ["none"]
    map_keys = 10                      # user keys per map state (map_key in 0..map_keys-1);
                                       # only with a map_put/map_get/map_remove operation

    [checkpoints]
    interval_ms = 0                    # logical-time checkpoint interval, 0 = none      [0]
    mode = "full"                      # full | incremental                             [full]
    max_in_flight = 8                  # checkpoints in flight per task, 1..64             [8]
    # every lane: a barrier runs its synchronous phase at once and queues its asynchronous
    # phase behind the earlier ones on the task's one checkpoint thread; it waits only while
    # max_in_flight are in flight (1: Flink's max-concurrent-checkpoints default, a barrier
    # waits for the previous asynchronous phase; see workloads/run/checkpoints.py)

    [rocksdb]                          # optional; every RocksDB strategy alike   [RocksDB's]
    write_buffer_size = 262_144        # bytes per memtable                           [64 MiB]
    max_write_buffer_number = 2        # memtables per column family                       [2]
    target_file_size_base = 262_144    # bytes per SST file of level 1                [64 MiB]
    level0_file_num_compaction_trigger = 4  # L0 files that start a compaction             [4]
    block_cache_size = 8_388_608       # bytes, one cache per backend        [RocksDB default]
    compression = "none"               # none | snappy | lz4 | lz4hc | zstd | zlib | bz2
    periodic_compaction_ms = 2_000     # clock ms between full compactions              [none]

    [source]                           # optional
    kind = "generator"                 # | trace (then [keys], [operations], [time] must be absent)
    path = "trace.parquet"             # trace only; relative to the spec file

    [operator]                         # optional: an operator over Nexmark input;
    kind = "dedup"                     # see workloads/operators; then [keys], [operations],
    query = "q18"                      # [values] and state.map_keys are absent and [time]
                                       # drives workloads.nexmark. A kind's own fields only
                                       # (OPERATOR_FIELDS); another kind's field is an error:
    window_ms = 10_000                 # windows: size; slide_ms (sliding; window_ms / slide_ms
                                       # windows per bid, at most 10,000), gap_ms (session)
    lower_ms = 0                       # interval_join: bid.ts - auction.ts in lower..upper
    upper_ms = 10_000
    top_n = 3                          # topn: rows kept per key
    category = 10                      # joins: auction side filter (q20), -1 = none; an
                                       # auction's category is 10..10 + num_categories - 1
    agg = "max"                        # windows/group_agg: max | sum | count
    group_by = "auction"               # windows/topn: auction | bidder; group_agg also category
    [nexmark]                          # optional with [operator]: workloads.nexmark knobs
    hot_auction_ratio = 2              # and the rest of NexmarkConfig's fields (not rate/time)

Every number has a documented range (``workloads.limits``, shared with the CLI options): e.g.
``time.rate`` in 1..1e9 events per logical second, ``time.events`` in 1..1e10, every time and
duration within 2**53 ms (so ``start_ms + duration + ttl`` fits int64), ``values`` sizes up to
64 MiB, a Pareto ``shape`` in 0.1..100. Derived numbers are bounded too: a ``duration_ms`` run
makes at most 1e10 events, and ``latest`` key ids stay below 2**62.

Strategy strings are validated by ``backends.strategies.parse_strategy`` and stored in their
canonical text form (its ``label``), so results name strategies consistently.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from backends.strategies import BASELINE
from backends.types import INT64_MAX
from workloads import limits
from workloads.limits import Limit
from workloads.ops import OP_NAMES, Op

KEY_DISTRIBUTIONS = ("uniform", "zipfian", "latest", "hotspot", "exponential", "sessions")
SESSION_LENGTH_DISTRIBUTIONS = ("constant", "exponential", "uniform")
SIZE_DISTRIBUTIONS = ("constant", "uniform", "pareto")
VALUE_TYPES = ("long", "string", "bytes")
UPDATE_TYPES = ("OnCreateAndWrite", "OnReadAndWrite")
VISIBILITIES = ("NeverReturnExpired", "ReturnExpiredIfNotCleanedUp")
TIME_CHARACTERISTICS = ("ProcessingTime", "EventTime")
CHECKPOINT_MODES = ("full", "incremental")
SOURCE_KINDS = ("generator", "trace")
#: Operator kinds of an ``[operator]`` table (workloads/operators).
OPERATOR_KINDS = ("tumbling_window", "sliding_window", "session_window", "interval_join",
                  "regular_join", "group_agg", "dedup", "topn")
OPERATOR_AGGS = ("max", "sum", "count")
OPERATOR_GROUP_BY = ("auction", "bidder", "category")
#: The ``[operator]`` fields each kind reads besides ``kind`` and ``query``: another kind's
#: field is refused, as an unknown field is (a ``slide_ms`` on a tumbling window would
#: otherwise silently give a tumbling window to a user who meant a sliding one).
OPERATOR_FIELDS: dict[str, tuple[str, ...]] = {
    "tumbling_window": ("window_ms", "agg", "group_by"),
    "sliding_window": ("window_ms", "slide_ms", "agg", "group_by"),
    "session_window": ("gap_ms", "agg", "group_by"),
    "interval_join": ("lower_ms", "upper_ms", "category"),
    "regular_join": ("category",),
    "group_agg": ("agg", "group_by"),
    "dedup": (),
    "topn": ("top_n", "group_by"),
}
#: Keys of the kinds that read bids only: a bid has no category (Nexmark's category is an
#: auction's, bids carry -1), so grouping bids by it would put every bid under one key.
BID_GROUP_BY = ("auction", "bidder")
#: Nexmark's first category id (``workloads.nexmark.FIRST_CATEGORY_ID``): auctions have
#: categories ``10 .. 10 + num_categories - 1``.
NEXMARK_FIRST_CATEGORY = 10

#: Tolerance on the sum of operation proportions.
PROPORTION_TOLERANCE = 1e-9
#: YCSB's default zipfian constant.
DEFAULT_THETA = 0.99
BUILTIN_SPEC_DIR = Path(__file__).resolve().parent / "specs"


class SpecError(ValueError):
    """An invalid workload spec. ``field`` is the dotted path of the offending field."""

    def __init__(self, field: str | None, message: str, source: str | None = None) -> None:
        self.field = field
        self.message = message
        self.source = source
        text = f"{field}: {message}" if field else message
        if source:
            text += f" (in {source})"
        super().__init__(text)

    def __reduce__(self) -> tuple[type[SpecError], tuple[str | None, str, str | None]]:
        # keep the structured fields when pickled (e.g. raised inside a Spark executor)
        return (type(self), (self.field, self.message, self.source))


# ------------------------------------------------------------------------------------------------
# The spec model (frozen dataclasses; field names are the TOML names so to_dict() mirrors files)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UniformKeys:
    """Every key equally likely (YCSB UniformLongGenerator)."""


@dataclass(frozen=True)
class ZipfianKeys:
    """YCSB ZipfianGenerator: key 0 hottest; ``scrambled`` spreads the hot keys (FNV-1a 64)."""

    theta: float = DEFAULT_THETA
    scrambled: bool = False


@dataclass(frozen=True)
class LatestKeys:
    """YCSB SkewedLatest: the newest inserted key is hottest; inserts advance with time.

    ``initial_keys`` exist at the start; the insert frontier then grows at ``insert_rate`` keys
    per second of logical time (default: so that it reaches ``count`` when the run ends; with no
    ``count`` it grows without bound). With ``lifetime_ms`` a key is eligible only while younger
    than that (Nexmark's in-flight auctions).
    """

    theta: float = DEFAULT_THETA
    initial_keys: int = 1
    insert_rate: float | None = None
    lifetime_ms: int | None = None


@dataclass(frozen=True)
class HotspotKeys:
    """YCSB HotspotIntegerGenerator: ``hot_op_fraction`` of ops go to the first
    ``hot_data_fraction`` of the key space, uniformly within each part."""

    hot_data_fraction: float = 0.2
    hot_op_fraction: float = 0.8


@dataclass(frozen=True)
class ExponentialKeys:
    """YCSB ExponentialGenerator: ``percentile`` % of ops fall on the newest
    ``fraction * count`` keys (keys near count-1 hottest)."""

    percentile: float = 95.0
    fraction: float = 0.8571428571


@dataclass(frozen=True)
class SessionLength:
    """How long one session (one key's whole life) lasts, in logical ms."""

    distribution: str
    ms: int | None = None  # constant
    mean_ms: float | None = None  # exponential
    min_ms: int | None = None  # uniform
    max_ms: int | None = None  # uniform

    @property
    def mean(self) -> float:
        """Expected length in ms (used to turn a start rate into a concurrency)."""
        if self.distribution == "constant":
            return float(self.ms)  # type: ignore[arg-type]
        if self.distribution == "exponential":
            return float(self.mean_ms)  # type: ignore[arg-type]
        return (self.min_ms + self.max_ms) / 2  # type: ignore[operator]


@dataclass(frozen=True)
class SessionKeys:
    """Churn: each key lives for one session, then is never used again.

    Exactly one of ``concurrent`` (live sessions at any time) and ``start_rate`` (sessions per
    second of logical time) is set; they are related by Little's law,
    ``concurrent = start_rate * mean_length_s``.
    """

    length: SessionLength
    concurrent: int | None = None
    start_rate: float | None = None

    @property
    def concurrent_sessions(self) -> int:
        """Live sessions at any time, over all partitions."""
        if self.concurrent is not None:
            return self.concurrent
        return max(1, round(self.start_rate * self.length.mean / 1000.0))  # type: ignore[operator]


KeyParams = UniformKeys | ZipfianKeys | LatestKeys | HotspotKeys | ExponentialKeys | SessionKeys


@dataclass(frozen=True)
class KeySpec:
    """Key space and key chooser; ``count`` is None when ids grow without bound (sessions, and
    latest with an insert_rate but no count)."""

    distribution: str
    count: int | None
    params: KeyParams


@dataclass(frozen=True)
class SizeSpec:
    """Distribution of ``value_size`` (bytes a written value occupies)."""

    distribution: str
    bytes: int | None = None  # constant
    min: int | None = None  # uniform
    max: int | None = None  # uniform (inclusive), pareto cap
    shape: float | None = None  # pareto
    scale: float | None = None  # pareto (minimum size)


@dataclass(frozen=True)
class ValueSpec:
    """What written values look like."""

    type: str = "long"
    size: SizeSpec = SizeSpec("constant", bytes=8)
    range: tuple[int, int] = (0, 2**31 - 1)


@dataclass(frozen=True)
class TimeSpec:
    """Logical event time: rate, how long, and disorder. Exactly one of events/duration_ms."""

    rate: float
    events: int | None = None
    duration_ms: int | None = None
    start_ms: int = 0
    sine_amplitude: float = 0.0
    sine_period_ms: float | None = None
    max_out_of_orderness_ms: int = 0


@dataclass(frozen=True)
class StateSpec:
    """TTL configuration of the state under test and the cleanup strategies to compare."""

    ttl_ms: int | None = None
    update_type: str = "OnCreateAndWrite"
    visibility: str = "NeverReturnExpired"
    time_characteristic: str = "ProcessingTime"
    strategies: tuple[str, ...] = (BASELINE,)
    map_keys: int = 10
    time_speedup: float | None = None  # ProcessingTime's paced clock; None: the run's option


@dataclass(frozen=True)
class CheckpointSpec:
    """Checkpoint barriers in logical time (0 = no checkpoints) and how many may be in flight."""

    interval_ms: int = 0
    mode: str = "full"
    max_in_flight: int = limits.DEFAULT_CHECKPOINTS_IN_FLIGHT


ROCKSDB_COMPRESSIONS = ("none", "snappy", "lz4", "lz4hc", "zstd", "zlib", "bz2")


@dataclass(frozen=True)
class RocksDBSpec:
    """RocksDB options every RocksDB strategy of the workload runs with (None: RocksDB's
    default); see ``backends.rocksdb_options.RocksDBOptions``."""

    write_buffer_size: int | None = None
    max_write_buffer_number: int | None = None
    target_file_size_base: int | None = None
    level0_file_num_compaction_trigger: int | None = None
    block_cache_size: int | None = None
    compression: str | None = None
    periodic_compaction_ms: int | None = None

    def options(self) -> dict[str, Any]:
        """The options that are set, as ``create_backend(rocksdb_options=...)`` takes them."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) is not None}


@dataclass(frozen=True)
class SourceSpec:
    """Where events come from: the synthetic generator or a recorded Parquet trace."""

    kind: str = "generator"
    path: str | None = None


@dataclass(frozen=True)
class NexmarkSpec:
    """``[nexmark]``: the Nexmark generator's knobs besides rate and time (``[time]`` gives
    those); the fields and defaults of ``workloads.nexmark.NexmarkConfig``."""

    hot_auction_ratio: int = 2
    hot_bidder_ratio: int = 4
    hot_seller_ratio: int = 4
    auction_duration_ms: tuple[int, int] | None = None
    num_active_people: int = 1000
    in_flight_auctions: int = 100
    num_categories: int = 5


@dataclass(frozen=True)
class OperatorSpec:
    """``[operator]``: which Flink operator the run emulates over Nexmark input, and its
    parameters (``workloads.operators`` documents each kind)."""

    kind: str
    query: str = ""
    window_ms: int = 10_000
    slide_ms: int = 2_000
    gap_ms: int = 1_000
    lower_ms: int = 0
    upper_ms: int = 10_000
    top_n: int = 3
    category: int = -1
    agg: str = "max"
    group_by: str = "auction"
    nexmark: NexmarkSpec = field(default_factory=NexmarkSpec)


@dataclass(frozen=True)
class WorkloadSpec:
    """A validated workload. Build with :func:`load_spec` / :func:`parse_spec`.

    ``keys``, ``operations`` and ``time`` are None for trace sources (the trace says all that).
    ``origin`` (the file it came from) is informational and not part of equality.
    """

    name: str
    description: str
    seed: int
    keys: KeySpec | None
    operations: tuple[tuple[Op, float], ...] | None
    values: ValueSpec
    time: TimeSpec | None
    state: StateSpec
    checkpoints: CheckpointSpec
    source: SourceSpec
    origin: str | None = field(default=None, compare=False)
    rocksdb: RocksDBSpec = field(default_factory=RocksDBSpec)
    operator: OperatorSpec | None = None

    @property
    def proportions(self) -> dict[Op, float]:
        """Operation mix as a dict (empty for traces)."""
        return dict(self.operations or ())

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict in the TOML layout, defaults filled in; ``parse_spec`` accepts it."""
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "seed": self.seed,
        }
        if self.keys is not None:
            out["keys"] = _keys_to_dict(self.keys)
        if self.operations is not None:
            out["operations"] = {op.spec_name: p for op, p in self.operations}
        if self.operator is None:
            out["values"] = _plain(self.values)
        if self.time is not None:
            out["time"] = _plain(self.time)
        out["state"] = _plain(self.state)
        if _map_keys_use(self.operator is not None, self.operations) is not None:
            del out["state"]["map_keys"]  # not a field of this workload (parse_spec refuses it)
        out["checkpoints"] = _plain(self.checkpoints)
        if self.rocksdb.options():
            out["rocksdb"] = self.rocksdb.options()
        out["source"] = _plain(self.source)
        if self.operator is not None:
            op = _plain(self.operator)
            out["nexmark"] = op.pop("nexmark")
            used = OPERATOR_FIELDS[self.operator.kind]
            out["operator"] = {k: v for k, v in op.items()
                               if k not in _OPERATOR_PARAMS or k in used}
        return out

    def with_overrides(self, **overrides: Any) -> WorkloadSpec:
        """A new, re-validated spec with some fields replaced.

        Shortcuts: ``events``, ``duration_ms``, ``rate``, ``seed``, ``name``, ``key_count``,
        ``ttl_ms``, ``strategies``, ``checkpoint_interval_ms``. Any other field is addressed as
        ``section__field`` (e.g. ``keys__theta=0.8``). ``None`` removes a field (back to its
        default). Setting ``events`` drops ``duration_ms`` and vice versa, since a spec has one.
        Setting ``operator__kind`` drops the old kind's parameters the new kind does not read
        (parameters given beside it are kept, and refused if the new kind does not read them).
        """
        data = self.to_dict()
        for name, value in overrides.items():
            path = _override_path(name)
            _apply_override(data, path, value)
        op = data.get("operator")
        if "operator__kind" in overrides and isinstance(op, dict):
            keep = set(OPERATOR_FIELDS.get(op.get("kind"), ())) | {
                name.split("__", 1)[1] for name in overrides if name.startswith("operator__")}
            data["operator"] = {k: v for k, v in op.items()
                                if k not in _OPERATOR_PARAMS or k in keep}
        return parse_spec(data, source=self.origin or "<overrides>", base_dir=None)


def _override_path(name: str) -> tuple[str, ...]:
    if name in _OVERRIDE_SHORTCUTS:
        return _OVERRIDE_SHORTCUTS[name]
    parts = tuple(name.split("__"))
    if len(parts) == 2 and all(parts):
        return parts
    if len(parts) == 1 and name in _TOP_LEVEL_SCALARS:
        return parts
    raise SpecError(
        name,
        "unknown override; use one of "
        f"{', '.join(_OVERRIDE_SHORTCUTS)} or section__field (e.g. keys__theta)",
    )


def _apply_override(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    *parents, leaf = path
    target = data
    for part in parents:
        target = target.setdefault(part, {})
        if not isinstance(target, dict):
            raise SpecError(".".join(path), "cannot override inside a non-table field")
    if path[:1] == ("time",) and leaf in _EXCLUSIVE_TIME and value is not None:
        for other in _EXCLUSIVE_TIME - {leaf}:
            target.pop(other, None)
    if value is None:
        target.pop(leaf, None)
    else:
        target[leaf] = list(value) if isinstance(value, tuple) else value


_OVERRIDE_SHORTCUTS: dict[str, tuple[str, ...]] = {
    "events": ("time", "events"),
    "duration_ms": ("time", "duration_ms"),
    "rate": ("time", "rate"),
    "seed": ("seed",),
    "name": ("name",),
    "key_count": ("keys", "count"),
    "ttl_ms": ("state", "ttl_ms"),
    "strategies": ("state", "strategies"),
    "checkpoint_interval_ms": ("checkpoints", "interval_ms"),
}
_TOP_LEVEL_SCALARS = frozenset({"name", "description", "seed"})
_EXCLUSIVE_TIME = frozenset({"events", "duration_ms"})


def _plain(obj: Any) -> Any:
    """Dataclass -> dict without None fields; tuples -> lists (JSON/TOML friendly)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            f.name: _plain(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
            if getattr(obj, f.name) is not None
        }
    if isinstance(obj, tuple | list):
        return [_plain(x) for x in obj]
    return obj


def _keys_to_dict(keys: KeySpec) -> dict[str, Any]:
    out: dict[str, Any] = {"distribution": keys.distribution}
    if keys.count is not None:
        out["count"] = keys.count
    out.update(_plain(keys.params))
    return out


# ------------------------------------------------------------------------------------------------
# Loading
# ------------------------------------------------------------------------------------------------


def builtin_specs() -> dict[str, Path]:
    """Shipped specs by name (file stem), e.g. ``{"ycsb-a": Path(...)}``."""
    return {p.stem: p for p in sorted(BUILTIN_SPEC_DIR.glob("*.toml"))}


def load_spec(path: str | Path) -> WorkloadSpec:
    """Read and validate a TOML spec. A bare name such as ``"ycsb-a"`` finds a shipped spec."""
    file = Path(path)
    if not file.exists() and file.suffix == "" and str(path) in builtin_specs():
        file = builtin_specs()[str(path)]
    try:  # untrusted: any size, type and encoding (workloads.limits.read_bounded)
        raw = limits.read_bounded(file, limits.MAX_SPEC_BYTES, "spec file")
        data = tomllib.loads(limits.decode_text(raw, file, "spec file"))
    except FileNotFoundError:
        known = ", ".join(builtin_specs())
        raise SpecError(None, f"spec file not found: {path} (shipped specs: {known})") from None
    except limits.FileProblem as exc:
        raise SpecError(None, str(exc)) from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(None, f"invalid TOML: {exc}", source=str(file)) from None
    return parse_spec(data, source=str(file), base_dir=file.parent)


def parse_spec(
    data: Mapping[str, Any], source: str = "<dict>", base_dir: str | Path | None = None
) -> WorkloadSpec:
    """Validate a spec given as a dict (as ``tomllib`` returns it, or from ``to_dict()``).

    ``base_dir`` resolves a relative trace path (``load_spec`` passes the spec file's folder).
    """
    root = _Table(data, "", source)
    name = root.get_str("name")
    if not name.strip():
        raise root.error("name", "must not be empty")
    description = root.get_str("description", default="")
    seed = root.get_int("seed", default=0, limit=limits.SEED)
    source_spec = _parse_source(root.get_table("source", required=False), source, base_dir)
    is_trace = source_spec.kind == "trace"
    op_t = root.get_table("operator", required=False)
    nexmark_t = root.get_table("nexmark", required=False)
    if op_t is not None and is_trace:
        raise SpecError("operator", "not used with source.kind = 'trace' (operators read "
                        "generated Nexmark input); remove one", source)
    if nexmark_t is not None and op_t is None:
        raise SpecError("nexmark", "only used with an [operator] table; remove it", source)
    keys_t = root.get_table("keys", required=not is_trace and op_t is None)
    ops_t = root.get_table("operations", required=not is_trace and op_t is None)
    if op_t is not None:
        for section, table in (("keys", keys_t), ("operations", ops_t)):
            if table is not None:
                raise SpecError(section, "not used with an [operator] table (its Nexmark input "
                                "decides keys and state accesses); remove it", source)
    time_t = root.get_table("time", required=not is_trace)
    if is_trace:
        for section, table in (("keys", keys_t), ("operations", ops_t), ("time", time_t)):
            if table is not None:
                raise SpecError(section, "not used with source.kind = 'trace'; remove it", source)
    time_spec = _parse_time(time_t) if time_t is not None else None
    keys_spec = _parse_keys(keys_t) if keys_t is not None else None
    if keys_spec is not None and time_spec is not None:
        _check_insert_frontier(keys_spec, time_spec, source)
    operations = _parse_operations(ops_t) if ops_t is not None else None
    values_t = root.get_table("values", required=False)
    if op_t is not None and values_t is not None:
        raise SpecError("values", "not used with an [operator] table (its state holds Nexmark "
                        "rows, not generated values); remove it", source)
    spec = WorkloadSpec(
        name=name,
        description=description,
        seed=seed,
        keys=keys_spec,
        operations=operations,
        values=_parse_values(values_t),
        time=time_spec,
        state=_parse_state(root.get_table("state", required=False),
                           _map_keys_use(op_t is not None, operations)),
        checkpoints=_parse_checkpoints(root.get_table("checkpoints", required=False)),
        source=source_spec,
        origin=source,
        rocksdb=_parse_rocksdb(root.get_table("rocksdb", required=False)),
        operator=_parse_operator(op_t, nexmark_t) if op_t is not None else None,
    )
    if spec.operator is not None and time_spec is not None and time_spec.sine_amplitude:
        raise SpecError("time.sine_amplitude", "must be 0 with an [operator] table (the "
                        "Nexmark generator's rate is constant)", source)
    root.finish()
    return spec


def _check_insert_frontier(keys: KeySpec, time: TimeSpec, source: str) -> None:
    """``latest`` grows its newest key id with logical time; it must stay an int64 key id."""
    params = keys.params
    if not isinstance(params, LatestKeys) or params.insert_rate is None:
        return
    grown = params.insert_rate * (planned_duration_ms(time) + time.max_out_of_orderness_ms)
    newest = params.initial_keys + grown / 1000.0
    if newest > limits.MAX_KEYS:
        raise SpecError(
            "keys.insert_rate",
            f"{params.insert_rate:g} keys/s over the run's {planned_duration_ms(time)} ms would "
            f"insert {newest:.3g} keys; key ids must stay below {limits.MAX_KEYS}",
            source,
        )


# ------------------------------------------------------------------------------------------------
# Strict table reader: remembers which fields were asked for, so leftovers are reported as typos
# ------------------------------------------------------------------------------------------------

_REQUIRED: Any = object()


class _Table:
    """A spec table under a dotted path, with typed getters that raise :class:`SpecError`."""

    def __init__(self, data: Any, path: str, source: str) -> None:
        self.path = path
        self.source = source
        if not isinstance(data, Mapping):
            raise SpecError(path or "<root>", f"expected a table, got {_kind(data)}", source)
        self._data = data
        self._asked: list[str] = []

    def field(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def error(self, name: str, message: str) -> SpecError:
        return SpecError(self.field(name), message, self.source)

    def has(self, name: str) -> bool:
        self._mark(name)
        return name in self._data

    def keys(self) -> Iterable[str]:
        return self._data.keys()

    def raw(self, name: str, default: Any = _REQUIRED) -> Any:
        self._mark(name)
        if name in self._data:
            return self._data[name]
        if default is _REQUIRED:
            raise self.error(name, "required field is missing")
        return default

    def _mark(self, name: str) -> None:
        if name not in self._asked:
            self._asked.append(name)

    def get_int(
        self,
        name: str,
        default: Any = _REQUIRED,
        minimum: int | None = None,
        maximum: int | None = None,
        limit: Limit | None = None,
    ) -> Any:
        if not self.has(name) and default is not _REQUIRED:
            return default
        value = self.raw(name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(name, f"expected an integer, got {_kind(value)}")
        self._check_limit(name, value, limit)
        self._check_range(name, value, minimum, maximum)
        return value

    def get_float(
        self,
        name: str,
        default: Any = _REQUIRED,
        minimum: float | None = None,
        maximum: float | None = None,
        exclusive: bool = False,
        limit: Limit | None = None,
    ) -> Any:
        if not self.has(name) and default is not _REQUIRED:
            return default
        value = self.raw(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(name, f"expected a number, got {_kind(value)}")
        if not math.isfinite(value):
            raise self.error(name, f"must be finite, got {value}")
        self._check_limit(name, value, limit)
        self._check_range(name, value, minimum, maximum, exclusive)
        return float(value)

    def _check_limit(self, name: str, value: float, limit: Limit | None) -> None:
        # the documented range (workloads.limits), worded as the CLI words it
        problem = limit.problem(value) if limit is not None else None
        if problem is not None:
            raise self.error(name, problem)

    def _check_range(
        self, name: str, value: float, lo: float | None, hi: float | None, exclusive: bool = False
    ) -> None:
        if exclusive:
            if lo is not None and hi is not None and not lo < value < hi:
                raise self.error(name, f"must be strictly between {lo} and {hi}, got {value}")
            if lo is not None and value <= lo:
                raise self.error(name, f"must be > {lo}, got {value}")
            if hi is not None and value >= hi:
                raise self.error(name, f"must be < {hi}, got {value}")
            return
        if lo is not None and value < lo:
            raise self.error(name, f"must be >= {lo}, got {value}")
        if hi is not None and value > hi:
            raise self.error(name, f"must be <= {hi}, got {value}")

    def get_bool(self, name: str, default: Any = _REQUIRED) -> Any:
        if not self.has(name) and default is not _REQUIRED:
            return default
        value = self.raw(name)
        if not isinstance(value, bool):
            raise self.error(name, f"expected true or false, got {_kind(value)}")
        return value

    def get_str(
        self, name: str, default: Any = _REQUIRED, choices: tuple[str, ...] | None = None
    ) -> Any:
        if not self.has(name) and default is not _REQUIRED:
            return default
        value = self.raw(name)
        if not isinstance(value, str):
            raise self.error(name, f"expected a string, got {_kind(value)}")
        if choices is not None and value not in choices:
            what = name.replace("_", " ")
            raise self.error(
                name, f"unknown {what} {value!r}; expected one of {', '.join(choices)}"
            )
        return value

    def get_table(self, name: str, required: bool = True) -> _Table | None:
        value = self.raw(name, _REQUIRED if required else None)
        if value is None:
            return None
        return _Table(value, self.field(name), self.source)

    def finish(self) -> None:
        """Reject fields nobody asked for: they are typos or unsupported options."""
        for name in self._data:
            if name not in self._asked:
                expected = ", ".join(self._asked) or "nothing"
                raise self.error(name, f"unknown field; expected one of {expected}")


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list | tuple):
        return "an array"
    return f"{type(value).__name__} {value!r}"


# ------------------------------------------------------------------------------------------------
# Sections
# ------------------------------------------------------------------------------------------------


def _parse_source(t: _Table | None, source: str, base_dir: str | Path | None) -> SourceSpec:
    if t is None:
        return SourceSpec()
    kind = t.get_str("kind", default="generator", choices=SOURCE_KINDS)
    if kind == "generator":
        t.finish()
        return SourceSpec()
    path = t.get_str("path")
    if not path.strip():
        raise t.error("path", "must not be empty")
    resolved = Path(path)
    if base_dir is not None and not resolved.is_absolute():
        resolved = Path(base_dir) / resolved
    t.finish()
    return SourceSpec(kind="trace", path=str(resolved))


def _parse_keys(t: _Table) -> KeySpec:
    distribution = t.raw("distribution")
    if not isinstance(distribution, str) or distribution not in KEY_DISTRIBUTIONS:
        raise t.error(
            "distribution",
            f"unknown distribution {distribution!r}; expected one of "
            f"{', '.join(KEY_DISTRIBUTIONS)}",
        )
    if distribution == "latest" and not t.has("count"):
        if not t.has("insert_rate"):
            raise t.error("count", "required unless insert_rate is given (then ids grow forever)")
        count = None
    elif distribution == "sessions":
        if t.has("count"):
            raise t.error(
                "count",
                "not used by the sessions distribution (session keys are never reused, ids grow "
                "without bound); size it with concurrent or start_rate",
            )
        count = None
    else:
        count = t.get_int("count", limit=limits.KEY_COUNT)
    params = _KEY_PARSERS[distribution](t, count)
    t.finish()
    return KeySpec(distribution=distribution, count=count, params=params)


def _theta(t: _Table) -> float:
    # YCSB's formula divides by 1 - theta; theta = 1 (harmonic) is not supported there either.
    return t.get_float("theta", default=DEFAULT_THETA, minimum=0.0, maximum=1.0, exclusive=True)


def _parse_uniform(t: _Table, count: int | None) -> UniformKeys:
    return UniformKeys()


def _parse_zipfian(t: _Table, count: int | None) -> ZipfianKeys:
    return ZipfianKeys(theta=_theta(t), scrambled=t.get_bool("scrambled", default=False))


def _parse_latest(t: _Table, count: int | None) -> LatestKeys:
    theta = _theta(t)
    default_initial = max(1, count // 10) if count is not None else 1
    initial = t.get_int("initial_keys", default=default_initial, maximum=count,
                        limit=limits.KEY_COUNT)
    insert_rate = t.get_float("insert_rate", default=None, limit=limits.INSERT_RATE)
    lifetime = t.get_int("lifetime_ms", default=None, limit=limits.POSITIVE_TIME_MS)
    return LatestKeys(theta=theta, initial_keys=initial, insert_rate=insert_rate,
                      lifetime_ms=lifetime)


def _parse_hotspot(t: _Table, count: int | None) -> HotspotKeys:
    assert count is not None
    data_f = t.get_float("hot_data_fraction", default=0.2, minimum=0.0, maximum=1.0)
    op_f = t.get_float("hot_op_fraction", default=0.8, minimum=0.0, maximum=1.0)
    hot = int(count * data_f)  # YCSB: (int) (interval * hotsetFraction)
    if hot == 0 and op_f > 0:
        raise t.error("hot_data_fraction", f"hot set is empty for count = {count}")
    if hot == count and op_f < 1:
        raise t.error("hot_data_fraction", f"cold set is empty for count = {count}")
    return HotspotKeys(hot_data_fraction=data_f, hot_op_fraction=op_f)


def _parse_exponential(t: _Table, count: int | None) -> ExponentialKeys:
    percentile = t.get_float("percentile", default=95.0, limit=limits.EXPONENTIAL_PERCENTILE)
    fraction = t.get_float("fraction", default=0.8571428571, limit=limits.EXPONENTIAL_FRACTION)
    return ExponentialKeys(percentile=percentile, fraction=fraction)


def _parse_sessions(t: _Table, count: int | None) -> SessionKeys:
    has_concurrent, has_rate = t.has("concurrent"), t.has("start_rate")
    if has_concurrent == has_rate:
        raise t.error("concurrent", "give exactly one of concurrent and start_rate")
    length_t = t.get_table("length")
    assert length_t is not None
    length = _parse_session_length(length_t)
    if has_concurrent:
        return SessionKeys(length=length,
                           concurrent=t.get_int("concurrent", limit=limits.CONCURRENT_SESSIONS))
    rate = t.get_float("start_rate", limit=limits.SESSION_START_RATE)
    implied = rate * length.mean / 1000.0  # Little's law: live sessions at once
    if implied > limits.MAX_CONCURRENT_SESSIONS:
        raise t.error(
            "start_rate",
            f"{rate:g} sessions/s of {length.mean:g} ms each means {implied:.3g} live sessions; "
            f"at most {limits.MAX_CONCURRENT_SESSIONS} (every live session is held in memory)",
        )
    return SessionKeys(length=length, start_rate=rate)


def _parse_session_length(t: _Table) -> SessionLength:
    dist = t.get_str("distribution", choices=SESSION_LENGTH_DISTRIBUTIONS)
    if dist == "constant":
        length = SessionLength(dist, ms=t.get_int("ms", limit=limits.POSITIVE_TIME_MS))
    elif dist == "exponential":
        length = SessionLength(dist, mean_ms=t.get_float("mean_ms", limit=limits.PERIOD_MS))
    else:
        lo = t.get_int("min_ms", limit=limits.POSITIVE_TIME_MS)
        hi = t.get_int("max_ms", minimum=lo, limit=limits.POSITIVE_TIME_MS)
        length = SessionLength(dist, min_ms=lo, max_ms=hi)
    t.finish()
    return length


_KEY_PARSERS: dict[str, Callable[[_Table, int | None], KeyParams]] = {
    "uniform": _parse_uniform,
    "zipfian": _parse_zipfian,
    "latest": _parse_latest,
    "hotspot": _parse_hotspot,
    "exponential": _parse_exponential,
    "sessions": _parse_sessions,
}


def _parse_operations(t: _Table) -> tuple[tuple[Op, float], ...]:
    names = list(t.keys())
    if not names:
        raise SpecError(t.path, "at least one operation is needed", t.source)
    ops: list[tuple[Op, float]] = []
    for name in names:
        if name not in OP_NAMES:
            raise t.error(name, f"unknown operation; expected one of {', '.join(OP_NAMES)}")
        ops.append((Op.from_name(name), t.get_float(name, minimum=0.0, maximum=1.0)))
    total = math.fsum(p for _, p in ops)
    if abs(total - 1.0) > PROPORTION_TOLERANCE:
        raise SpecError(
            t.path,
            f"proportions sum to {total!r}, expected 1 (within {PROPORTION_TOLERANCE})",
            t.source,
        )
    t.finish()
    return tuple(ops)


def _parse_values(t: _Table | None) -> ValueSpec:
    if t is None:
        return ValueSpec()
    vtype = t.get_str("type", default="long", choices=VALUE_TYPES)
    size_t = t.get_table("size", required=False)
    if vtype == "long":
        size = SizeSpec("constant", bytes=8)
        if size_t is not None and _parse_size(size_t) != size:
            raise t.error("size", "a long value always occupies 8 bytes; remove size or use it")
    else:
        size = _parse_size(size_t) if size_t is not None else SizeSpec("constant", bytes=100)
    value_range = _parse_range(t)
    t.finish()
    return ValueSpec(type=vtype, size=size, range=value_range)


def _parse_size(t: _Table) -> SizeSpec:
    dist = t.get_str("distribution", choices=SIZE_DISTRIBUTIONS)
    if dist == "constant":
        size = SizeSpec(dist, bytes=t.get_int("bytes", limit=limits.VALUE_BYTES))
    elif dist == "uniform":
        lo = t.get_int("min", limit=limits.VALUE_BYTES)
        size = SizeSpec(dist, min=lo, max=t.get_int("max", minimum=lo, limit=limits.VALUE_BYTES))
    else:
        shape = t.get_float("shape", limit=limits.PARETO_SHAPE)
        scale = t.get_float("scale", limit=limits.PARETO_SCALE)
        cap = t.get_int("max", minimum=math.ceil(scale), limit=limits.VALUE_BYTES)
        size = SizeSpec(dist, shape=shape, scale=scale, max=cap)
    t.finish()
    return size


def _parse_range(t: _Table) -> tuple[int, int]:
    raw = t.raw("range", default=None)
    if raw is None:
        return ValueSpec().range
    ok = (
        isinstance(raw, list | tuple)
        and len(raw) == 2
        and all(isinstance(x, int) and not isinstance(x, bool) for x in raw)
    )
    if not ok:
        raise t.error("range", f"expected [min, max] integers, got {_kind(raw)}")
    lo, hi = raw
    if not (-(2**63) <= lo <= hi <= INT64_MAX):
        raise t.error("range", f"need -2**63 <= min <= max <= 2**63-1, got [{lo}, {hi}]")
    return (lo, hi)


def _parse_time(t: _Table) -> TimeSpec:
    rate = t.get_float("rate", limit=limits.RATE)
    has_events, has_duration = t.has("events"), t.has("duration_ms")
    if has_events == has_duration:
        raise t.error("events", "give exactly one of events and duration_ms")
    events = t.get_int("events", default=None, limit=limits.EVENTS)
    duration = t.get_int("duration_ms", default=None, limit=limits.DURATION_MS)
    start = t.get_int("start_ms", default=0, limit=limits.TIME_MS)
    amplitude = t.get_float("sine_amplitude", default=0.0)
    if amplitude != 0.0:  # 0, or a wave at least MIN_SINE_AMPLITUDE (no subnormal amplitude)
        t._check_limit("sine_amplitude", amplitude, limits.SINE_AMPLITUDE)
    period = t.get_float("sine_period_ms", default=None, limit=limits.PERIOD_MS)
    if amplitude > 0 and period is None:
        raise t.error("sine_period_ms", "required when sine_amplitude > 0")
    if amplitude == 0 and period is not None:
        raise t.error("sine_period_ms", "not used: the rate is constant (sine_amplitude is 0); "
                      "give sine_amplitude too, or remove it")
    ooo = t.get_int("max_out_of_orderness_ms", default=0, limit=limits.TIME_MS)
    t.finish()
    spec = TimeSpec(
        rate=rate,
        events=events,
        duration_ms=duration,
        start_ms=start,
        sine_amplitude=amplitude,
        sine_period_ms=period,
        max_out_of_orderness_ms=ooo,
    )
    _check_time_extent(t, spec)
    return spec


def planned_events(time: TimeSpec) -> int:
    """Events a ``[time]`` section makes (an upper bound for sine rates): the generator's
    ``Timeline`` count, computed here so a spec is refused before anything runs."""
    if time.events is not None:
        return time.events
    assert time.duration_ms is not None
    if time.sine_amplitude == 0:
        ratio = Fraction(time.rate).limit_denominator(1000)  # as workloads.generator.Timeline
        return math.ceil(time.duration_ms * ratio / 1000)
    wave = time.sine_amplitude * (time.sine_period_ms or 1.0) / math.pi  # max of the wave term
    return math.ceil(time.rate / 1000.0 * (time.duration_ms + wave))


def planned_duration_ms(time: TimeSpec) -> int:
    """Logical ms the events span, at most: the sine's wave term only adds events, so
    ``events`` arrive by ``events / rate`` seconds whatever the amplitude."""
    if time.duration_ms is not None:
        return time.duration_ms
    assert time.events is not None
    return math.ceil(time.events * 1000.0 / time.rate) + 1


def _check_time_extent(t: _Table, time: TimeSpec) -> None:
    """A run must end and its timestamps must fit int64 ms: bound the derived numbers too."""
    events = planned_events(time)
    if time.duration_ms is not None and events > limits.MAX_EVENTS:
        raise t.error(
            "duration_ms",
            f"{time.duration_ms} ms at {time.rate:g} events/s makes {events} events; "
            f"at most {limits.MAX_EVENTS} (a run must end)",
        )
    end = time.start_ms + planned_duration_ms(time) + time.max_out_of_orderness_ms
    if end > limits.MAX_TIME_MS:
        raise t.error(
            "start_ms",
            f"the run would reach logical time {end} ms (start_ms {time.start_ms} + its "
            f"duration + max_out_of_orderness_ms); it must stay <= {limits.MAX_TIME_MS} ms "
            "(int64 ms with room for TTLs)",
        )


def _map_keys_use(is_operator: bool, operations: tuple[tuple[Op, float], ...] | None,
                  ) -> str | None:
    """None when ``state.map_keys`` means something to the workload, else why it does not."""
    if is_operator:
        return "not used with an [operator] table (its operator decides its map keys)"
    if operations is not None and not any(op.uses_map_key and p > 0 for op, p in operations):
        names = ", ".join(op.spec_name for op in Op if op.uses_map_key)
        return f"not used: no operation of the mix picks a map key ({names})"
    return None


def _parse_state(t: _Table | None, map_keys_unused: str | None = None) -> StateSpec:
    if t is None:
        return StateSpec()
    if map_keys_unused is not None and t.has("map_keys"):
        raise t.error("map_keys", f"{map_keys_unused}; remove it")
    ttl = t.get_int("ttl_ms", default=None, limit=limits.POSITIVE_TIME_MS)
    state = StateSpec(
        ttl_ms=ttl,
        update_type=t.get_str("update_type", default="OnCreateAndWrite", choices=UPDATE_TYPES),
        visibility=t.get_str("visibility", default="NeverReturnExpired", choices=VISIBILITIES),
        time_characteristic=t.get_str(
            "time_characteristic", default="ProcessingTime", choices=TIME_CHARACTERISTICS
        ),
        strategies=_parse_strategies(t),
        map_keys=t.get_int("map_keys", default=10, limit=limits.MAP_KEYS),
        time_speedup=t.get_float("time_speedup", default=None, limit=limits.TIME_SPEEDUP),
    )
    if ttl is None and state.strategies != (BASELINE,):
        raise t.error("strategies", "cleanup strategies need state.ttl_ms (TTL is disabled)")
    t.finish()
    return state


def _parse_strategies(t: _Table) -> tuple[str, ...]:
    raw = t.raw("strategies", default=["none"])
    if not isinstance(raw, list | tuple) or not raw:
        raise t.error("strategies", f"expected a non-empty array of strings, got {_kind(raw)}")
    # Imported here: the backends package is the system under test and heavier than a spec.
    from backends.strategies import parse_strategy

    labels: list[str] = []
    for i, text in enumerate(raw):
        where = f"strategies[{i}]"
        try:
            label = parse_strategy(text).label
        except ValueError as exc:
            raise t.error(where, str(exc)) from None
        if label in labels:
            raise t.error(where, f"duplicate strategy {label!r}")
        labels.append(label)
    return tuple(labels)


def _parse_checkpoints(t: _Table | None) -> CheckpointSpec:
    if t is None:
        return CheckpointSpec()
    spec = CheckpointSpec(
        interval_ms=t.get_int("interval_ms", default=0, limit=limits.TIME_MS),
        mode=t.get_str("mode", default="full", choices=CHECKPOINT_MODES),
        max_in_flight=t.get_int("max_in_flight", default=limits.DEFAULT_CHECKPOINTS_IN_FLIGHT,
                                limit=limits.CHECKPOINTS_IN_FLIGHT),
    )
    t.finish()
    return spec


def _parse_rocksdb(t: _Table | None) -> RocksDBSpec:
    if t is None:
        return RocksDBSpec()
    spec = RocksDBSpec(
        write_buffer_size=t.get_int("write_buffer_size", default=None,
                                    limit=limits.ROCKSDB_BYTES),
        max_write_buffer_number=t.get_int("max_write_buffer_number", default=None,
                                          limit=limits.ROCKSDB_WRITE_BUFFERS),
        target_file_size_base=t.get_int("target_file_size_base", default=None,
                                        limit=limits.ROCKSDB_BYTES),
        level0_file_num_compaction_trigger=t.get_int(
            "level0_file_num_compaction_trigger", default=None, limit=limits.ROCKSDB_L0_TRIGGER),
        block_cache_size=t.get_int("block_cache_size", default=None,
                                   limit=limits.ROCKSDB_CACHE_BYTES),
        compression=t.get_str("compression", default=None, choices=ROCKSDB_COMPRESSIONS),
        periodic_compaction_ms=t.get_int("periodic_compaction_ms", default=None,
                                         limit=limits.ROCKSDB_PERIOD_MS),
    )
    t.finish()
    return spec


def _parse_operator(t: _Table, nexmark_t: _Table | None) -> OperatorSpec:
    kind = t.get_str("kind", choices=OPERATOR_KINDS)
    used = OPERATOR_FIELDS[kind]
    for name in _OPERATOR_PARAMS:
        if name not in used and t.has(name):
            reads = f"it reads {', '.join(used)}" if used else "it has no parameters"
            raise t.error(name, f"not used by kind '{kind}' ({reads}); remove it")
    ms = limits.POSITIVE_TIME_MS
    group_choices = OPERATOR_GROUP_BY if kind == "group_agg" else BID_GROUP_BY
    if kind != "group_agg" and t.has("group_by") and t.raw("group_by") == "category":
        raise t.error("group_by", f"kind '{kind}' reads bids, which carry no category (a "
                      "Nexmark category is an auction's): every bid would be one key; use "
                      "auction or bidder (group_agg groups auctions by category)")
    nexmark = _parse_nexmark(nexmark_t)
    spec = OperatorSpec(
        kind=kind,
        query=t.get_str("query", default=""),
        window_ms=t.get_int("window_ms", default=10_000, limit=ms),
        slide_ms=t.get_int("slide_ms", default=2_000, limit=ms),
        gap_ms=t.get_int("gap_ms", default=1_000, limit=ms),
        lower_ms=t.get_int("lower_ms", default=0, minimum=-limits.MAX_TIME_MS,
                           maximum=limits.MAX_TIME_MS),
        upper_ms=t.get_int("upper_ms", default=10_000, minimum=-limits.MAX_TIME_MS,
                           maximum=limits.MAX_TIME_MS),
        top_n=t.get_int("top_n", default=3, minimum=1, maximum=10_000),
        category=t.get_int("category", default=-1, minimum=-1, maximum=2**31 - 1),
        agg=t.get_str("agg", default="max", choices=OPERATOR_AGGS),
        group_by=t.get_str("group_by", default="auction", choices=group_choices),
        nexmark=nexmark,
    )
    if spec.lower_ms > spec.upper_ms:
        raise t.error("lower_ms", f"must be <= upper_ms ({spec.upper_ms}), got {spec.lower_ms}")
    if kind == "sliding_window":
        if spec.window_ms % spec.slide_ms:
            raise t.error("slide_ms", f"must divide window_ms ({spec.window_ms}), got "
                          f"{spec.slide_ms}")
        per_bid = spec.window_ms // spec.slide_ms
        if per_bid > limits.MAX_SLIDING_WINDOWS:
            raise t.error("slide_ms", f"window_ms / slide_ms = {spec.window_ms} / "
                          f"{spec.slide_ms} puts each bid in {per_bid} windows; at most "
                          f"{limits.MAX_SLIDING_WINDOWS} (every window of a bid is a state "
                          "access, an entry and a timer)")
    first, count = NEXMARK_FIRST_CATEGORY, nexmark.num_categories
    if spec.category != -1 and not first <= spec.category < first + count:
        raise t.error("category", f"no auction has category {spec.category}: Nexmark's are "
                      f"{first}..{first + count - 1} (10 + nexmark.num_categories - 1), so the "
                      "join would have no output; use one of them, or -1 for none")
    t.finish()
    return spec


#: Every ``[operator]`` parameter (OperatorSpec's fields besides kind, query and nexmark).
_OPERATOR_PARAMS = ("window_ms", "slide_ms", "gap_ms", "lower_ms", "upper_ms", "top_n",
                    "category", "agg", "group_by")


def _parse_nexmark(t: _Table | None) -> NexmarkSpec:
    if t is None:
        return NexmarkSpec()
    ratio = {"minimum": 1, "maximum": 10**9}
    duration = t.raw("auction_duration_ms", default=None)
    if duration is not None:
        if (not isinstance(duration, list | tuple) or len(duration) != 2
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in duration)
                or not 1 <= duration[0] <= duration[1] <= limits.MAX_TIME_MS):
            raise t.error("auction_duration_ms", _duration_problem(duration))
        duration = (duration[0], duration[1])
    spec = NexmarkSpec(
        hot_auction_ratio=t.get_int("hot_auction_ratio", default=2, **ratio),
        hot_bidder_ratio=t.get_int("hot_bidder_ratio", default=4, **ratio),
        hot_seller_ratio=t.get_int("hot_seller_ratio", default=4, **ratio),
        auction_duration_ms=duration,
        num_active_people=t.get_int("num_active_people", default=1000, **ratio),
        in_flight_auctions=t.get_int("in_flight_auctions", default=100, **ratio),
        num_categories=t.get_int("num_categories", default=5, **ratio),
    )
    t.finish()
    return spec


def _duration_problem(duration: Any) -> str:
    """What is wrong with an ``auction_duration_ms`` value, in words (not only its type)."""
    top = limits.MAX_TIME_MS
    if not isinstance(duration, list | tuple) or len(duration) != 2:
        return f"expected [lo, hi] (two integers), got {_kind(duration)}" + (
            f" of {len(duration)} items" if isinstance(duration, list | tuple) else "")
    lo, hi = duration
    for name, x in (("lo", lo), ("hi", hi)):
        if isinstance(x, bool) or not isinstance(x, int):
            return f"{name} must be an integer, got {_kind(x)}"
    if lo > hi:
        return f"lower bound {lo} is above upper bound {hi}; give [lo, hi] with lo <= hi"
    return f"need 1 <= lo <= hi <= {top} ms, got [{lo}, {hi}]"
