"""Everything a TTL state needs besides its raw storage, derived once from StateTtlConfig."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from backends.cleanup.counters import CleanupCounters
from backends.ttl_config import StateTtlConfig


@dataclass
class TtlContext:
    """Config-derived fields read on every access; kept flat for the hot path."""

    config: StateTtlConfig
    now: Callable[[], int]  # the TTL clock: processing-time clock or the record's event time
    counters: CleanupCounters
    on_access: Callable[[], None] | None = None  # incremental cleanup trigger, if any
    timers: Any = None  # ExpiryIndex, if timer cleanup is on

    @property
    def ttl(self) -> int:
        return self.config.get_ttl()

    @property
    def refresh_on_read(self) -> bool:
        return self.config.get_update_type() is StateTtlConfig.UpdateType.OnReadAndWrite

    @property
    def return_expired(self) -> bool:
        return (
            self.config.get_state_visibility()
            is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
        )
