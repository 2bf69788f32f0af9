"""What a cleanup strategy is (:class:`Strategy`): the object ``backends.strategies`` registers,
apart from the registry so that a strategy's own module can define one and the registry import
it (a new strategy: its module and one registration).

A strategy is what Flink's ``StateTtlConfig.CleanupStrategies`` holds one of: a name, its
parameters and their limits (:class:`Param`), how it turns itself on in a StateTtlConfig
builder (background defaults off, only its own mechanism on), what a statebench backend must
offer to run it (``requires``: a capability below, which ``backends.storage.registry``'s
backends offer, and why not without it), its Flink configuration (:class:`FlinkCleanup`: the
Flink backends that skip it and Flink's reason; a strategy without one is refused on every
Flink lane, never run there as ``none``), the engine it belongs to alone (Spark's own expiry),
whether it runs without a TTL, and its counter and report name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from backends.ttl_config import StateTtlConfig

# ------------------------------------------------------------------ what a backend or run offers
#: A statebench backend that can walk its entries in memory (incremental cleanup's iterator).
ENTRY_ITERATOR = "entry_iterator"
#: A statebench backend that compacts its files (where a compaction filter runs).
COMPACTIONS = "compactions"
#: A run whose TTL clock is driven by the wall clock (what RocksDB's TTL compaction reads).
WALL_CLOCK = "wall_clock"


@dataclass(frozen=True)
class Param:
    """One parameter of a strategy's text form: an int (at least ``minimum``) or a bool.
    ``default`` fills it when a shorter text leaves it out; None leaves it out of the strategy
    too (and every parameter after it). ``knob`` is its name in a sweep (None: not swept)."""

    name: str
    type: type = int
    default: int | bool | None = None
    minimum: int = 0
    knob: str | None = None

    def parse(self, text: str, strategy: str) -> int | bool:
        what = f"{strategy} {self.name}"
        if self.type is bool:
            low = text.strip().lower()
            if low in ("true", "1", "yes"):
                return True
            if low in ("false", "0", "no"):
                return False
            raise ValueError(f"{what}: expected true or false, got '{text}'")
        try:
            val = int(text.strip())
        except ValueError:
            raise ValueError(f"{what}: expected an integer, got '{text}'") from None
        if val < self.minimum:
            raise ValueError(f"{what}: must be >= {self.minimum}, got {val}")
        return val


@dataclass(frozen=True)
class FlinkCleanup:
    """A strategy as Flink's StateTtlConfig builder has it: the Flink backend kinds
    (``backends.flink.lanes.LANE_KINDS``' values) that skip or refuse it, each with Flink's
    reason. The worker encodes it from the built StateTtlConfig (``backends.flink.register``)."""

    skipped_on: Mapping[str, str] = field(default_factory=dict)


def _no_flink_reason(name: str) -> str:
    return (f"'{name}' is statebench's own cleanup strategy with no Flink configuration "
            "(StateTtlConfig has no such cleanup), so it has no Flink lane")


@dataclass(frozen=True)
class Strategy:
    """One registered cleanup strategy (see the module's docstring)."""

    name: str
    #: one line for the docs and the report: what it does
    doc: str
    params: tuple[Param, ...] = ()
    #: turns it, and only it, on in a builder whose background defaults are off
    build: Callable[[StateTtlConfig.Builder, tuple], Any] | None = None
    #: the engine whose own state expiry it is (None: Flink's TTL cleanup, which statebench's
    #: and Flink's lanes share)
    engine: str | None = None
    #: whether it runs without a TTL
    ttl_free: bool = False
    #: capability a statebench backend or run needs (ENTRY_ITERATOR, COMPACTIONS, WALL_CLOCK)
    #: -> why not without it ("{backend}" is the backend's title)
    requires: Mapping[str, str] = field(default_factory=dict)
    #: whether its cleanup reads the wall clock (its ProcessingTime scenarios run on it)
    reads_wall_clock: bool = False
    #: its Flink configuration; None: refused on every Flink lane with ``flink_refusal``
    flink: FlinkCleanup | None = None
    flink_refusal: str | None = None
    #: its counter in ``backends.cleanup.counters.CleanupCounters`` and the report's name for it
    mechanism: str | None = None
    title: str = ""

    def parse_args(self, parts: list[str]) -> tuple:
        """Its arguments from the text form's comma-separated parts, defaults filled."""
        if len(parts) > len(self.params):
            if not self.params:
                raise ValueError(f"{self.name} takes no arguments")
            raise ValueError(
                f"{self.name} takes ({', '.join(p.name for p in self.params)})")
        args: list[Any] = [p.parse(text, self.name) for p, text in zip(self.params, parts)]
        for param in self.params[len(parts):]:
            if param.default is None:
                break
            args.append(param.default)
        return tuple(args)

    @property
    def cleans_in_compactions(self) -> bool:
        """Whether its cleanup runs inside a backend's compactions (its counts then move with
        when background compactions ran; on RocksDB it needs a TTL-mode DB)."""
        return COMPACTIONS in self.requires

    @property
    def knobs(self) -> tuple[str, ...]:
        """The parameters a sweep can vary, by their knob names."""
        return tuple(p.knob for p in self.params if p.knob is not None)

    def knob_param(self, knob: str) -> Param:
        """The parameter a sweep's ``knob`` varies."""
        return next(p for p in self.params if p.knob == knob)

    def knob_args(self, knob: str, value: int) -> tuple:
        """Its arguments with knob ``knob`` at ``value`` and its other parameters at their
        defaults (those before it filled, those after it only when they have one)."""
        index = next(i for i, p in enumerate(self.params) if p.knob == knob)
        args: list[Any] = [p.default for p in self.params[:index]]
        param = self.params[index]
        args.append(bool(value) if param.type is bool else value)
        for later in self.params[index + 1:]:
            if later.default is None:
                break
            args.append(later.default)
        return tuple(args)

    def statebench_reason(self, capabilities: frozenset[str], backend: str) -> str | None:
        """Why a statebench backend titled ``backend`` offering ``capabilities`` (its own and
        the run's, e.g. WALL_CLOCK) cannot run it (None: it can)."""
        for needed, reason in self.requires.items():
            if needed not in capabilities:
                return reason.format(backend=backend)
        return None

    @property
    def flink_refused(self) -> str | None:
        """Why no Flink backend runs it (None: it has a Flink configuration)."""
        if self.flink is not None:
            return None
        return self.flink_refusal or _no_flink_reason(self.name)

    def flink_reason(self, flink_kind: str) -> str | None:
        """Why Flink's backend of ``flink_kind`` cannot run it (None: it can)."""
        if self.flink is None:
            return self.flink_refused
        return self.flink.skipped_on.get(flink_kind)

    def foreign_reason(self, engine: str) -> str | None:
        """Why a lane of ``engine`` cannot run it when it is another engine's own (Spark's
        ``spark_ttl`` on a Flink lane), else None."""
        if self.engine is None or self.engine == engine:
            return None
        return (f"'{self.name}' is {self.engine.capitalize()}'s own state expiry; it runs on "
                f"{self.engine}'s lanes only")
