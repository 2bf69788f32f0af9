"""The ``flink-sql`` lanes (``flink-sql`` on RocksDB, ``flink-sql-heap`` on HashMap): the
``[operator]``'s query as one real Flink SQL job per scenario x repetition
(``workloads.lanes.flink_sql_job``), reading its own source, so they run whole jobs.

What they run is what SQL lets a user set: the query of an operator kind the job has
(``backends.flink.sql_lanes.SQL_KINDS``), and ``table.exec.state.ttl``, which always configures
the backend's default background cleanup (the planner's state TTL config keeps it on): RocksDB's
compaction filter, the HashMap backend's incremental cleanup of 5 entries per access. Every
``[operator]`` kind has a query; the TTL's clock is the emulation's
(``workloads.lanes.flink_sql_job``).
"""

from __future__ import annotations

import pyarrow as pa

from backends.flink.sql_lanes import SQL_BACKENDS, SQL_KINDS, SQL_LANES
from backends.strategies import NONE, parse_strategy
from workloads.lanes.base import Lane, RunView, foreign_strategy_reason
from workloads.lanes.cost import JobCost, JobLoad, job_lane_cost, paced_span_s
from workloads.lanes.flink_sql_job import run_sql_scenario
from workloads.run.config import DataFacts, OperatorConfig
from workloads.spec import OperatorSpec, WorkloadSpec

#: Wall seconds of a flink-sql job beyond its paced span: a JVM, Flink's MiniCluster and the
#: planner, and the reference job's own start (docs/guide.md, "The estimate's rates").
SQL_JOB_START_S = 12.0
REFERENCE_START_S = 2.0
#: Bytes per event of the events CSV a job reads (eight integer columns as text).
CSV_BYTES_PER_EVENT = 80.0
#: Events a job's source gets through per wall second when the paced clock does not hold it
#: back (the measured job above released its events on time: a conservative floor).
SQL_RECORDS_PER_S = 20_000.0


def spec_problem(lane: str, operator_kind: str | None) -> str | None:
    """Why ``lane`` cannot run a spec with this ``[operator]`` kind (None: no operator table)
    at all, else None."""
    if operator_kind is None:
        return (f"backend '{lane}' runs an [operator] spec's query as a Flink SQL job; this spec "
                "is raw key-value traffic (no [operator] table), which has no SQL query - run "
                "it on flink-heap or flink-rocksdb")
    if operator_kind not in SQL_KINDS:
        return (f"backend '{lane}': the Flink SQL job has no query for [operator] kind "
                f"'{operator_kind}' (it runs {', '.join(SQL_KINDS)})")
    return None


#: The longest interval (window, slide, gap, join bound) the SQL job takes: its interval
#: literal (``SqlJob.interval``) is Flink's ``HOUR TO SECOND`` of the default precision, hours
#: up to 99; a longer one failed the job after the other lanes' jobs ("the SQL job takes 1 ms
#: to 99 h").
MAX_WINDOW_MS = 100 * 3_600_000 - 1
#: The last instant of Flink SQL's TIMESTAMP_LTZ (9999-12-31 23:59:59.999, epoch ms), the
#: type of the job's event time (``TO_TIMESTAMP_LTZ(PACE(ts), 3)``): a spec whose events go
#: past it (start_ms 2.6e14, year 10209) ran the job until its 15-minute timeout.
MAX_TIMESTAMP_MS = 253_402_300_799_999


def query_intervals(op: OperatorSpec) -> dict[str, int]:
    """The interval literals of ``op``'s query (``SqlJob.query``), by what they are, in ms:
    the windows' size, slide and gap, the interval join's bounds (either sign)."""
    if op.kind == "tumbling_window":
        return {"window": op.window_ms}
    if op.kind == "sliding_window":
        return {"window": op.window_ms, "slide": op.slide_ms}
    if op.kind == "session_window":
        return {"session gap": op.gap_ms}
    if op.kind == "interval_join":
        return {"join bound": max(abs(op.lower_ms), abs(op.upper_ms))}
    return {}


def range_problem(lane: str, spec: WorkloadSpec) -> str | None:
    """Why the SQL job cannot take ``spec``'s numbers (a window longer than its interval
    literal takes, event times past TIMESTAMP_LTZ), known from the spec alone; else None."""
    from workloads.generator import Timeline

    op = spec.operator
    if op is None or spec.time is None:
        return None
    intervals = query_intervals(op)
    for name, ms in intervals.items():
        if ms > MAX_WINDOW_MS:
            return (f"backend '{lane}': a {name} of {ms} ms; the Flink SQL job's {name} is an "
                    f"interval of 1 ms to 99 h (at most {MAX_WINDOW_MS} ms)")
    window = max(intervals.values(), default=0)
    timeline = Timeline(spec.time)
    top = timeline.start_ms + timeline.duration_ms + window
    if top > MAX_TIMESTAMP_MS:
        return (f"backend '{lane}': the job's event time would reach {top} ms, past Flink "
                f"SQL's TIMESTAMP_LTZ (years 0 to 9999, up to {MAX_TIMESTAMP_MS} ms): "
                f"the events' ts reach {timeline.start_ms + timeline.duration_ms} ms"
                + (f" and the window {window} ms more" if window else ""))
    return None


