"""Every lane a run can name (``--backend``), registered here and nowhere else: statebench's own
backends, Flink's keyed backends, the Flink SQL jobs and Spark's streaming queries. A lane is one
object behind :class:`workloads.lanes.base.Lane`: the planner asks it whether it runs a spec and
each strategy (and why not) and what must hold before any work; the runner asks it to run a job
(or the engine to feed its tasks). Adding a lane is adding a module to this package and its
lanes to :data:`LANES`.
"""

from __future__ import annotations

from workloads.lanes.base import ENGINE_TITLES, ENGINES, EngineTitle, Lane, RunView
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

__all__ = ["ENGINES", "ENGINE_TITLES", "LANES", "RUN_BACKENDS", "EngineTitle", "Lane", "RunView",
           "engine_of", "lane"]


def lane(name: str) -> Lane:
    """The lane named ``name``; ValueError names the known ones."""
    found = LANES.get(name)
    if found is None:
        raise ValueError(f"unknown backend '{name}'; expected one of {', '.join(RUN_BACKENDS)}")
    return found


def engine_of(name: str) -> str:
    """The engine of lane ``name`` (:data:`workloads.lanes.base.ENGINES`)."""
    return lane(name).engine
