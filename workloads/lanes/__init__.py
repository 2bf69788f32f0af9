"""Every lane a run can name (``--backend``), registered here and nowhere else: statebench's own
backends, Flink's keyed backends, the Flink SQL jobs and Spark's streaming queries. A lane is one
object behind :class:`workloads.lanes.base.Lane`: the planner asks it whether it runs a spec and
each strategy (and why not) and what must hold before any work; the runner asks it to run a job
(or the engine to feed its tasks). Adding a lane is adding a module to this package and its
lanes to :data:`LANES`.
"""

from __future__ import annotations

from workloads.lanes.base import (
    ENGINE_TITLES,
    ENGINES,
    FLINK_ENGINES,
    FLINK_SQL,
    EngineTitle,
    Lane,
    RunView,
)
from workloads.lanes.flink import FLINK_LANES
from workloads.lanes.flink_sql import FLINK_SQL_LANES
from workloads.lanes.spark_sql import SPARK_SQL_LANES
from workloads.lanes.spark_tws import SPARK_TWS_LANES
from workloads.lanes.statebench import STATEBENCH_LANES

#: Backend name -> its lane, in the order ``--help`` lists them.
LANES: dict[str, Lane] = {lane.name: lane for lane in (*STATEBENCH_LANES, *FLINK_LANES,
                                                       *FLINK_SQL_LANES, *SPARK_TWS_LANES,
                                                       *SPARK_SQL_LANES)}
#: Every backend a run accepts.
RUN_BACKENDS: tuple[str, ...] = tuple(LANES)

__all__ = ["ENGINES", "ENGINE_TITLES", "FLINK_ENGINES", "FLINK_SQL", "LANES", "RUN_BACKENDS",
           "EngineTitle", "Lane", "RunView", "engine_of", "lane", "register_lane", "runs_on_flink",
           "unregister_lane"]


def lane(name: str) -> Lane:
    """The lane named ``name``; ValueError names the known ones."""
    found = LANES.get(name)
    if found is None:
        raise ValueError(f"unknown backend '{name}'; expected one of {', '.join(RUN_BACKENDS)}")
    return found


def engine_of(name: str) -> str:
    """The engine of lane ``name`` (:data:`workloads.lanes.base.ENGINES`)."""
    return lane(name).engine


def runs_on_flink(name: str) -> bool:
    """Whether backend ``name`` is a lane run by Flink (:data:`FLINK_ENGINES`); False for a
    name no lane has."""
    found = LANES.get(name)
    return found is not None and found.engine in FLINK_ENGINES


def register_lane(found: Lane) -> Lane:
    """Add a lane defined outside this package (a test's throwaway lane); ValueError for a
    name taken. :data:`RUN_BACKENDS` keeps the lanes of the package (``--help``'s list)."""
    if found.name in LANES:
        raise ValueError(f"lane '{found.name}' is registered already")
    LANES[found.name] = found
    return found


def unregister_lane(name: str) -> None:
    """Remove a lane :func:`register_lane` added; the package's own stay."""
    if name in RUN_BACKENDS:
        raise ValueError(f"lane '{name}' is one of the package's")
    LANES.pop(name, None)
