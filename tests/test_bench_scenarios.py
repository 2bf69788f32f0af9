"""asv's scenario tracks: a timed or timing-dependent number is the median over the cached runs,
an exact one the number every run has (issue 15 item 3); how many runs of how many events is
the protocol's, quick unless $STATEBENCH_ASV_PROTOCOL=full (issue 29 item 8)."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

import bench.bench_scenarios as bench_scenarios
from bench.asv_protocol import ASV_PROTOCOL_ENV
from bench.bench_scenarios import FULL_EVENTS, PROTOCOLS, QUICK_EVENTS, combine_runs


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
    assert PROTOCOLS["full"].runs >= 3  # a median that a single slow run cannot move


@pytest.fixture
def reload_scenarios(monkeypatch: pytest.MonkeyPatch):
    """Reloads bench.bench_scenarios under the environment the test sets; the module is
    reloaded once more, with the variable gone, afterwards."""
    yield lambda: importlib.reload(bench_scenarios)
    monkeypatch.delenv(ASV_PROTOCOL_ENV, raising=False)
    importlib.reload(bench_scenarios)


def test_quick_unless_the_switch_names_full(monkeypatch: pytest.MonkeyPatch,
                                            reload_scenarios: Any) -> None:
    """asv gives setup_cache no sign of --quick, so the scenarios run the quick protocol unless
    $STATEBENCH_ASV_PROTOCOL=full; its name is in both classes' version (the two never share
    a history), and a wrong name is refused with the names it takes."""
    monkeypatch.delenv(ASV_PROTOCOL_ENV, raising=False)
    quick = reload_scenarios()
    assert quick.PROTOCOL.name == "quick"
    assert quick.PROTOCOL.events == QUICK_EVENTS < FULL_EVENTS and quick.PROTOCOL.runs == 1
    assert quick.Scenarios.version == "scenarios-2-quick"
    assert quick.TtlSweep.version == "ttl-sweep-3-quick"
    monkeypatch.setenv(ASV_PROTOCOL_ENV, " Full ")
    full = reload_scenarios()
    assert (full.PROTOCOL.name, full.PROTOCOL.events, full.PROTOCOL.runs) == (
        "full", FULL_EVENTS, 3)
    assert full.Scenarios.version == "scenarios-2-full"
    assert full.TtlSweep.version == "ttl-sweep-3-full"
    monkeypatch.setenv(ASV_PROTOCOL_ENV, "fast")
    with pytest.raises(ValueError, match=r"\$STATEBENCH_ASV_PROTOCOL='fast' is not an asv "
                                         r"protocol; expected one of \['quick', 'full'\]"):
        reload_scenarios()


@pytest.mark.parametrize("name", ["quick", "full"])
def test_each_scenario_runs_the_protocols_events_and_runs(
        monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """setup_cache asks the runner for the protocol's events, as many times as it has runs (the
    runner itself is replaced by a recorder: the runs are what this test is about)."""
    asked: list[tuple[str, int]] = []

    def recorder(spec: Any, strategies: list[str]) -> tuple[dict, list]:
        asked.append((spec.name, spec.time.events))
        return {(spec.name, "heap", s): {"records_per_s": 1.0} for s in strategies}, []

    monkeypatch.setattr(bench_scenarios, "_run_once", recorder)
    protocol = PROTOCOLS[name]
    cache = bench_scenarios._run("ycsb-a", ["none", "timer"], protocol=protocol)
    assert asked == [("ycsb-a", protocol.events)] * protocol.runs
    assert set(cache) == {("ycsb-a", "heap", "none"), ("ycsb-a", "heap", "timer")}


def test_a_strategys_time_over_nones_comes_from_the_same_run() -> None:
    """The machine-proof track: twice as slow as none reads 2.0 whatever the level."""
    from bench.bench_scenarios import Scenarios

    cache = {("w", "heap", "none"): {"records_per_s": 400.0},
             ("w", "heap", "timer"): {"records_per_s": 200.0}}
    fast_machine = {k: {"records_per_s": 3 * v["records_per_s"]} for k, v in cache.items()}
    bench = Scenarios()
    assert bench.track_time_vs_none(cache, "w", "heap", "timer") == 2.0
    assert bench.track_time_vs_none(fast_machine, "w", "heap", "timer") == 2.0
    assert bench.track_time_vs_none(cache, "w", "heap", "none") == 1.0
    with pytest.raises(NotImplementedError):
        bench.track_time_vs_none(cache, "w", "rocksdb", "timer")
