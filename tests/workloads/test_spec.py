"""Workload specs: shipped specs load, round-trip, and bad specs name the offending field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workloads.ops import CARRIES_VALUE_BY_CODE, OP_DTYPE, OP_NAMES, Op, StateType
from workloads.spec import (
    LatestKeys,
    SessionKeys,
    SpecError,
    WorkloadSpec,
    ZipfianKeys,
    builtin_specs,
    load_spec,
    parse_spec,
)

REQUIRED_SHIPPED = {"ycsb-a", "ycsb-b", "ycsb-f", "sessions-churn", "latest", "nexmark-bids"}


def base() -> dict[str, Any]:
    """A small valid spec to break in one place per test."""
    return {
        "name": "t",
        "seed": 7,
        "keys": {"count": 1000, "distribution": "zipfian", "theta": 0.9},
        "operations": {"value_get": 0.5, "value_update": 0.5},
        "values": {"type": "string", "size": {"distribution": "uniform", "min": 1, "max": 9}},
        "time": {"rate": 1000, "events": 100},
        "state": {"ttl_ms": 100, "strategies": ["none", "incremental(10, true)"]},
        "checkpoints": {"interval_ms": 50, "mode": "incremental"},
    }


def with_change(path: str, value: Any, delete: bool = False) -> dict[str, Any]:
    data = copy.deepcopy(base())
    *parents, leaf = path.split(".")
    target = data
    for part in parents:
        target = target.setdefault(part, {})
    if delete:
        del target[leaf]
    else:
        target[leaf] = value
    return data


# -- ops ---------------------------------------------------------------------------------------


def test_op_codes_are_fixed_and_fit_int8() -> None:
    assert Op.VALUE_GET == 0 and Op.AGGREGATING_ADD == 11
    assert len(OP_NAMES) == 12 and all(int(op) <= np.iinfo(OP_DTYPE).max for op in Op)
    assert Op.from_name("value_rmw") is Op.VALUE_RMW
    assert Op.MAP_ITERATE.spec_name == "map_iterate"
    assert Op.REDUCING_ADD.state_type is StateType.REDUCING
    assert Op.LIST_GET.state_type is StateType.LIST
    assert Op.MAP_PUT.uses_map_key and not Op.MAP_ITERATE.uses_map_key
    assert CARRIES_VALUE_BY_CODE[Op.VALUE_RMW] and not CARRIES_VALUE_BY_CODE[Op.VALUE_CLEAR]
    with pytest.raises(ValueError, match="unknown operation 'value_gett'; expected one of"):
        Op.from_name("value_gett")


# -- shipped specs -----------------------------------------------------------------------------


def test_required_specs_are_shipped() -> None:
    assert set(builtin_specs()) >= REQUIRED_SHIPPED


@pytest.mark.parametrize("name", sorted(builtin_specs()))
def test_shipped_spec_loads_and_round_trips(name: str) -> None:
    spec = load_spec(builtin_specs()[name])
    assert spec.name == name
    assert load_spec(name) == spec  # a bare name finds the shipped file
    data = spec.to_dict()
    assert json.loads(json.dumps(data)) == data  # JSON-able, for run.json
    assert parse_spec(data) == spec
    assert spec.description and spec.state.ttl_ms is not None


def test_defaults_are_filled_in() -> None:
    data = base()
    del data["state"], data["checkpoints"], data["values"]
    spec = parse_spec(data)
    assert spec.state.update_type == "OnCreateAndWrite"
    assert spec.state.visibility == "NeverReturnExpired"
    assert spec.state.time_characteristic == "ProcessingTime"
    assert spec.state.strategies == ("none",) and spec.state.ttl_ms is None
    assert spec.state.map_keys == 10
    assert spec.checkpoints.interval_ms == 0 and spec.checkpoints.mode == "full"
    assert spec.checkpoints.max_in_flight == 8  # a queue of asynchronous phases, every lane
    assert spec.to_dict()["checkpoints"]["max_in_flight"] == 8  # run.json records it
    assert spec.values.type == "long" and spec.values.size.bytes == 8
    assert spec.time.start_ms == 0 and spec.time.max_out_of_orderness_ms == 0
    assert spec.source.kind == "generator"
    # map_keys is recorded where an operation picks a map key, and is no field otherwise
    uses_map = any(op.uses_map_key for op, _ in spec.operations)
    assert ("map_keys" in spec.to_dict()["state"]) == uses_map


def test_parsed_model() -> None:
    spec = parse_spec(base())
    assert isinstance(spec.keys.params, ZipfianKeys) and spec.keys.params.theta == 0.9
    assert spec.proportions == {Op.VALUE_GET: 0.5, Op.VALUE_UPDATE: 0.5}
    # strategies are stored in their canonical text form
    assert spec.state.strategies == ("none", "incremental(10, true)")
    with pytest.raises(AttributeError):
        spec.name = "x"  # type: ignore[misc]


def test_latest_and_sessions_params() -> None:
    latest = parse_spec(with_change("keys", {"count": 500, "distribution": "latest"}))
    assert isinstance(latest.keys.params, LatestKeys)
    assert latest.keys.params.initial_keys == 50  # count // 10
    sessions = parse_spec(
        with_change(
            "keys",
            {
                "distribution": "sessions",
                "start_rate": 100.0,
                "length": {"distribution": "uniform", "min_ms": 1000, "max_ms": 3000},
            },
        )
    )
    params = sessions.keys.params
    assert isinstance(params, SessionKeys) and sessions.keys.count is None
    assert params.concurrent_sessions == 200  # Little's law: 100/s * 2 s


# -- errors name the field -----------------------------------------------------------------------

BAD_SPECS = [
    ("unknown top-level field", with_change("nmae", "x"), "nmae", "unknown field"),
    ("typo in keys", with_change("keys.thetaa", 0.5), "keys.thetaa", "unknown field"),
    ("param of another distribution", with_change("keys.initial_keys", 5),
     "keys.initial_keys", "unknown field"),
    ("unknown distribution", with_change("keys.distribution", "zipf"), "keys.distribution",
     "unknown distribution 'zipf'; expected one of uniform, zipfian, latest, hotspot, "
     "exponential, sessions"),
    ("negative count", with_change("keys.count", -5), "keys.count",
     "must be in 1..4611686018427387904 keys"),
    ("float count", with_change("keys.count", 10.0), "keys.count", "expected an integer"),
    ("theta out of range", with_change("keys.theta", 1.0), "keys.theta", "strictly between"),
    ("bool as number", with_change("time.rate", True), "time.rate", "expected a number"),
    ("string rate", with_change("time.rate", "fast"), "time.rate", "expected a number"),
    ("proportions sum", with_change("operations.value_get", 0.4), "operations",
     "proportions sum to 0.9"),
    ("unknown op", with_change("operations.value_gett", 0.0), "operations.value_gett",
     "unknown operation"),
    ("negative proportion", with_change("operations.value_get", -0.5),
     "operations.value_get", "must be >= 0"),
    ("bad strategy", with_change("state.strategies", ["none", "sometimes"]),
     "state.strategies[1]", "unknown cleanup strategy 'sometimes'"),
    ("bad strategy argument", with_change("state.strategies", ["incremental(0, true)"]),
     "state.strategies[0]", "cleanup_size"),
    ("duplicate strategy", with_change("state.strategies", ["timer", "timer"]),
     "state.strategies[1]", "duplicate"),
    ("strategies without ttl", with_change("state.ttl_ms", None, delete=True),
     "state.strategies", "need state.ttl_ms"),
    ("zero ttl", with_change("state.ttl_ms", 0), "state.ttl_ms",
     "must be in 1..9007199254740992 ms"),
    ("update type", with_change("state.update_type", "OnWrite"), "state.update_type",
     "expected one of OnCreateAndWrite, OnReadAndWrite"),
    ("missing name", with_change("name", None, delete=True), "name", "required"),
    ("missing keys", with_change("keys", None, delete=True), "keys", "required"),
    ("events and duration", with_change("time.duration_ms", 10), "time.events", "exactly one"),
    ("sine amplitude", with_change("time.sine_amplitude", 1.0), "time.sine_amplitude", "< 1"),
    ("sine period", with_change("time.sine_amplitude", 0.5), "time.sine_period_ms", "required"),
    ("long with size", with_change("values", {"size": {"distribution": "constant", "bytes": 4}}),
     "values.size", "8 bytes"),
    ("value type", with_change("values.type", "double"), "values.type", "unknown type"),
    ("uniform size bounds", with_change("values.size", {"distribution": "uniform", "min": 9,
                                                        "max": 3}), "values.size.max", ">= 9"),
    ("pareto needs cap", with_change("values.size", {"distribution": "pareto", "shape": 2,
                                                     "scale": 10}), "values.size.max", "required"),
    ("bad range", with_change("values.range", [5, 1]), "values.range", "min <= max"),
    ("checkpoint mode", with_change("checkpoints.mode", "delta"), "checkpoints.mode",
     "expected one of full, incremental"),
    ("section not a table", with_change("time", 5), "time", "expected a table"),
    ("sessions with count", with_change("keys", {"distribution": "sessions", "count": 5,
                                                 "concurrent": 3}), "keys.count", "never reused"),
    ("sessions without size", with_change("keys", {"distribution": "sessions", "length": {
        "distribution": "constant", "ms": 5}}), "keys.concurrent", "exactly one"),
    ("session length", with_change("keys", {"distribution": "sessions", "concurrent": 3,
                                            "length": {"distribution": "constant", "ms": 0}}),
     "keys.length.ms", "must be in 1..9007199254740992 ms"),
    ("hotspot empty hot set", with_change("keys", {"count": 3, "distribution": "hotspot",
                                                   "hot_data_fraction": 0.2}),
     "keys.hot_data_fraction", "hot set is empty"),
    ("latest initial keys", with_change("keys", {"count": 3, "distribution": "latest",
                                                 "initial_keys": 4}),
     "keys.initial_keys", "must be <= 3"),
    ("trace without path", with_change("source", {"kind": "trace"}), "source.path", "required"),
    ("source kind", with_change("source", {"kind": "kafka"}), "source.kind", "unknown kind"),
    ("map keys", {**with_change("state.map_keys", 0), "operations": {"map_put": 1.0}},
     "state.map_keys",
     "must be in 1..2147483647 map keys"),
    ("no checkpoint in flight", with_change("checkpoints.max_in_flight", 0),
     "checkpoints.max_in_flight", "must be in 1..64 checkpoints"),
    ("too many checkpoints in flight", with_change("checkpoints.max_in_flight", 65),
     "checkpoints.max_in_flight", "must be in 1..64 checkpoints"),
    ("checkpoints in flight not an int", with_change("checkpoints.max_in_flight", 2.5),
     "checkpoints.max_in_flight", "expected an integer"),
    ("checkpoints in flight a bool", with_change("checkpoints.max_in_flight", True),
     "checkpoints.max_in_flight", "expected an integer"),
]


@pytest.mark.parametrize(
    ("data", "field", "fragment"),
    [case[1:] for case in BAD_SPECS],
    ids=[case[0] for case in BAD_SPECS],
)
def test_bad_spec_names_the_field(data: dict[str, Any], field: str, fragment: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(data, source="bad.toml")
    err = info.value
    assert isinstance(err, ValueError)
    assert err.field == field
    assert str(err).startswith(f"{field}: ")
    assert fragment in str(err)
    assert str(err).endswith("(in bad.toml)")


def test_trace_spec_forbids_generator_sections(tmp_path: Path) -> None:
    data = base()
    data["source"] = {"kind": "trace", "path": "x.parquet"}
    with pytest.raises(SpecError, match=r"^keys: not used with source.kind = 'trace'"):
        parse_spec(data)


def test_unknown_distribution_message_is_exact() -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(with_change("keys.distribution", "zipf"))
    assert str(info.value) == (
        "keys.distribution: unknown distribution 'zipf'; expected one of uniform, zipfian, "
        "latest, hotspot, exponential, sessions (in <dict>)"
    )


# -- files -------------------------------------------------------------------------------------


def test_load_spec_reports_toml_errors_and_missing_files(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text('name = "x"\n[keys\n', encoding="utf-8")
    with pytest.raises(SpecError, match="invalid TOML"):
        load_spec(broken)
    with pytest.raises(SpecError, match="not found"):
        load_spec(tmp_path / "nope.toml")


def test_trace_path_is_resolved_next_to_the_spec(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(
        'name = "replay"\n[source]\nkind = "trace"\npath = "events.parquet"\n', encoding="utf-8"
    )
    spec = load_spec(tmp_path / "t.toml")
    assert spec.source.path == str(tmp_path / "events.parquet")
    assert spec.keys is None and spec.time is None and spec.operations is None
    assert parse_spec(spec.to_dict()) == spec


# -- overrides ---------------------------------------------------------------------------------


def test_with_overrides_returns_a_new_validated_spec() -> None:
    spec = parse_spec(base())
    bigger = spec.with_overrides(events=1_000_000, seed=9, key_count=50, keys__theta=0.5)
    assert (bigger.time.events, bigger.seed, bigger.keys.count) == (1_000_000, 9, 50)
    assert bigger.keys.params.theta == 0.5
    assert spec.time.events == 100 and spec.seed == 7  # original untouched
    timed = spec.with_overrides(duration_ms=5_000)
    assert timed.time.duration_ms == 5_000 and timed.time.events is None
    back = timed.with_overrides(events=10)
    assert back.time.events == 10 and back.time.duration_ms is None
    assert spec.with_overrides(strategies=("timer",)).state.strategies == ("timer",)
    assert spec.with_overrides(state__visibility=None).state.visibility == "NeverReturnExpired"


def test_with_overrides_validates() -> None:
    spec = parse_spec(base())
    with pytest.raises(SpecError, match=r"^time\.events: must be in 1\.\.10000000000 events"):
        spec.with_overrides(events=-1)
    with pytest.raises(SpecError, match=r"^state\.strategies\[0\]"):
        spec.with_overrides(strategies=["bogus"])
    with pytest.raises(SpecError, match="unknown override"):
        spec.with_overrides(evnts=5)


def test_spec_is_hashable_and_equality_ignores_origin() -> None:
    a = parse_spec(base(), source="a.toml")
    b = parse_spec(base(), source="b.toml")
    assert a == b and hash(a) == hash(b) and a.origin == "a.toml"
    assert isinstance(a, WorkloadSpec)


# ------------------------------------------------------------------------------------------------
# Documented numeric ranges (workloads.limits; issue 10)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "value", "fragment"), [
    ("time.rate", 0.5, "must be in 1..1e+09 events per logical second"),
    ("time.rate", 1e10, "must be in 1..1e+09 events per logical second"),
    ("time.events", 10**10 + 1, "must be in 1..10000000000 events"),
    ("time.start_ms", -1, "must be in 0..9007199254740992 ms"),
    ("time.max_out_of_orderness_ms", 2**60, "must fit int64 ms"),
    ("keys.count", 2**62 + 1, "key ids are int64"),
    ("checkpoints.interval_ms", 2**62, "must fit int64 ms"),
    ("seed", -1, "must be in 0..9223372036854775807"),
])
def test_numbers_outside_their_documented_range(path: str, value: Any, fragment: str) -> None:
    data = base()
    *parents, leaf = path.split(".")
    target = data
    for part in parents:
        target = target[part]
    target[leaf] = value
    with pytest.raises(SpecError) as info:
        parse_spec(data)
    assert fragment in str(info.value)


def test_range_limits_are_inclusive() -> None:
    from workloads import limits

    data = base()
    data["time"] = {"rate": 1, "events": limits.MAX_EVENTS}
    spec = parse_spec(data)
    assert spec.time is not None and spec.time.events == limits.MAX_EVENTS
    data["time"] = {"rate": limits.MAX_RATE, "events": 1}
    assert parse_spec(data).time.rate == limits.MAX_RATE  # type: ignore[union-attr]


def test_an_exclusive_bound_without_upper_end_is_worded_plainly() -> None:
    data = base()
    data["keys"] = {"distribution": "latest", "count": 100, "insert_rate": 0.0}
    with pytest.raises(SpecError, match=r"keys\.insert_rate: must be in \(0, 1e\+09\]"):
        parse_spec(data)


def test_duration_derived_event_count_is_bounded() -> None:
    with pytest.raises(SpecError, match=r"^time\.duration_ms: .* makes 100000000000 events"):
        parse_spec({**base(), "time": {"rate": 1_000_000, "duration_ms": 100_000_000}})


def test_max_in_flight_reaches_every_lanes_operator_config() -> None:
    """``[checkpoints] max_in_flight`` is parsed, round-trips, and is what the operator config
    of every lane carries (KeyedOperator's pipeline and the Flink lane's EV_CHECKPOINT)."""
    from workloads.run.plan import DataFacts, RunConfig, Scenario, operator_config

    data = base()
    data["checkpoints"]["max_in_flight"] = 3
    spec = parse_spec(data)
    assert spec.checkpoints.max_in_flight == 3
    assert parse_spec(spec.to_dict()) == spec
    assert spec.with_overrides(checkpoints__max_in_flight=1).checkpoints.max_in_flight == 1
    facts = DataFacts(start_ms=0, end_ms=1_000, task_counts=((0, 10),))
    cfg = RunConfig(spec, run_id="t")
    for backend in ("heap", "rocksdb", "flink-heap", "flink-rocksdb"):
        op = operator_config(cfg, Scenario(backend, "none"), 0, facts)
        assert op.checkpoint_max_in_flight == 3
