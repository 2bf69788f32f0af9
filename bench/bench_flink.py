"""asv: Flink's own per-op rates beside statebench's, measured in the same run, per commit.

`setup_cache` runs the per-op suite once (``bench/flink_ops.py``) and builds its document
(``bench/perop.py``); the tracks read that document. asv gives a benchmark no sign of
``--quick`` (it only runs each one once, and ``setup_cache`` runs whole either way), and the
per-op protocols, even the quick one, were most of a fresh clone's first ``asv run --quick``
(docs/performance.md, "Tracking with asv"). So the protocol (:func:`protocol`) is:

* ``$STATEBENCH_PEROP_PROTOCOL`` where it names one (quick, lean, wide or full);
* else ``full`` under ``STATEBENCH_ASV_PROTOCOL=full`` (bench/asv_protocol.py, the asv suite's
  one switch): 3 fresh JVMs per backend, op and TTL mode, 5 measured 1 s rounds after at least
  3 s of warm-up; 6 workers; 100 k keys;
* else :data:`ASV_QUICK`, asv's default: the quick protocol's rounds and 20 k keys from one
  fresh JVM per backend, op and TTL mode and one worker per backend and state kind. Each
  number is one process's median over 3 rounds, a point with no interval over processes, so
  the document's verdicts mean nothing there (theirs come from ``python -m bench.perop run``);
  what asv tracks (medians and ratios) keeps its meaning, measured once.

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

import dataclasses
import os
from typing import Any

from asv_runner.benchmarks.mark import skip_for_params

from bench import asv_protocol
from bench.flink_ops import (
    FULL,
    KINDS,
    MODES,
    OPS,
    PROTOCOL_ENV,
    QUICK,
    Protocol,
    protocol_from_env,
)

UNAVAILABLE = "unavailable"
#: asv's default per-op protocol: the quick one with one process per side where it has two,
#: half its JVMs and workers, whose start-up and fill are most of its time.
ASV_QUICK = dataclasses.replace(QUICK, name="asv-quick", forks=1, workers=1)


def protocol() -> Protocol:
    """$STATEBENCH_PEROP_PROTOCOL where set; else full under $STATEBENCH_ASV_PROTOCOL=full;
    else ASV_QUICK. A name either variable does not know is refused (ValueError)."""
    suite = asv_protocol.asv_protocol()  # refused when wrong, even where the other is set
    if os.environ.get(PROTOCOL_ENV, "").strip():
        return protocol_from_env()
    return FULL if suite == asv_protocol.FULL else ASV_QUICK


#: The protocol of this run.
PROTOCOL = protocol()


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
    # 7: asv's own quick protocol by default; 6: the protocol in the version; 5: an op's mode
    # forks take turns, charged until their next turn; 4: one state per fork; 3: modes side by
    # side in one fork; 2: forks, 100 k keys
    version = f"flink-ops-7-{PROTOCOL.name}"

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
