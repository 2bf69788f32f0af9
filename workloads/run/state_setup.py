"""A task's states and clock from its operator config: the descriptors with the spec's TTL and
exactly one cleanup strategy, their registration with the methods the hot loop binds, and the
TTL clock (shared by statebench's task operator, its restore, the sweep and the real-job check)."""

from collections.abc import Callable
from typing import Any

import backends
from workloads.payloads import state_type
from workloads.run.config import STATE_NAMES, OperatorConfig, paced
from workloads.run.hotloop import StateCalls
from workloads.run.pacing import PacedClock


class SumAggregate(backends.AggregateFunction):
    """Aggregating state's function: the sum of longs, or of payload lengths."""

    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + (value if value.__class__ is int else len(value))

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, acc_a: int, acc_b: int) -> int:
        return acc_a + acc_b


def ttl_config_of(cfg: OperatorConfig) -> backends.StateTtlConfig | None:
    """The spec's TTL settings with exactly the scenario's cleanup strategy turned on."""
    if cfg.ttl_ms is None:
        return None
    T = backends.StateTtlConfig
    builder = (
        T.new_builder(cfg.ttl_ms)
        .set_update_type(T.UpdateType[cfg.update_type])
        .set_state_visibility(T.StateVisibility[cfg.visibility])
        .set_ttl_time_characteristic(T.TtlTimeCharacteristic[cfg.time_characteristic])
    )
    return backends.parse_strategy(cfg.configured_cleanup).configure(builder).build()


def descriptors(cfg: OperatorConfig) -> dict[str, backends.StateDescriptor]:
    """One descriptor per state type the workload uses, TTL enabled when the spec has a TTL."""
    vtype = state_type(cfg.value_type)
    makers: dict[str, Callable[[], backends.StateDescriptor]] = {
        "value": lambda: backends.ValueStateDescriptor("value", vtype),
        "list": lambda: backends.ListStateDescriptor("list", vtype),
        "map": lambda: backends.MapStateDescriptor("map", backends.Types.INT(), vtype),
        "reducing": lambda: backends.ReducingStateDescriptor("reducing", max, vtype),
        "aggregating": lambda: backends.AggregatingStateDescriptor(
            "aggregating", SumAggregate(), backends.Types.LONG()
        ),
    }
    ttl = ttl_config_of(cfg)
    out: dict[str, backends.StateDescriptor] = {}
    for name in STATE_NAMES:
        if name in cfg.state_types:
            desc = makers[name]()
            if ttl is not None:
                desc.enable_time_to_live(ttl)
            out[name] = desc
    return out


def register_states(backend: Any, descs: dict[str, backends.StateDescriptor]) -> StateCalls:
    """Register every descriptor and bind the methods the hot loop calls."""
    calls = StateCalls()
    if "value" in descs:
        s = backend.get_state(descs["value"])
        calls.v_get, calls.v_update, calls.v_clear = s.value, s.update, s.clear
    if "list" in descs:
        s = backend.get_list_state(descs["list"])
        calls.l_add, calls.l_get = s.add, s.get
    if "map" in descs:
        s = backend.get_map_state(descs["map"])
        calls.m_put, calls.m_get, calls.m_items, calls.m_remove = s.put, s.get, s.items, s.remove
    if "reducing" in descs:
        calls.r_add = backend.get_reducing_state(descs["reducing"]).add
    if "aggregating" in descs:
        calls.a_add = backend.get_aggregating_state(descs["aggregating"]).add
    return calls


def make_clock(cfg: OperatorConfig) -> Any:
    """ProcessingTime: the paced wall-driven clock (every strategy alike); EventTime: a manual
    clock the backend's event clock replaces for TTL."""
    if paced(cfg.time_characteristic):
        return PacedClock(cfg.time_speedup, start_ms=cfg.start_ms)
    return backends.ManualClock(cfg.start_ms)
