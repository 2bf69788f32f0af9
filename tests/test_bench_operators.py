"""bench/bench_operators.py, the asv suite's operator workloads: one shipped Nexmark spec per
operator kind, the tracked numbers are what the run measured (exact ones identical across runs
and across heap and RocksDB, which see the same accesses), and a missing combination skips with
its reason (asv's NotImplementedError)."""

from __future__ import annotations

import pytest

from bench.bench_operators import KINDS, SPECS, Operators, operator_spec, run_kind
from workloads.operators import OPERATOR_CLASSES


def test_every_operator_kind_has_its_shipped_spec() -> None:
    assert set(KINDS) == set(OPERATOR_CLASSES)
    for kind in KINDS:
        spec = operator_spec(kind, events=1_000)
        assert spec.operator.kind == kind and spec.time.events == 1_000
    with pytest.raises(ValueError, match="unknown operator kind 'nope'"):
        operator_spec("nope")


def test_tracks_read_a_real_run() -> None:
    first = run_kind("regular_join", events=6_000, repetitions=1)
    second = run_kind("regular_join", events=6_000, repetitions=1)
    assert set(first) == {"heap", "rocksdb"}
    for backend in first:
        for name in ("peak_live_entries", "peak_checkpoint_bytes", "ttl_changed_results"):
            assert first[backend][name] == second[backend][name]  # exact under event time
        assert first[backend]["peak_live_entries"] > 0 and first[backend]["time_per_record"] > 0
        assert 0 < first[backend]["ttl_changed_results"] < 1  # 500 ms TTL loses join matches
    for name in ("peak_live_entries", "ttl_changed_results"):
        assert first["heap"][name] == first["rocksdb"][name]
    cache = {("regular_join", b): numbers for b, numbers in first.items()}
    bench = Operators()
    bench.setup(cache, "regular_join", "heap")
    assert bench.track_peak_live_entries(cache, "regular_join", "rocksdb") == \
        first["rocksdb"]["peak_live_entries"]
    assert bench.track_ttl_changed_results(cache, "regular_join", "heap") == \
        first["heap"]["ttl_changed_results"]
    with pytest.raises(NotImplementedError, match="dedup on heap did not run"):
        bench.setup(cache, "dedup", "heap")
    assert SPECS["regular_join"] == "nexmark-q20-join"
