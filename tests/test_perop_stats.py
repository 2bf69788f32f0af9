"""The per-op suite's statistics and document: intervals, pyperf's unstable rule, verdicts from
intervals, and the repeatability check, on synthetic values (the measuring itself is a benchmark:
bench/pytest/test_bench_flink.py)."""

from __future__ import annotations

import random

import pytest

from bench import perop_stats as st
from bench.flink_ops import KINDS, LEAN, MODES, OPS, OpRun
from bench.perop import SCHEMA, compare, document, format_document


def test_verdict_is_decided_only_by_a_whole_interval() -> None:
    assert st.band_agreement(0.7, 1.4, 1.5) == "agree"
    assert st.band_agreement(0.5, 0.6, 1.5) == "disagree"
    assert st.band_agreement(1.6, 2.0, 1.5) == "disagree"
    assert st.band_agreement(1.2, 1.7, 1.5) == "undecided"  # straddles 1.5
    assert st.band_agreement(0.6, 0.8, 1.5) == "undecided"  # straddles 1/1.5


def test_unstable_follows_pyperf_rules() -> None:
    assert st.unstable_reasons([1.0, 1.01, 0.99]) == ()
    assert any("stdev" in r for r in st.unstable_reasons([1.0, 1.3, 0.8]))
    assert any("min or max" in r for r in st.unstable_reasons([1.0] * 9 + [2.6]))
    assert st.unstable_reasons([1.0, 1.0], shortest_s=0.0005) == ("a raw value under 1 ms",)


def test_interval_holds_the_median_repeats_and_keeps_between_process_spread() -> None:
    rng = random.Random(1)
    tight = [[100 + rng.random() for _ in range(5)] for _ in range(3)]
    spread = [[level + rng.random() for _ in range(5)] for level in (80, 100, 120)]
    a, b = st.summarise(tight), st.summarise(tight)
    assert a == b  # seeded bootstrap
    assert a.ci_low <= a.median <= a.ci_high
    s = st.summarise(spread)
    assert (s.ci_high - s.ci_low) > 10 * (a.ci_high - a.ci_low)


def test_ratio_of_process_ratios_of_equal_relative_costs_agrees() -> None:
    off = [[1000.0, 1001.0, 999.0]] * 3
    on = [[500.0, 500.5, 499.5]] * 3
    r = st.ratio_of_processes(on, off, [[v * 3 for v in g] for g in on],
                              [[v * 3 for v in g] for g in off], 1.5)
    assert r.value == pytest.approx(1.0)
    assert r.verdict == "agree"
    far = st.ratio_of_processes([[100.0, 101.0, 99.0]] * 3, off, on, off, 1.5)  # 5x dearer
    assert far.verdict == "disagree" and far.ci_high < 1 / 1.5


def test_a_process_ratio_cancels_what_the_machine_and_the_round_position_did() -> None:
    """Two processes: the machine runs at different speeds in each, alike for both modes, and
    the position in a round slows one mode's rounds in turn: each process's ratio of mean
    rates is TTL's cost alone, while the rates themselves spread 2x."""
    speed = [[1.0, 1.0, 1.0], [0.5, 0.5, 0.5]]
    position = [1.0, 0.8, 0.9]  # a rotation: each mode meets every position once
    off = [[1e6 * s * position[i] for i, s in enumerate(g)] for g in speed]
    on = [[4e5 * s * position[(i + 1) % 3] for i, s in enumerate(g)] for g in speed]
    r = st.process_ratio(on, off)
    assert r.value == pytest.approx(0.4)
    assert r.ci_high - r.ci_low == pytest.approx(0.0, abs=1e-12)
    rates = st.summarise(off)
    assert rates.ci_high / rates.ci_low > 1.4
    per_round = [a / b for a, b in zip(on[0], off[0])]
    assert max(per_round) / min(per_round) > 1.2  # what a per-round ratio would have carried


