"""How a raw state lays out its data: the RawStateSpec (a physical layout, not a workload spec)."""

from __future__ import annotations

from dataclasses import dataclass

from backends.types import TypeInformation


@dataclass(frozen=True)
class RawStateSpec:
    """Physical shape of one state. Two registrations with equal specs share their data as is;
    a differing spec (TTL switched on/off, compaction-filter placement) means migrating entries."""

    name: str
    kind: str  # value | list | map | reducing | aggregating
    value_type: TypeInformation
    key_type: TypeInformation | None = None  # map user keys
    ttl_layout: bool = False  # stored units carry a last-access timestamp
    native_ttl_ms: int | None = None  # RocksDB: lives in a TTL DB of its own (0: never expires)
    native_ttl_speedup: float = 1.0  # clock ms per wall ms (ScaledClock) for native TTL

    @property
    def shape(self) -> str:
        """Reducing and aggregating states are stored as value states."""
        return "value" if self.kind in ("value", "reducing", "aggregating") else self.kind
