"""asv: Flink's own per-op rates beside statebench's, measured in the same run, per commit.

`setup_cache` starts one JVM worker per Flink backend and measures every (backend, TTL mode,
op) on both sides back to back (``bench/flink_ops.py``: JMH-style rounds in the JVM, the same
rounds in Python). The tracks read those numbers. asv treats larger as worse, so they are times
per op and ratios of times:

* ``track_flink_time_per_op`` and ``track_statebench_time_per_op``: median seconds per op;
* ``track_statebench_over_flink``: statebench's time per op / Flink's (how much slower);
* ``track_ttl_cost_statebench_over_flink``: for TTL on and on without background cleanup,
  statebench's slowdown from TTL divided by Flink's (1 = the same relative cost; the goal is
  within 1.5x either way). TTL off has nothing to compare and is skipped.

Without Flink's extra or a JDK every benchmark here is skipped (NotImplementedError).
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from asv_runner.benchmarks.mark import skip_for_params

from bench.flink_ops import MODES, OPS

KINDS = ["heap", "rocksdb"]


def _measure() -> dict | None:
    from backends.flink import FlinkUnavailableError, FlinkWorker
    from bench.flink_ops import rates_side_by_side

    out: dict = {}
    for kind in KINDS:
        try:
            worker = FlinkWorker(kind)
        except FlinkUnavailableError:
            return None
        try:
            with tempfile.TemporaryDirectory(prefix="statebench-asv-flink-") as tmp:
                for mode in MODES:
                    for op, rates in rates_side_by_side(worker, kind, mode, Path(tmp)).items():
                        out[(kind, mode, op)] = {
                            side: 1.0 / statistics.median(r) for side, r in rates.items()
                        }
        finally:
            worker.close()
    return out


class FlinkOps:
    """Seconds per op on Flink's backends and statebench's, and their ratios."""

    params = (KINDS, list(MODES), list(OPS))
    param_names = ["backend", "ttl", "op"]
    timeout = 1800
    version = "flink-ops-1"

    def setup_cache(self) -> dict | None:
        return _measure()

    def setup(self, cache: dict | None, kind: str, mode: str, op: str) -> None:
        if cache is None:
            raise NotImplementedError("Flink's lanes are not installed (statebench[flink], JDK)")

    def track_flink_time_per_op(self, cache: dict, kind: str, mode: str, op: str) -> float:
        return cache[(kind, mode, op)]["flink"]

    track_flink_time_per_op.unit = "seconds"  # type: ignore[attr-defined]

    def track_statebench_time_per_op(self, cache: dict, kind: str, mode: str, op: str) -> float:
        return cache[(kind, mode, op)]["statebench"]

    track_statebench_time_per_op.unit = "seconds"  # type: ignore[attr-defined]

    def track_statebench_over_flink(self, cache: dict, kind: str, mode: str, op: str) -> float:
        t = cache[(kind, mode, op)]
        return t["statebench"] / t["flink"]

    track_statebench_over_flink.unit = "x"  # type: ignore[attr-defined]

    @skip_for_params([(kind, "off", op) for kind in KINDS for op in OPS])  # the baseline
    def track_ttl_cost_statebench_over_flink(
        self, cache: dict, kind: str, mode: str, op: str
    ) -> float:
        on, off = cache[(kind, mode, op)], cache[(kind, "off", op)]
        return (on["statebench"] / off["statebench"]) / (on["flink"] / off["flink"])

    track_ttl_cost_statebench_over_flink.unit = "x"  # type: ignore[attr-defined]
