"""Which engine a backend's lane belongs to, and how the report and the CLI name it.

The engine is asked of the lane registry (``workloads.lanes``: each lane's ``engine``), never
guessed from the lane's name: a test such as ``backend.startswith("flink-")`` once made every
sentence know two engines only, so Spark's lanes were named "Flink's lanes" and a Spark lane
beside statebench's was introduced as "statebench's". Every engine the registry knows gets its
own group and its own name here, whatever their number; a backend no registered lane has (an
older run's lane) is "unregistered", never counted as statebench's or as any engine's.
"""

from __future__ import annotations

from collections.abc import Iterable

from workloads.lanes import ENGINE_TITLES, ENGINES, LANES, EngineTitle

#: statebench's own engine (its Python lanes); every other engine's lanes are its reference.
OWN = "statebench"
#: The engine of a backend no registered lane has.
UNREGISTERED = "unregistered"
_UNREGISTERED_TITLE = EngineTitle("unregistered", "lanes this version of statebench does not know")


def engine_of(backend: str) -> str:
    """The engine of ``backend``'s lane (:data:`workloads.lanes.ENGINES`), or
    :data:`UNREGISTERED` for a backend no registered lane has."""
    found = LANES.get(backend)
    return UNREGISTERED if found is None else found.engine


def engine_title(engine: str) -> EngineTitle:
    """How ``engine`` is named ("Spark") and what its lanes are, from the registry."""
    if engine == UNREGISTERED:
        return _UNREGISTERED_TITLE
    return ENGINE_TITLES.get(engine) or EngineTitle(engine, "lanes")


def possessive(engine: str) -> str:
    """"statebench's", "Flink's", "Spark's": the engine's name as a sentence uses it."""
    name = engine_title(engine).title
    return f"{name}'" if name.endswith("s") else f"{name}'s"


def engine_lanes(engine: str) -> str:
    """"statebench's Python lanes", "Spark's Structured Streaming queries"."""
    if engine == UNREGISTERED:
        return engine_title(engine).lanes
    return f"{possessive(engine)} {engine_title(engine).lanes}"


def engine_heading(engine: str) -> str:
    """A decision table's row-group heading for ``engine``'s backends."""
    found = engine_title(engine)
    if engine == OWN:
        return f"{found.title} ({found.lanes})"
    if engine == UNREGISTERED:
        return f"Other backends ({found.lanes}): not ranked against any engine's"
    return f"{found.title} ({found.lanes}): its own engine, not ranked against the others"


def engine_order(backends: Iterable[str]) -> list[str]:
    """The engines of ``backends`` in page order: the registry's order (statebench's own
    first), unregistered backends last."""
    present = {engine_of(b) for b in backends}
    return [e for e in (*ENGINES, UNREGISTERED) if e in present]


def is_reference(backend: str) -> bool:
    """True for a real engine's lane (Flink's ``flink-heap``, ``flink-sql``, ...; Spark's
    ``spark-tws``, ``spark-sql``), false for statebench's own backends and for a backend the
    registry does not know (no claim is made about it)."""
    return engine_of(backend) not in (OWN, UNREGISTERED)


def backend_label(backend: str) -> str:
    """How tables, charts and findings name a backend: a real engine's lane says whose
    reference it is ("spark-tws · Spark (reference)"), so nobody reads its numbers as
    statebench's."""
    if not is_reference(backend):
        return backend
    return f"{backend} · {engine_title(engine_of(backend)).title} (reference)"
