"""asv: the metrics of whole scenario runs, tracked per commit.

`setup_cache` runs the in-process runner once per commit (asv calls it once per environment and
hands its result to every track_* below): workloads x backends x every strategy, plus a TTL
sweep. How many events and runs is the protocol's (:data:`PROTOCOL`, from
``$STATEBENCH_ASV_PROTOCOL``, bench/asv_protocol.py):

* ``quick`` (the default): :data:`QUICK_EVENTS` events per scenario, one run. asv's ``--quick``
  does not shrink a ``setup_cache``, and the full protocol's took most of a fresh clone's first
  ``asv run --quick``. A quick track is one run's number over fewer events (more of it warm-up,
  fewer TTL periods), comparable only with other quick runs.
* ``full``: :data:`FULL_EVENTS` events, each scenario run 3 times.

The protocol's name is part of every ``version`` here, so the two never share a history; the
tracked names are the same. The track_* benchmarks read the cached metrics: an exact number
(the same in every run, ``workloads.report.metrics.class_of``) as it is, a timed or
timing-dependent one (RocksDB's physical bytes and incremental checkpoint sizes move with
background compactions) as the median over the runs. asv treats a larger number as worse, so
every metric here is "lower is better": time per record instead of records per second, bytes,
entries, milliseconds. A combination that cannot run (incremental cleanup on RocksDB, the
compaction filter on an event-time clock) raises NotImplementedError in setup, which asv shows
as skipped. Flink's own backends run as reference lanes (``flink-heap``, ``flink-rocksdb``,
``flink-forst``) when ``statebench[flink]`` and a JDK are there (asv installs the extra); Flink
keeps no cleanup counters, so their cleanup-lag track has no number.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from typing import Any

from bench.asv_protocol import FULL, QUICK, asv_protocol

WORKLOADS = ["sessions-churn", "ycsb-a"]
#: Flink's reference lanes run where they can (statebench[flink] and a JDK); elsewhere their
#: benchmarks are skipped.
BACKENDS = ["heap", "rocksdb", "flink-heap", "flink-rocksdb", "flink-forst"]
STRATEGIES = ["none", "full_snapshot", "incremental(5, false)", "compaction_filter(1000)", "timer"]
#: Events per scenario: 8 s of logical time at sessions-churn's 25 k events/s (10 s at ycsb-a's
#: 20 k), 8 TTL periods of 1 s.
FULL_EVENTS = 200_000
#: A quarter: 2 s of sessions-churn (2.5 s of ycsb-a), still past the 1 s TTL and 8 checkpoints.
QUICK_EVENTS = 50_000
CHECKPOINT_INTERVAL_MS = 250
TTL_SWEEP_MS = [100, 300, 1000]


@dataclass(frozen=True)
class ScenarioProtocol:
    """How much each cached scenario measures."""

    name: str
    events: int
    #: runs per cached scenario: timed and timing-dependent tracks report their median
    runs: int


PROTOCOLS = {
    QUICK: ScenarioProtocol(QUICK, events=QUICK_EVENTS, runs=1),
    FULL: ScenarioProtocol(FULL, events=FULL_EVENTS, runs=3),
}
#: The protocol of this run: $STATEBENCH_ASV_PROTOCOL, quick unless it names full.
PROTOCOL = PROTOCOLS[asv_protocol()]
#: Summary names derived from a metric (``peak_<m>``, ``steady_<m>``).
DERIVED_PREFIXES = ("peak_", "steady_")


def _summarise(rows: Any) -> dict[tuple[str, str, str], dict[str, float]]:
    """(workload, backend, strategy) -> metric -> one number, from the shared summaries
    (workloads.results.summaries, as the CLI and the report): each metric's headline (median of
    repetitions or checkpoints, peak of a series), plus ``peak_<m>`` (the largest sample) and,
    for series, ``steady_<m>`` (median of the later half)."""
    from workloads.results.summaries import summaries

    out = {}
    for key, stats in summaries(rows).items():
        summary: dict[str, float] = {}
        for metric, s in stats.items():
            summary[metric] = s.center
            summary[f"peak_{metric}"] = s.hi
            if s.steady is not None:
                summary[f"steady_{metric}"] = s.steady
        out[(key.workload, key.backend, key.strategy)] = summary
    return out


def _run_once(spec: Any, strategies: list[str]) -> tuple[dict, list]:
    from workloads.run.engines.inprocess import run_in_process
    from workloads.run.plan import RunConfig

    with tempfile.TemporaryDirectory(prefix="statebench-asv-") as ckpt:
        cfg = RunConfig(spec=spec, backends=_runnable_backends(), strategies=tuple(strategies),
                        checkpoint_root=ckpt, repetitions=1)
        outcome = run_in_process(cfg)
    return _summarise(outcome.rows), list(outcome.not_applicable)


def _base_metric(name: str) -> str:
    for prefix in DERIVED_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def combine_runs(summaries: list[dict[str, float]], backend: str, strategy: str, clock: str,
                 checkpoint_mode: str) -> dict[str, float]:
    """One number per summary name over several runs of a scenario: exact numbers from the
    first run (every run has the same), timed and timing-dependent ones the median over the runs
    that have them (``metrics.class_of``)."""
    import numpy as np

    from workloads.report.metrics import class_of

    out: dict[str, float] = {}
    for name in dict.fromkeys(n for s in summaries for n in s):
        values = [s[name] for s in summaries if name in s]
        klass = class_of(_base_metric(name), backend, strategy, clock=clock,
                         checkpoint_mode=checkpoint_mode)
        out[name] = values[0] if klass.exact else float(np.median(values))
    return out


def _run(spec_name: str, strategies: list[str], overrides: dict | None = None,
         runs: int | None = None, protocol: ScenarioProtocol = PROTOCOL) -> dict:
    """Summaries of ``runs`` (the protocol's unless given) runs of a spec at the protocol's
    events, combined by :func:`combine_runs`."""
    from workloads.spec import load_spec

    runs = protocol.runs if runs is None else runs
    spec = load_spec(spec_name).with_overrides(
        events=protocol.events, checkpoint_interval_ms=CHECKPOINT_INTERVAL_MS,
        **(overrides or {}))
    per_run = [_run_once(spec, strategies) for _ in range(runs)]
    keys = dict.fromkeys(k for summary, _ in per_run for k in summary)
    summary = {
        key: combine_runs([s[key] for s, _ in per_run if key in s], key[1], key[2],
                          spec.state.time_characteristic, spec.checkpoints.mode)
        for key in keys
    }
    for na in per_run[0][1]:
        summary[(spec.name, na.backend, na.strategy)] = {"not_applicable": 1.0}
    return summary


def _runnable_backends() -> tuple[str, ...]:
    """BACKENDS without Flink's lanes when they cannot run here."""
    from workloads.lanes import runs_on_flink
    from workloads.run.compare import default_backends

    runnable = default_backends(warn=lambda _message: None)
    flink = any(runs_on_flink(b) for b in runnable)  # Flink's lanes run here
    return tuple(b for b in BACKENDS if b in runnable or (flink and runs_on_flink(b)))


def _metric(cache: dict, key: tuple, name: str) -> float:
    if key not in cache:
        raise NotImplementedError(f"{key} did not run here (Flink's lanes need statebench[flink])")
    values = cache[key]
    if "not_applicable" in values:
        raise NotImplementedError(f"{key} is not applicable")
    return values.get(name, float("nan"))


class Scenarios:
    """Metrics of in-process runs per workload x backend x strategy (the protocol's events and
    runs: one run of a quarter of the events unless $STATEBENCH_ASV_PROTOCOL=full)."""

    params = (WORKLOADS, BACKENDS, STRATEGIES)
    param_names = ["workload", "backend", "strategy"]
    timeout = 1800
    # 2: the protocol in the version (quick by default)
    version = f"scenarios-2-{PROTOCOL.name}"

    def setup_cache(self) -> dict:
        cache: dict = {}
        for workload in WORKLOADS:
            cache.update(_run(workload, STRATEGIES))
        return cache

    def setup(self, cache: dict, workload: str, backend: str, strategy: str) -> None:
        _metric(cache, (workload, backend, strategy), "records_per_s")


# (benchmark name, summary metric, scale to the unit, unit): one track_* method each. Rates are
# inverted (time per record) because asv treats larger as worse.
TRACKS = [
    ("time_per_record", "records_per_s", None, "seconds"),
    ("p99_latency", "latency_p99_us", 1e-6, "seconds"),
    ("peak_state_bytes", "peak_logical_bytes", 1.0, "bytes"),
    ("steady_state_bytes", "steady_logical_bytes", 1.0, "bytes"),
    ("peak_physical_bytes", "peak_physical_bytes", 1.0, "bytes"),
    ("expired_present_entries", "peak_expired_present_entries", 1.0, "entries"),
    ("full_checkpoint_bytes", "peak_checkpoint_bytes", 1.0, "bytes"),
    ("uploaded_checkpoint_bytes", "peak_checkpoint_uploaded_bytes", 1.0, "bytes"),
    ("cleanup_lag_p99", "cleanup_lag_p99", 1e-3, "seconds"),
]


def _own_lag_p99(strategy: str) -> str:
    """The p99 cleanup lag of the mechanism a strategy adds (read-time cleanup for none); the
    compaction filter's has no row (RocksDB does not say when it dropped an entry): NaN."""
    from backends.strategies import strategy_of_label
    from workloads.results.summaries import lag_metric

    found = strategy_of_label(strategy)
    return lag_metric(found.mechanism if found is not None and found.mechanism else "read",
                      "p99")


def _track(metric: str, scale: float | None, unit: str) -> Any:
    def track(self: Scenarios, cache: dict, workload: str, backend: str, strategy: str) -> float:
        name = _own_lag_p99(strategy) if metric == "cleanup_lag_p99" else metric
        value = _metric(cache, (workload, backend, strategy), name)
        return 1.0 / value if scale is None else value * scale

    track.unit = unit  # type: ignore[attr-defined]
    return track


for _name, _metric_name, _scale, _unit in TRACKS:
    setattr(Scenarios, f"track_{_name}", _track(_metric_name, _scale, _unit))


def _time_vs_none(self: Scenarios, cache: dict, workload: str, backend: str,
                  strategy: str) -> float:
    """A strategy's time per record over ``none``'s on the same backend, both from the same
    cached run (one process, run one after the other): the machine's level, which moves an
    absolute time between commits, is in both and cancels; what a commit does to a strategy's
    own cost stays."""
    mine = _metric(cache, (workload, backend, strategy), "records_per_s")
    none = _metric(cache, (workload, backend, "none"), "records_per_s")
    return none / mine


_time_vs_none.unit = "ratio"  # type: ignore[attr-defined]
Scenarios.track_time_vs_none = _time_vs_none  # type: ignore[attr-defined]


class TtlSweep:
    """Peak stored entries of the session-churn workload as the TTL grows (a numeric x-axis),
    one run each at the protocol's events (a quarter unless $STATEBENCH_ASV_PROTOCOL=full)."""

    params = (TTL_SWEEP_MS, BACKENDS, ["none", "timer"])
    param_names = ["ttl_ms", "backend", "strategy"]
    timeout = 1800
    # 3: the protocol in the version; 2: the peak of live + expired (was the sum of their peaks)
    version = f"ttl-sweep-3-{PROTOCOL.name}"

    def setup_cache(self) -> dict:
        cache: dict = {}
        for ttl in TTL_SWEEP_MS:
            # peak stored entries is exact under event time: one run says it
            for key, values in _run("sessions-churn", ["none", "timer"], {"ttl_ms": ttl},
                                    runs=1).items():
                cache[(ttl, *key[1:])] = values
        return cache

    def setup(self, cache: dict, ttl_ms: int, backend: str, strategy: str) -> None:
        # not applicable (the timer strategy on Flink's lanes) or not run (no Flink here): skip
        _metric(cache, (ttl_ms, backend, strategy), "peak_stored_entries")

    def track_peak_stored_entries(self, cache: dict, ttl_ms: int, backend: str,
                                  strategy: str) -> float:
        return _metric(cache, (ttl_ms, backend, strategy), "peak_stored_entries")

    track_peak_stored_entries.unit = "entries"