def sql_cleanup_reason(lane: str, strategy: str, has_ttl: bool,
                   ttl_sweep: bool = False) -> str | None:
    """None when ``strategy`` is what a SQL job on ``lane`` runs, else why it cannot.

    Without a TTL only ``none`` runs (``table.exec.state.ttl`` = 0). With one, SQL's cleanup
    is the backend's default background cleanup and nothing else: ``compaction_filter`` (any
    ``queryTimeAfterNumEntries``: it is the backend's configuration key) on RocksDB,
    ``incremental(5, false)`` (SQL's fixed default) on HashMap.

    A TTL sweep's scenario (``ttl_sweep``: ``--sweep "ttl(ms=...)"``) is the TTL itself, which
    is what a SQL user sets (``table.exec.state.ttl``): the SQL job runs it, with SQL's own
    cleanup, whatever cleanup the emulated lanes pair with it (``workloads.run.sweep``)."""
    if lane not in SQL_LANES:
        raise ValueError(f"unknown Flink SQL lane '{lane}'; expected one of {', '.join(SQL_LANES)}")
    parsed = parse_strategy(strategy)
    foreign = foreign_strategy_reason("flink-sql", parsed.name)
    if foreign is not None:
        return foreign
    if ttl_sweep and has_ttl:
        return None
    if not has_ttl:
        return None if parsed.kind is NONE else "without a TTL only 'none' runs"
    backend = SQL_BACKENDS[lane]
    cleanup = parse_strategy(backend.cleanup)
    if parsed.kind is cleanup.kind and (backend.any_arguments or parsed.label == cleanup.label):
        return None
    return (f"Flink SQL's table.exec.state.ttl always runs its backend's default background "
            f"cleanup ({backend.cleanup} on {backend.name}) and no other; '{parsed.label}' "
            "cannot be configured in SQL")


class FlinkSqlLane(Lane):
    """A real Flink SQL job per scenario x repetition, on the paced clock."""

    engine = "flink-sql"
    runs_tasks = False
    #: under EventTime the source holds each record until the keyed tasks took the one before
    #: (``SqlJob.Lockstep``): its latency then measures how far the job fell behind
    event_time_lockstep = True

    def __init__(self, name: str) -> None:
        self.name = name
        self.summary = f"the [operator]'s query as a real Flink SQL job on {SQL_LANES[name]}"
        #: what table.exec.state.ttl runs on this backend: a run naming no strategy runs it
        self.own_strategies = (SQL_BACKENDS[name].cleanup,)

    def spec_reason(self, run: RunView) -> str | None:
        op = run.spec.operator
        return (spec_problem(self.name, None if op is None else op.kind)
                or range_problem(self.name, run.spec))

    def strategy_reason(self, run: RunView, label: str) -> str | None:
        return sql_cleanup_reason(self.name, self.cleanup_of(run, label),
                                  run.ttl_of(label) is not None,
                                  ttl_sweep=run.ttl_sweep_of(label) is not None)

    def check(self, run: RunView) -> str | None:
        """The job compiles (the extra's jars and a JDK 17), when this lane runs the spec."""
        if self.spec_reason(run) is not None:
            return None
        from backends.flink.sql_job import ensure_sql_job_built

        try:
            ensure_sql_job_built()
        except RuntimeError as exc:
            return str(exc)
        return None

    def run_job(self, run: RunView, cfg: OperatorConfig, facts: DataFacts) -> pa.Table:
        return run_sql_scenario(run, cfg, facts)

    def paces(self, run: RunView) -> bool:
        """Always: the job's source releases records on the paced clock (its latency and, under
        ProcessingTime, its TTL clock)."""
        return True

    def job_cost(self, run: RunView, load: JobLoad, label: str) -> JobCost:
        """A JVM's start, then the paced span; twice with a TTL (the reference job, right
        after it: ``workloads.lanes.flink_sql_job``). Its events CSV is on disk meanwhile."""
        paced_s = paced_span_s(load.span_ms, run.speedup)
        one = job_lane_cost(load, SQL_RECORDS_PER_S, SQL_JOB_START_S, paced_s)
        jobs = 2 if run.ttl_of(label) is not None else 1
        wall = one.wall_s + (jobs - 1) * (one.wall_s - SQL_JOB_START_S + REFERENCE_START_S)
        return JobCost(wall, paced_s=paced_s * jobs, disk_bytes=load.events * CSV_BYTES_PER_EVENT)


FLINK_SQL_LANES: tuple[Lane, ...] = tuple(FlinkSqlLane(name) for name in SQL_LANES)