def test_process_ratios_spread_between_processes_widens_the_interval() -> None:
    off = [[1e6, 1e6]] * 3
    steady = st.process_ratio([[4e5, 4e5]] * 3, off)
    moving = st.process_ratio([[3e5, 3e5], [4e5, 4e5], [5e5, 5e5]], off)
    assert steady.ci_low == steady.ci_high == pytest.approx(0.4)
    assert moving.value == pytest.approx((0.3 * 0.4 * 0.5) ** (1 / 3))  # geometric mean
    # three processes cannot pin a ratio to their own range: the 95% t interval is wider than
    # the smallest and largest of them (which the old bootstrap returned: ~75% coverage)
    assert moving.ci_low < 0.3 and moving.ci_high > 0.5


def test_paired_series_must_come_from_the_same_processes() -> None:
    with pytest.raises(ValueError, match="same processes"):
        st.process_ratios([[1.0]], [[1.0], [1.0]])
    with pytest.raises(ValueError, match="at least one value"):
        st.process_ratios([[1.0], []], [[1.0], [1.0]])


def _measurements(scale: float) -> dict:
    rng = random.Random(7)
    m = {}
    for side in ("flink", "statebench"):
        for kind in KINDS:
            for mode in MODES:
                for op in OPS:
                    level = scale * (1e6 if mode == "off" else 4e5)
                    m[(side, kind, mode, op)] = [
                        OpRun([level * (1 + rng.uniform(-0.02, 0.02)) for _ in range(3)],
                              [level * (1 + rng.uniform(-0.02, 0.02)) for _ in range(3)],
                              [level / 2], True, 0.1)
                        for _ in range(2)]
    return m


def test_document_shape_printout_and_compare() -> None:
    doc = document(_measurements(1.0), LEAN, [1.0, 1.0, 1.0], [2.0, 1.5, 1.0],
                   probes=[[5e6, 5.1e6], [4.9e6, 5e6]])
    assert doc["schema"] == SCHEMA and doc["clock"] == "cpu"
    assert len(doc["rates"]) == 2 * len(KINDS) * len(MODES) * len(OPS)
    assert len(doc["cells"]) == 28
    cell = doc["cells"][0]
    assert set(cell) >= {"backend", "ttl", "op", "ratio", "verdict", "unstable", "band"}
    assert cell["verdict"] == "agree"  # both sides lose the same 60% to TTL
    lines = format_document(doc)
    assert any("28 of 28" in line or "28 agree" in line for line in lines)
    assert any("dict_update" in line for line in lines)
    assert doc["machine_probe"]["median"] == pytest.approx(5e6, rel=0.02)
    slower = document(_measurements(0.7), LEAN, [1.0] * 3, [1.0] * 3,
                      probes=[[3.5e6, 3.5e6], [3.5e6, 3.5e6]])
    report = compare([doc, doc, slower])
    assert report["same_verdict"] == 28
    assert report["max_median_move"] == pytest.approx(1 / 0.7 - 1, rel=0.1)
    assert len(report["medians_over_limit"]) == len(doc["rates"])  # every median moved 43%
    assert report["max_cell_ratio_move"] < 0.1  # TTL's relative cost did not move
    assert report["machine_probe_move"] == pytest.approx(1 / 0.7 - 1, rel=0.05)


def test_rotated_modes_put_every_mode_in_every_position() -> None:
    from bench.flink_ops import rotated_modes

    orders = [rotated_modes(n) for n in range(len(MODES))]
    assert all(sorted(o) == sorted(MODES) for o in orders)
    for position in range(len(MODES)):
        assert {o[position] for o in orders} == set(MODES)
    assert rotated_modes(len(MODES) + 1) == orders[1]


