"""asv: the operator workloads, one shipped Nexmark spec per operator kind, on
statebench's heap and RocksDB backends, tracked per commit.

`setup_cache` runs each kind's spec once in-process (:data:`REPETITIONS` repetitions, the
``timer`` cleanup, a short TTL so the TTL changes results and bounds state) over a few seconds of
event time, small enough for ``asv run --quick``. Every track is "lower is better", as asv
assumes: time per record instead of records/s, peak live entries, peak full checkpoint bytes,
and ``ttl_changed_results`` (the share of outputs the TTL changed against the same run without
TTL). Entries, checkpoint bytes and changed results are exact under event time (the same every
run: a change is a change of the code); time per record is the median over the repetitions.
The Flink lanes cannot run operator kinds yet, so they have no benchmark here.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from bench.fixtures import SEED

#: operator kind -> the shipped spec that follows its Nexmark query
SPECS = {
    "dedup": "nexmark-q18-dedup",
    "regular_join": "nexmark-q20-join",
    "tumbling_window": "nexmark-q7-window",
    "sliding_window": "nexmark-q5-sliding",
    "session_window": "nexmark-q11-session",
    "group_agg": "nexmark-q4-agg",
    "interval_join": "nexmark-interval-join",
    "topn": "nexmark-q19-topn",
}
KINDS = list(SPECS)
BACKENDS = ["heap", "rocksdb"]
#: Events per spec (CI may shrink it) at RATE: 4 s of event time, 8 TTLs, 8 checkpoints.
EVENTS = int(os.environ.get("STATEBENCH_BENCH_OPERATOR_EVENTS", "20000"))
RATE = 5_000
TTL_MS = 500
CHECKPOINT_INTERVAL_MS = 500
STRATEGY = "timer"
REPETITIONS = 3


def operator_spec(kind: str, events: int = EVENTS) -> Any:
    """The shipped spec of ``kind``, scaled for the benchmark and seeded with the suite's seed."""
    from workloads.spec import load_spec

    if kind not in SPECS:
        raise ValueError(f"unknown operator kind '{kind}'; expected one of {', '.join(SPECS)}")
    return load_spec(SPECS[kind]).with_overrides(
        events=events, rate=RATE, ttl_ms=TTL_MS, seed=SEED,
        checkpoint_interval_ms=CHECKPOINT_INTERVAL_MS)


def run_kind(kind: str, events: int = EVENTS,
             repetitions: int = REPETITIONS) -> dict[str, dict[str, float]]:
    """backend -> the tracked numbers of one in-process run of ``kind`` on heap and RocksDB."""
    from workloads.results.summaries import summaries
    from workloads.run.engines.inprocess import run_in_process
    from workloads.run.plan import RunConfig

    with tempfile.TemporaryDirectory(prefix="statebench-asv-op-") as ckpt:
        cfg = RunConfig(spec=operator_spec(kind, events), backends=tuple(BACKENDS),
                        strategies=(STRATEGY,), repetitions=repetitions,
                        checkpoint_root=ckpt, measure_latency=False)
        rows = run_in_process(cfg).rows
    out = {}
    for key, stats in summaries(rows).items():
        out[key.backend] = {
            "time_per_record": 1.0 / stats["records_per_s"].center,
            "peak_live_entries": stats["live_entries"].hi,
            "peak_checkpoint_bytes": stats["checkpoint_bytes"].hi,
            "ttl_changed_results": stats["ttl_changed_results"].center,
        }
    return out


def _value(cache: dict, kind: str, backend: str, name: str) -> float:
    if (kind, backend) not in cache:
        raise NotImplementedError(f"{kind} on {backend} did not run")
    return cache[(kind, backend)][name]


class Operators:
    """One shipped Nexmark spec per operator kind x backend, the timer cleanup, TTL 500 ms."""

    params = (KINDS, BACKENDS)
    param_names = ["kind", "backend"]
    timeout = 1200
    version = "operators-1"

    def setup_cache(self) -> dict:
        return {(kind, backend): numbers for kind in KINDS
                for backend, numbers in run_kind(kind).items()}

    def setup(self, cache: dict, kind: str, backend: str) -> None:
        _value(cache, kind, backend, "time_per_record")

    def track_time_per_record(self, cache: dict, kind: str, backend: str) -> float:
        return _value(cache, kind, backend, "time_per_record")

    track_time_per_record.unit = "seconds"

    def track_peak_live_entries(self, cache: dict, kind: str, backend: str) -> float:
        return _value(cache, kind, backend, "peak_live_entries")

    track_peak_live_entries.unit = "entries"

    def track_peak_checkpoint_bytes(self, cache: dict, kind: str, backend: str) -> float:
        return _value(cache, kind, backend, "peak_checkpoint_bytes")

    track_peak_checkpoint_bytes.unit = "bytes"

    def track_ttl_changed_results(self, cache: dict, kind: str, backend: str) -> float:
        return _value(cache, kind, backend, "ttl_changed_results")

    track_ttl_changed_results.unit = "share"
