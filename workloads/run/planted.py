"""A planted effect: a known cost per record added to one strategy (a test-only knob).

Why: a decision rule is only worth what it finds. With ``STATEBENCH_PLANT_COST`` set, every
record of one strategy on statebench's own key-value operator (``heap`` and ``rocksdb``) costs
``us_per_record`` microseconds more, of CPU time spent spinning inside the record loop, so a
real comparison has one strategy that is truly slower by a factor the test computes from the
measured per-record time (tests/runner/test_planted_effect.py). It is never on by default, is
refused in one line when malformed, and run.json records it (``config.planted_cost``) when on.

The loop pays nothing when the knob is off: the cost wraps the loop's ``set_key`` only for the
planted strategy's operator (``keyed_operator.KeyedOperator._make_loop``). The operator reads
the variable itself, so a Spark run needs it set before the session starts (the CLI's is).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PLANT_ENV = "STATEBENCH_PLANT_COST"
_FORM = 'expected e.g. "strategy=incremental(5, false),us_per_record=2"'


@dataclass(frozen=True)
class PlantedCost:
    """``us_per_record`` microseconds more per record of scenarios whose strategy is
    ``strategy`` (its canonical label)."""

    strategy: str
    us_per_record: float

    def as_dict(self) -> dict[str, Any]:
        return {"env": PLANT_ENV, "strategy": self.strategy,
                "us_per_record": self.us_per_record}


def _fields(text: str) -> dict[str, str]:
    """``k=v`` items split at the commas outside parentheses."""
    items: list[str] = []
    depth, current = 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += ch
    items.append(current)
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or key not in ("strategy", "us_per_record") or key in out:
            raise ValueError(f"{PLANT_ENV}={text!r}: bad item {item.strip()!r}; {_FORM}")
        out[key] = value.strip()
    return out


def parse_planted(text: str) -> PlantedCost:
    """The knob's value, checked (ValueError: one line naming the problem)."""
    import backends

    fields = _fields(text)
    if set(fields) != {"strategy", "us_per_record"}:
        raise ValueError(f"{PLANT_ENV}={text!r}: needs both strategy and us_per_record; {_FORM}")
    try:
        label = backends.parse_strategy(fields["strategy"]).label
    except ValueError as exc:
        raise ValueError(f"{PLANT_ENV}: {exc}") from None
    try:
        us = float(fields["us_per_record"])
    except ValueError:
        us = -1.0
    if not 0 < us <= 1_000_000:
        raise ValueError(f"{PLANT_ENV}={text!r}: us_per_record must be a number in (0, 1e6]")
    return PlantedCost(label, us)


def planted_cost() -> PlantedCost | None:
    """The planted cost the environment asks for (None: the knob is off, the default)."""
    text = os.environ.get(PLANT_ENV)
    if text is None or not text.strip():
        return None
    return parse_planted(text)


def with_planted_cost(strategy: str, set_key: Callable[[Any], None]
                      ) -> Callable[[Any], None]:
    """``set_key``, or when the knob plants a cost on ``strategy``, ``set_key`` followed by a
    spin until this thread has used ``us_per_record`` of CPU time since the call began.

    Why CPU time, not the wall clock: the cost must behave as a strategy's own work does. On a
    shared machine a task gets a share of a core, so its records' wall time is their CPU time
    over that share; a spin on the wall clock would cost the same wall time at any share and
    read as a different factor at every load. A sleep would not be busy at all."""
    planted = planted_cost()
    if planted is None or planted.strategy != strategy:
        return set_key
    ns = round(planted.us_per_record * 1000)
    clock = time.thread_time_ns

    def planted_set_key(key: Any) -> None:
        end = clock() + ns
        set_key(key)
        while clock() < end:
            pass

    return planted_set_key