def test_interleaved_iterations_are_charged_until_the_process_next_runs() -> None:
    """An iteration's CPU runs from its start to the process's next start (the last to the
    clock read after the round): what a process spends between its turns, a flush its writes
    set off, lands on the iteration that caused it; clocks that do not fit are an error."""
    from bench.flink_ops import charged_cpu_rates

    # 1,000 ops in 0.1 s of CPU each, the second iteration's flush running on for 0.1 s more
    clocks = [0, 100_000_000, 300_000_000, 400_000_000]
    assert charged_cpu_rates([1000, 1000, 1000], clocks) == pytest.approx([10_000, 5_000, 10_000])
    with pytest.raises(ValueError, match="3 iterations need 4 clocks"):
        charged_cpu_rates([1000, 1000, 1000], clocks[:3])
    with pytest.raises(ValueError, match="must advance"):
        charged_cpu_rates([1000, 1000], [0, 100, 100])


def test_the_gate_totals_count_each_retaken_round_once() -> None:
    """A retaken round holds every TTL mode, so each mode's runs carry its count: the rates
    show it per mode and the document's totals count it once, with the printout's line."""
    m = _measurements(1.0)
    for mode in MODES:
        first = m[("statebench", "heap", mode, "value_get")][0]
        first.retaken, first.slow_kept = 2, 1
    doc = document(m, LEAN, [1.0] * 3, [1.0] * 3)
    rate = next(r for r in doc["rates"] if (r["side"], r["backend"], r["ttl"], r["op"]) ==
                ("statebench", "heap", "on", "value_get"))
    assert (rate["retaken"], rate["slow_kept"]) == (2, 1)
    assert (doc["gate"]["retaken_rounds"], doc["gate"]["slow_rounds_kept"]) == (2, 1)
    lines = format_document(doc)
    assert any("machine gate: 2 rounds retaken, 1 slow rounds kept" in line for line in lines)
    assert any("2 rounds retaken" in line and "value_get" in line for line in lines)


def test_each_rate_says_under_what_cache_pressure_it_was_measured() -> None:
    """A rate's cache level is the median reading of its rounds' cache probe over the run's
    median reading; below CACHE_FLAG the printout flags it, and compare sets each moved median
    beside its readings in every run."""
    from bench.perop import CACHE_FLAG

    m = _measurements(1.0)
    for runs in m.values():
        for run in runs:
            run.cache = [40e6, 40e6, 40e6]
    squeezed = ("flink", "heap", "off", "list_get")
    for run in m[squeezed]:
        run.cache = [12e6, 12e6, 12e6]
    doc = document(m, LEAN, [1.0] * 3, [1.0] * 3)
    rates = {(r["side"], r["backend"], r["ttl"], r["op"]): r for r in doc["rates"]}
    assert doc["cache_probe"]["median"] == pytest.approx(40e6)
    assert rates[squeezed]["cache"] == pytest.approx({"median": 12e6, "level": 0.3})
    assert rates[squeezed]["values"]["cache"] == [[12e6] * 3] * 2  # per process, per round
    assert rates[("flink", "heap", "on", "list_get")]["cache"]["level"] == pytest.approx(1.0)
    assert doc["cache_probe"]["flag_below"] == CACHE_FLAG
    lines = format_document(doc)
    flagged = [line for line in lines if "cache probe at 30%" in line]
    assert len(flagged) == 1 and "list_get" in flagged[0] and "off" in flagged[0]
    assert any(line.startswith("cache probe (dict stores over 400,000 keys") for line in lines)
    # without readings (a document from before the cache probe): no level, no flag
    plain = document(_measurements(1.0), LEAN, [1.0] * 3, [1.0] * 3)
    assert plain["cache_probe"] is None and all(r["cache"] is None for r in plain["rates"])
    report = compare([plain, plain, document(_measurements(0.7), LEAN, [1.0] * 3, [1.0] * 3)])
    assert set(report["cache_of_moved"]) == set(report["medians_over_limit"])
    assert all(v == [None, None, None] for v in report["cache_of_moved"].values())
    moved = compare([doc, doc, document(_measurements(0.7), LEAN, [1.0] * 3, [1.0] * 3)])
    assert moved["cache_of_moved"]["flink/heap/off/list_get"] == [12e6, 12e6, None]

