"""Issue 31, category 5: nonsense that was accepted and ignored is refused in one line.

* A field that does not apply to the workload (another operator kind's parameter, ``[values]``
  or ``state.map_keys`` with ``[operator]``, ``map_keys`` without an operation that picks a map
  key) is an error, as an unknown field is: the spec's own rule.
* The windows of one sliding-window record (``window_ms / slide_ms``) are bounded.
* ``auction_duration_ms = [5, 1]`` says what is wrong (the bounds' order), not "got an array".
* A run that would measure nothing - every scenario not applicable, or no row reaching the
  operator - says so in one line and exits 2 before any work.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from workloads import limits
from workloads.cli import main
from workloads.spec import SpecError, load_spec, parse_spec

#: What each kind's emulation reads (workloads/operators/*): the fields a kind accepts.
OPERATOR_FIELDS = {
    "tumbling_window": ("window_ms", "agg", "group_by"),
    "sliding_window": ("window_ms", "slide_ms", "agg", "group_by"),
    "session_window": ("gap_ms", "agg", "group_by"),
    "interval_join": ("lower_ms", "upper_ms", "category"),
    "regular_join": ("category",),
    "group_agg": ("agg", "group_by"),
    "dedup": (),
    "topn": ("top_n", "group_by"),
}

PARAMS = {"window_ms": 60_000, "slide_ms": 1_000, "gap_ms": 500, "lower_ms": -5,
          "upper_ms": 5, "top_n": 2, "category": 11, "agg": "sum", "group_by": "bidder"}


def operator_doc(kind: str, **fields: Any) -> dict[str, Any]:
    """A valid operator spec of ``kind`` as a dict, with ``fields`` in its [operator] table."""
    return {"name": "op", "operator": {"kind": kind, **fields},
            "time": {"rate": 10_000, "events": 1_000},
            "state": {"ttl_ms": 1_000, "time_characteristic": "EventTime"}}


CASES = [(kind, name) for kind in OPERATOR_FIELDS for name in PARAMS
         if name not in OPERATOR_FIELDS[kind]]


@pytest.mark.parametrize("kind,name", CASES)
def test_another_kinds_field_is_refused(kind: str, name: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(operator_doc(kind, **{name: PARAMS[name]}), source="s.toml")
    message = str(info.value)
    assert message.startswith(f"operator.{name}: not used by kind '{kind}'")
    assert "\n" not in message and message.endswith("(in s.toml)")


@pytest.mark.parametrize("kind", sorted(OPERATOR_FIELDS))
def test_a_kinds_own_fields_are_taken_and_recorded_alone(kind: str) -> None:
    own = {name: PARAMS[name] for name in OPERATOR_FIELDS[kind]}
    if kind == "sliding_window":
        own["window_ms"] = 10_000
    spec = parse_spec(operator_doc(kind, **own))
    assert spec.operator is not None
    for name, value in own.items():
        assert getattr(spec.operator, name) == value
    recorded = spec.to_dict()
    assert set(recorded["operator"]) == {"kind", "query", *own}
    assert "values" not in recorded and "map_keys" not in recorded["state"]
    assert parse_spec(recorded) == spec  # what run.json records parses back


def test_values_and_map_keys_do_not_go_with_an_operator() -> None:
    doc = operator_doc("dedup")
    with pytest.raises(SpecError, match=r"^values: not used with an \[operator\]"):
        parse_spec({**doc, "values": {"type": "long"}})
    state = {**doc["state"], "map_keys": 4}
    with pytest.raises(SpecError, match=r"^state\.map_keys: not used with an \[operator\]"):
        parse_spec({**doc, "state": state})


def test_map_keys_needs_an_operation_that_picks_a_map_key() -> None:
    doc = {"name": "kv", "keys": {"distribution": "uniform", "count": 10},
           "operations": {"value_get": 0.5, "map_iterate": 0.5},
           "time": {"rate": 1000, "events": 100}, "state": {"map_keys": 4}}
    with pytest.raises(SpecError, match=r"^state\.map_keys: not used: no operation"):
        parse_spec(doc)
    with_map = copy.deepcopy(doc)
    with_map["operations"] = {"value_get": 0.5, "map_put": 0.5}
    assert parse_spec(with_map).state.map_keys == 4
    assert "map_keys" not in parse_spec({**doc, "state": {}}).to_dict()["state"]


def test_switching_the_kind_drops_the_old_kinds_parameters() -> None:
    q7 = load_spec("nexmark-q7-window")
    dedup = q7.with_overrides(operator__kind="dedup")
    assert dedup.operator is not None and dedup.operator.kind == "dedup"
    assert set(dedup.to_dict()["operator"]) == {"kind", "query"}
    with pytest.raises(SpecError, match=r"^operator\.top_n: not used by kind 'dedup'"):
        q7.with_overrides(operator__kind="dedup", operator__top_n=3)


def test_sliding_windows_per_record_are_bounded() -> None:
    top = getattr(limits, "MAX_SLIDING_WINDOWS", 10_000)
    ok = parse_spec(operator_doc("sliding_window", window_ms=top, slide_ms=1))
    assert ok.operator is not None and ok.operator.window_ms == top
    with pytest.raises(SpecError) as info:
        parse_spec(operator_doc("sliding_window", window_ms=10**7, slide_ms=1))
    message = str(info.value)
    assert message.startswith("operator.slide_ms: window_ms / slide_ms = 10000000 / 1 puts "
                              f"each bid in 10000000 windows; at most {top}")


@pytest.mark.parametrize("value,fragment", [
    ([5, 1], "lower bound 5 is above upper bound 1"),
    ([0, 10], "need 1 <= lo <= hi"),
    ([1, 2, 3], "expected [lo, hi] (two integers), got an array of 3 items"),
    ([1, "x"], "hi must be an integer, got str 'x'"),
    ("5..1", "expected [lo, hi] (two integers), got str '5..1'"),
])
def test_auction_duration_says_what_is_wrong(value: Any, fragment: str) -> None:
    doc = {**operator_doc("dedup"), "nexmark": {"auction_duration_ms": value}}
    with pytest.raises(SpecError) as info:
        parse_spec(doc)
    assert str(info.value).startswith("nexmark.auction_duration_ms: ")
    assert fragment in str(info.value)


def _run(argv: list[str], tmp_path: Path, capsys: Any) -> tuple[int, str]:
    results = tmp_path / "results"
    code = main(["run", *argv, "--in-process", "--no-report", "--results-dir", str(results)])
    err = capsys.readouterr().err
    assert not results.exists() or not any(results.iterdir())  # no run folder was written
    return code, err


def test_a_run_of_no_applicable_scenario_is_refused_before_any_work(tmp_path: Path,
                                                                    capsys: Any) -> None:
    code, err = _run(["ycsb-f", "--backend", "flink-forst-async"], tmp_path, capsys)
    assert code == 2
    assert err.startswith("statebench: error: ycsb-f: no scenario of the run is applicable")
    assert err.count("\n") == 1 and "flink-forst-async timer:" in err


@pytest.mark.parametrize("name,events", [("nexmark-q18-dedup", 1), ("nexmark-q18-dedup", 4),
                                         ("nexmark-q20-join", 1)])
def test_a_run_in_which_no_row_reaches_the_operator_is_refused(name: str, events: int,
                                                               tmp_path: Path,
                                                               capsys: Any) -> None:
    code, err = _run([name, "--events", str(events), "--backend", "heap"], tmp_path, capsys)
    assert code == 2 and err.count("\n") == 1
    assert f"none of its {events} events" in err and "no row would reach the operator" in err


def test_the_smallest_run_with_a_bid_still_runs(tmp_path: Path, capsys: Any) -> None:
    from workloads.operators.input import input_rows_bound

    spec = load_spec("nexmark-q18-dedup")
    assert [input_rows_bound(spec.with_overrides(events=n)) for n in (4, 5, 50, 55)] == \
        [0, 1, 46, 47]
    agg = load_spec("nexmark-q4-agg").with_overrides(operator__group_by="category")
    assert [input_rows_bound(agg.with_overrides(events=n)) for n in (1, 2, 4, 50)] == \
        [0, 1, 3, 3]
    code = main(["run", "nexmark-q18-dedup", "--events", "5", "--backend", "heap", "--strategy",
                 "none", "--in-process", "--no-report", "--no-latency",
                 "--results-dir", str(tmp_path / "results")])
    assert code == 0


def test_the_spec_reads_the_fields_listed_here() -> None:
    from workloads import spec

    assert spec.OPERATOR_FIELDS == OPERATOR_FIELDS


def test_a_sine_period_without_a_sine_is_refused() -> None:
    doc = {"name": "kv", "keys": {"distribution": "uniform", "count": 10},
           "operations": {"value_update": 1.0},
           "time": {"rate": 1000, "events": 100, "sine_period_ms": 500}}
    with pytest.raises(SpecError, match=r"^time\.sine_period_ms: not used: the rate is "
                                        r"constant"):
        parse_spec(doc)
    doc["time"]["sine_amplitude"] = 0.5
    assert parse_spec(doc).time.sine_period_ms == 500


@pytest.mark.parametrize("argv,fragment", [
    (["ycsb-f", "--backend", "flink-forst-async"], "no scenario of the run is applicable"),
    (["ycsb-a", "nexmark-q18-dedup", "--events", "1", "--backend", "heap"],
     "nexmark-q18-dedup: none of its 1 events"),
])
def test_a_comparison_that_would_measure_nothing_is_refused(argv: list[str], fragment: str,
                                                            tmp_path: Path,
                                                            capsys: Any) -> None:
    results = tmp_path / "results"
    code = main(["compare", *argv, "--in-process", "--results-dir", str(results)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and fragment in err, err
    assert not results.exists() or not any(results.iterdir())
