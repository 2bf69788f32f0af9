"""A planted effect (issue 29, 4b): a known cost per record on one strategy, found by a real
comparison with the default rounds, last in throughput by about the planted factor.

The knob (``STATEBENCH_PLANT_COST``, workloads/run/planted.py) spins ``us_per_record`` inside
the record loop of one strategy only. It is planted on ``full_snapshot`` in a workload without
checkpoints, where full_snapshot's cleanup never runs and its records cost what ``none``'s do: so
in each round the expected factor between them is computed from that round's own measured
per-record time of ``none`` and the planted cost, (t_none + c) / t_none.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import pytest

from workloads.run.compare import (
    DEFAULT_REPETITIONS,
    comparison_configs,
    run_comparison,
    write_comparison,
)
from workloads.run.plan import PlanError, RunConfig
from workloads.run.planted import PLANT_ENV, parse_planted, planted_cost, with_planted_cost
from workloads.spec import load_spec

PLANTED = "full_snapshot"
US_PER_RECORD = 50.0  # several times a loaded machine's ~3-10 us per record on heap
STRATEGIES = ("none", "full_snapshot", "incremental(5, false)", "timer")


def _rates(rows: list[dict], strategy: str) -> dict[int, float]:
    return {r["step"]: r["value"] for r in rows
            if r["strategy"] == strategy and r["metric"] == "records_per_s" and r["task"] == -1}


@pytest.mark.slow
def test_a_planted_cost_puts_its_strategy_last_by_the_planted_factor(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(PLANT_ENV, f"strategy={PLANTED},us_per_record={US_PER_RECORD:g}")
    spec = load_spec("sessions-churn").with_overrides(events=20_000, checkpoint_interval_ms=0)
    configs = comparison_configs([spec], backends=("heap",), strategies=STRATEGIES,
                                 repetitions=DEFAULT_REPETITIONS)
    shares: dict[tuple[str, int], float] = {}  # a job's CPU time over its wall time
    marks = [time.thread_time_ns(), time.perf_counter_ns()]

    def on_job(scenario, rnd: int) -> None:  # the in-process engine runs jobs in this thread
        cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
        shares[(scenario.strategy, rnd)] = (cpu - marks[0]) / (wall - marks[1])
        marks[:] = [cpu, wall]

    outcomes = run_comparison(configs, in_process=True, on_job=on_job)
    rows = outcomes[0].rows.to_pylist()
    rates = {s: _rates(rows, s) for s in STRATEGIES}
    assert all(sorted(r) == list(range(DEFAULT_REPETITIONS)) for r in rates.values())

    medians = {s: statistics.median(r.values()) for s, r in rates.items()}
    assert min(medians, key=medians.get) == PLANTED, medians  # last in the ranking

    # per round, the factor expected from the planted cost and none's per-record CPU time that
    # round. The tasks run one after the other in this thread, and the machine is shared: a
    # job's records take their CPU time over the share of a core the job had (its CPU time over
    # its wall time), so none's CPU time per record is its wall time per record times its job's
    # share, and the planted job's wall time per record is (that + the cost) over its own share.
    rounds = range(DEFAULT_REPETITIONS)
    observed = [rates["none"][r] / rates[PLANTED][r] for r in rounds]
    tasks = configs[0].parallelism  # the task=-1 rate is the sum of the tasks' rates
    cpu_us = [tasks * 1e6 / rates["none"][r] * shares[("none", r)] for r in rounds]
    expected = [(1 + US_PER_RECORD / cpu_us[r]) * shares[("none", r)] / shares[(PLANTED, r)]
                for r in rounds]
    ratio = statistics.median(o / e for o, e in zip(observed, expected))
    assert 0.6 <= ratio <= 1.5, (observed, expected, cpu_us, shares)

    run_dir = write_comparison(outcomes, tmp_path)
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["config"]["workloads"]["sessions-churn"]["planted_cost"] == {
        "env": PLANT_ENV, "strategy": PLANTED, "us_per_record": US_PER_RECORD}
    from workloads.report.decision import decide
    from workloads.report.load import load_run

    decision = decide(load_run(run_dir), "sessions-churn", "heap")
    assert decision is not None and decision.picks["fastest"] is not None
    leaders = {k.strategy for k in decision.picks["fastest"].leaders}
    assert PLANTED not in leaders and "none" in leaders, leaders


def test_the_knob_is_off_by_default_and_costs_nothing_then(monkeypatch) -> None:
    monkeypatch.delenv(PLANT_ENV, raising=False)
    assert planted_cost() is None
    spec = load_spec("ycsb-a")
    assert "planted_cost" not in RunConfig(spec=spec, backends=("heap",)).describe()

    def set_key(key: object) -> None:
        pass

    assert with_planted_cost("none", set_key) is set_key  # the loop calls it unwrapped
    monkeypatch.setenv(PLANT_ENV, "strategy=timer,us_per_record=1")
    assert with_planted_cost("none", set_key) is set_key  # another strategy: untouched
    assert with_planted_cost("timer", set_key) is not set_key


@pytest.mark.parametrize(("text", "names"), [
    ("strategy=none", "needs both"),
    ("us_per_record=2", "needs both"),
    ("strategy=none,us_per_record=fast", "us_per_record"),
    ("strategy=none,us_per_record=0", "us_per_record"),
    ("strategy=lazy,us_per_record=2", "lazy"),
    ("strategy=none,us=2", "bad item"),
    ("strategy=none,strategy=timer,us_per_record=2", "bad item"),
])
def test_a_malformed_knob_is_one_line_before_any_work(monkeypatch, text: str, names: str) -> None:
    with pytest.raises(ValueError, match=names) as caught:
        parse_planted(text)
    assert "\n" not in str(caught.value) and PLANT_ENV in str(caught.value)
    monkeypatch.setenv(PLANT_ENV, text)
    with pytest.raises(PlanError, match=names):
        RunConfig(spec=load_spec("ycsb-a"), backends=("heap",))


def test_a_strategy_with_commas_parses_to_its_label() -> None:
    planted = parse_planted("strategy=incremental(5,false), us_per_record=2.5")
    assert planted.strategy == "incremental(5, false)" and planted.us_per_record == 2.5
