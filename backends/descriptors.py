"""State descriptors (PyFlink's names): what a state is called, its type, and its TTL."""

from __future__ import annotations

from typing import Any

from backends.functions import as_reduce_callable, check_aggregate_function
from backends.ttl_config import StateTtlConfig
from backends.types import TypeInformation

VALUE, LIST, MAP, REDUCING, AGGREGATING = "value", "list", "map", "reducing", "aggregating"


def _check_type(type_info: Any, what: str) -> TypeInformation:
    if not isinstance(type_info, TypeInformation):
        raise TypeError(f"{what} must be a backends.Types.*() type, got {type_info!r}")
    return type_info


class StateDescriptor:
    """Common part: name, kind and optional TTL config."""

    kind = ""

    def __init__(self, name: str, type_info: TypeInformation) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"state name must be a non-empty string, got {name!r}")
        self.name = name
        self.type_info = _check_type(type_info, f"type of state '{name}'")
        self.ttl_config: StateTtlConfig | None = None

    def get_name(self) -> str:
        return self.name

    def enable_time_to_live(self, ttl_config: StateTtlConfig) -> None:
        if not isinstance(ttl_config, StateTtlConfig):
            raise TypeError(f"enable_time_to_live expects a StateTtlConfig, got {ttl_config!r}")
        self.ttl_config = ttl_config

    def get_ttl_config(self) -> StateTtlConfig | None:
        return self.ttl_config

    @property
    def ttl_enabled(self) -> bool:
        return self.ttl_config is not None and self.ttl_config.is_enabled()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {self.type_info!r})"


class ValueStateDescriptor(StateDescriptor):
    kind = VALUE

    def __init__(self, name: str, value_type_info: TypeInformation) -> None:
        super().__init__(name, value_type_info)


class ListStateDescriptor(StateDescriptor):
    kind = LIST

    def __init__(self, name: str, elem_type_info: TypeInformation) -> None:
        super().__init__(name, elem_type_info)
        self.element_type_info = self.type_info


class MapStateDescriptor(StateDescriptor):
    kind = MAP

    def __init__(
        self, name: str, key_type_info: TypeInformation, value_type_info: TypeInformation
    ) -> None:
        super().__init__(name, value_type_info)
        self.key_type_info = _check_type(key_type_info, f"map key type of state '{name}'")
        self.value_type_info = self.type_info

    def __repr__(self) -> str:
        return f"MapStateDescriptor({self.name!r}, {self.key_type_info!r}, {self.type_info!r})"


class ReducingStateDescriptor(StateDescriptor):
    kind = REDUCING

    def __init__(self, name: str, reduce_function: Any, type_info: TypeInformation) -> None:
        super().__init__(name, type_info)
        self.reduce_function = reduce_function
        self.reduce = as_reduce_callable(reduce_function)


class AggregatingStateDescriptor(StateDescriptor):
    kind = AGGREGATING

    def __init__(self, name: str, agg_function: Any, state_type_info: TypeInformation) -> None:
        super().__init__(name, state_type_info)
        self.agg_function = check_aggregate_function(agg_function)
