"""asv's scenario tracks: a timed or timing-dependent number is the median over the cached runs,
an exact one the number every run has (issue 15 item 3)."""

from __future__ import annotations

from bench.bench_scenarios import RUNS, combine_runs


def test_timing_dependent_and_timed_tracks_take_the_median_exact_ones_the_number() -> None:
    runs = [
        {"records_per_s": 1.0, "peak_physical_bytes": 900.0, "peak_checkpoint_bytes": 10.0,
         "peak_live_entries": 7.0, "steady_physical_bytes": 5.0},
        {"records_per_s": 9.0, "peak_physical_bytes": 100.0, "peak_checkpoint_bytes": 30.0,
         "peak_live_entries": 7.0, "steady_physical_bytes": 1.0},
        {"records_per_s": 2.0, "peak_physical_bytes": 500.0, "peak_checkpoint_bytes": 20.0,
         "peak_live_entries": 7.0, "steady_physical_bytes": 3.0},
    ]
    rocks = combine_runs(runs, "rocksdb", "none", "EventTime", "incremental")
    assert rocks == {"records_per_s": 2.0, "peak_physical_bytes": 500.0,
                     "peak_checkpoint_bytes": 20.0, "peak_live_entries": 7.0,
                     "steady_physical_bytes": 3.0}
    # a full snapshot's size and the entries are exact: the first run's number
    heap = combine_runs(runs, "heap", "none", "EventTime", "full")
    assert heap["peak_checkpoint_bytes"] == 10.0 and heap["peak_live_entries"] == 7.0
    assert heap["peak_physical_bytes"] == 500.0  # copy-on-write moves the heap's footprint
    assert heap["records_per_s"] == 2.0
    # on a processing-time clock counts follow the wall: the median
    paced = combine_runs(runs, "heap", "none", "ProcessingTime", "full")
    assert paced["peak_checkpoint_bytes"] == 20.0
    assert RUNS >= 3
