"""asv: Flink's own per-op rates beside statebench's, measured in the same run, per commit.

`setup_cache` runs the per-op suite once (``bench/flink_ops.py``) and builds its document
(``bench/perop.py``); the tracks read that document. By default it runs the *quick* protocol
(2 forks per backend, op and TTL mode, 2 workers per backend and state kind, 3 short rounds,
20 k keys): asv gives a benchmark no sign of ``--quick`` (it only runs each one once, and
``setup_cache`` runs whole either way), and the full protocol kept a fresh clone's first
``asv run --quick`` busy past 23 minutes. The protocols that measure what the docs report are
opt-in: ``STATEBENCH_PEROP_PROTOCOL=full asv run ...`` (3 fresh JVMs per backend, op and TTL
mode, 5 measured 1 s rounds after at least 3 s of warm-up; 6 workers; 100 k keys) or ``=lean``.
The protocol's name is part of ``version``, so asv never draws one protocol's history into
another's. asv treats larger as worse, so they are times per op and ratios of times:

* ``track_flink_time_per_op`` and ``track_statebench_time_per_op``: 1 / the median rate;
* ``track_statebench_over_flink``: statebench's time per op / Flink's (how much slower);
* ``track_ttl_cost_statebench_over_flink``: for TTL on and on without background cleanup,
  statebench's slowdown from TTL divided by Flink's (1 = the same relative cost; the goal is
  within 1.5x either way; the interval and verdict are in the document). TTL off has nothing to
  compare and is skipped.

Without Flink's extra or a JDK every benchmark here is skipped with the reason: ``setup_cache``
returns ``{"unavailable": reason}`` (never None: asv then calls the benchmarks without the cache
argument) and ``setup`` raises NotImplementedError, asv's skip.
"""

from __future__ import annotations

from typing import Any

from asv_runner.benchmarks.mark import skip_for_params

from bench.flink_ops import KINDS, MODES, OPS, protocol_from_env

UNAVAILABLE = "unavailable"
#: The protocol of this run: $STATEBENCH_PEROP_PROTOCOL, quick unless it names lean or full.
PROTOCOL = protocol_from_env()


def _measure() -> dict[str, Any]:
    from backends.flink import FlinkUnavailableError
    from bench.perop import run

    try:
        doc = run(PROTOCOL, None)
    except FlinkUnavailableError as exc:
        return {UNAVAILABLE: f"Flink's lanes cannot run here: {exc}"}
    out: dict[str, Any] = {"rates": {}, "cells": {}}
    for r in doc["rates"]:
        out["rates"][f"{r['side']}/{r['backend']}/{r['ttl']}/{r['op']}"] = r["median"]
    for c in doc["cells"]:
        out["cells"][f"{c['backend']}/{c['ttl']}/{c['op']}"] = c["ratio"]["value"]
    return out


class FlinkOps:
    """Seconds per op on Flink's backends and statebench's, and their ratios."""

    params = (list(KINDS), list(MODES), list(OPS))
    param_names = ["backend", "ttl", "op"]
    timeout = 3600
    # 6: the protocol in the version (quick by default); 5: an op's mode forks take turns,
    # charged until their next turn; 4: one state per fork; 3: modes side by side in one fork;
    # 2: forks, 100 k keys
    version = f"flink-ops-6-{PROTOCOL.name}"

    def setup_cache(self) -> dict[str, Any]:
        return _measure()

    setup_cache.timeout = 5400  # type: ignore[attr-defined]  # asv reads it off the function

    def setup(self, cache: dict[str, Any], kind: str, mode: str, op: str) -> None:
        if UNAVAILABLE in cache:
            raise NotImplementedError(cache[UNAVAILABLE])

    def _time(self, cache: dict[str, Any], side: str, kind: str, mode: str, op: str) -> float:
        return 1.0 / cache["rates"][f"{side}/{kind}/{mode}/{op}"]

    def track_flink_time_per_op(self, cache: dict, kind: str, mode: str, op: str) -> float:
        return self._time(cache, "flink", kind, mode, op)

    track_flink_time_per_op.unit = "seconds"  # type: ignore[attr-defined]

    def track_statebench_time_per_op(self, cache: dict, kind: str, mode: str, op: str) -> float:
        return self._time(cache, "statebench", kind, mode, op)

    track_statebench_time_per_op.unit = "seconds"  # type: ignore[attr-defined]

    def track_statebench_over_flink(self, cache: dict, kind: str, mode: str, op: str) -> float:
        return (self._time(cache, "statebench", kind, mode, op)
                / self._time(cache, "flink", kind, mode, op))

    track_statebench_over_flink.unit = "x"  # type: ignore[attr-defined]

    @skip_for_params([(kind, "off", op) for kind in KINDS for op in OPS])  # the baseline
    def track_ttl_cost_statebench_over_flink(
        self, cache: dict, kind: str, mode: str, op: str
    ) -> float:
        # the document's ratio is of rates, (sb_on/sb_off)/(f_on/f_off); in times it inverts
        return 1.0 / cache["cells"][f"{kind}/{mode}/{op}"]

    track_ttl_cost_statebench_over_flink.unit = "x"  # type: ignore[attr-defined]
