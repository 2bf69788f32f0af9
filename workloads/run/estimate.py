"""How long a run will take and how much disk it needs, estimated before any event is made, and
the bound beyond which the CLI refuses it unless asked (``--allow-long``).

Why: ``statebench run flink-27504 --backend spark-tws`` paced a shipped spec of 1.5
logical days at speed-up 1 - about 36 hours - without a word: no estimate, no ETA, and the
lane wrote 195,000 input files in its first 2 minutes. A run now says up front what it will
take (one line on stdout, always) and is refused, in one line, when that is more than
:data:`MAX_WALL_S` of wall time or more disk than is free.

What is summed: every job the runner will run (``workloads.run.runner.job_order``: a
comparison's warm-up round and every measured round), each as its lane says
(``Lane.job_cost``: a paced job takes at least its span over the speed-up, every job its events
at the lane's conservative rate and a fixed start; the rates and how they were measured are in
``workloads.lanes.cost`` and the lanes' modules), and the engine's own start. Disk: the most
input files one job holds at once in the run's temporary folder (jobs run one after the other
and each removes its folder), and the rows the results will hold; each against what is free
where it goes. The state a scenario keeps is not counted here: it is an upper bound, not a
certainty, and ``workloads.cli.checks.disk_warning`` warns about it.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

from workloads.lanes import LANES
from workloads.lanes.cost import RESULT_ROW_BYTES, JobLoad
from workloads.run.plan import RunConfig, plan_scenarios, spec_time_frame
from workloads.run.runner import job_order

#: Wall time a run may take without ``--allow-long``: a working day's afternoon. The default
#: comparison takes 8-40 minutes here; a run past this bound is a mistake more often than not.
MAX_WALL_S = 6 * 3600.0
#: Wall seconds an engine costs once per run: a local Spark's start and the run's data made and
#: cached (the default comparison: 28 s for Spark's start and the report, 34 s for preparing the
#: data of 5 workloads; docs/guide.md, "Where the time goes"); in-process, a second.
SPARK_START_S = 20.0
SPARK_PREPARE_S = 7.0
IN_PROCESS_START_S = 1.0
#: Task slots of a Spark master that is not local: as many as the run has tasks (a cluster is
#: assumed to run a job's tasks at once).
CLUSTER_SLOTS = 1 << 16


@dataclass(frozen=True)
class Estimate:
    """What a run (or a comparison, or ``ab``'s rounds) will take: ``jobs`` jobs reading
    ``events`` events in all, about ``wall_s`` of wall time of which ``paced_s`` at least is
    spent releasing records on the wall clock, ``input_bytes`` of input files at most at once
    in ``temp_dir`` and ``result_bytes`` of results in ``results_dir``."""

    jobs: int
    events: int
    wall_s: float
    paced_s: float
    input_bytes: float
    result_bytes: float
    temp_dir: str
    results_dir: str
    #: events of each job when every job reads the same input (a ``run``), else None
    events_per_job: int | None = None

    def times(self, count: int) -> Estimate:
        """``count`` of these one after the other (``ab``'s and ``diff --rerun``'s rounds)."""
        return Estimate(self.jobs * count, self.events * count, self.wall_s * count,
                        self.paced_s * count, self.input_bytes, self.result_bytes * count,
                        self.temp_dir, self.results_dir, self.events_per_job)

    def plus(self, other: Estimate) -> Estimate:
        """This and ``other`` one after the other (two sides of an A/B session)."""
        return Estimate(self.jobs + other.jobs, self.events + other.events,
                        self.wall_s + other.wall_s, self.paced_s + other.paced_s,
                        max(self.input_bytes, other.input_bytes),
                        self.result_bytes + other.result_bytes, self.temp_dir,
                        self.results_dir,
                        self.events_per_job if self.events_per_job == other.events_per_job
                        else None)

    def line(self, desc: str) -> str:
        """The line printed up front, e.g. ``statebench: flink-27504: estimate: 1 job of
        2,592,000 events, about 36.0 h of wall time (36.0 h of it paced on the wall clock)
        and 571 MB of disk``."""
        jobs = f"{self.jobs} job{'s' if self.jobs != 1 else ''}"
        events = (f" of {self.events_per_job:,} events" if self.events_per_job is not None
                  else f", {self.events:,} events in all")
        paced = (f" ({duration(self.paced_s)} of it paced on the wall clock)"
                 if self.paced_s >= 1 else "")
        return (f"statebench: {desc}: estimate: {jobs}{events}, about {duration(self.wall_s)} "
                f"of wall time{paced} and {size(self.input_bytes + self.result_bytes)} of "
                "disk")

    def problem(self, bound_s: float = MAX_WALL_S) -> str | None:
        """Why the run should not start without ``--allow-long`` (None: it may): more than
        ``bound_s`` of wall time, or more disk than is free where it goes."""
        if self.wall_s > bound_s:
            paced = self.paced_s > bound_s / 2
            spent = f", {duration(self.paced_s)} of it pacing records on the wall clock" * paced
            return (f"would take about {duration(self.wall_s)} of wall time ({self.jobs} "
                    f"job{'s' if self.jobs != 1 else ''}{spent}), more than the "
                    f"{duration(bound_s)} a run may take without --allow-long; "
                    f"{'raise --time-speedup, ' * paced}lower --events or the repetitions, "
                    "or pass --allow-long to run it anyway")
        for folder, need in self._needs().items():
            free = free_bytes(folder)
            if free is not None and need > free:
                return (f"would write about {size(need)} into {folder}, where {size(free)} "
                        "are free; lower --events, free disk space, or pass --allow-long to "
                        "run it anyway")
        return None

    def _needs(self) -> dict[str, float]:
        """Bytes per filesystem, named by the first folder of it (temp and results folders
        on one disk add up)."""
        needs: dict[str, float] = {}
        devices: dict[int | str, str] = {}
        for folder, need in ((self.temp_dir, self.input_bytes),
                             (self.results_dir, self.result_bytes)):
            key = _device(folder)
            name = devices.setdefault(key, folder)
            needs[name] = needs.get(name, 0.0) + need
        return needs


def duration(seconds: float) -> str:
    """``12 s``, ``8 min``, ``36.0 h``, ``3.2 days``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def size(count: float) -> str:
    """Bytes as ``512 B``, ``2.4 MB``, ``5.3 GB`` (decimal units, as ``disk_warning``)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count:.0f} B"


def _existing(folder: str) -> str:
    """``folder``, or its nearest existing parent (a results folder made later)."""
    path = os.path.abspath(folder)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def _device(folder: str) -> int | str:
    try:
        return os.stat(_existing(folder)).st_dev
    except OSError:
        return folder


def free_bytes(folder: str) -> int | None:
    """Free bytes on ``folder``'s filesystem (None: cannot tell)."""
    try:
        return shutil.disk_usage(_existing(folder)).free
    except OSError:
        return None


def engine_slots(in_process: bool, master: str | None) -> int:
    """Tasks the run's engine runs at once: 1 in-process (one task after the other), the
    cores of ``local[N]``/``local[*]``, the workers' cores of ``local-cluster[n,c,m]``,
    :data:`CLUSTER_SLOTS` for a cluster."""
    if in_process:
        return 1
    text = (master or "local[*]").strip()
    if text == "local":
        return 1
    local = re.fullmatch(r"local\[(\*|\d+)(?:,\s*\d+)?\]", text)
    if local is not None:
        return os.cpu_count() or 1 if local.group(1) == "*" else max(1, int(local.group(1)))
    cluster = re.fullmatch(r"local-cluster\[(\d+),\s*(\d+),\s*\d+\]", text)
    if cluster is not None:
        return max(1, int(cluster.group(1)) * int(cluster.group(2)))
    return CLUSTER_SLOTS


def trace_span_ms(spec: object) -> int | None:
    """A trace's span from its Parquet footer's ``ts`` statistics (integer ms), or None where
    they are not written: its rows are not read before the run."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(str(spec.source.path))  # type: ignore[attr-defined]
        meta = pf.metadata
        names = [meta.schema.column(i).path for i in range(meta.num_columns)]
        index = names.index("ts")
        lows, highs = [], []
        for g in range(meta.num_row_groups):
            stats = meta.row_group(g).column(index).statistics
            if stats is None or not stats.has_min_max or not isinstance(stats.min, int):
                return None
            lows.append(stats.min)
            highs.append(stats.max)
    except (OSError, ValueError, TypeError):
        return None
    return max(highs) - min(lows) + 1 if lows else None


def job_load(cfg: RunConfig, slots: int) -> JobLoad:
    """What every job of ``cfg`` reads (no event is made: the spec's numbers, a trace's
    footer)."""
    from workloads.cli.checks import mean_value_bytes
    from workloads.generator import total_events

    spec = cfg.spec
    frame = spec_time_frame(spec)
    span = frame[1] - frame[0] if frame is not None else trace_span_ms(spec)
    value = mean_value_bytes(spec.values.size, spec.values.type)
    return JobLoad(events=total_events(spec), span_ms=span, slots=slots, value_bytes=value)


def estimate(configs: Sequence[RunConfig], in_process: bool = False, master: str | None = None,
             results_dir: str = ".") -> Estimate:
    """The estimate of running ``configs`` one after the other on one engine (a run is one
    config; a comparison several)."""
    slots = engine_slots(in_process, master)
    jobs = events = rows = 0
    wall = IN_PROCESS_START_S if in_process else SPARK_START_S
    paced = disk = 0.0
    loads: set[int] = set()
    for cfg in configs:
        load = job_load(cfg, slots)
        runnable, _ = plan_scenarios(cfg)
        if not in_process:
            wall += SPARK_PREPARE_S
        costs = {}
        for _, scenario in job_order(runnable, cfg.repetitions, cfg.spec.seed, cfg.warm_up):
            key = (scenario.backend, scenario.strategy)
            if key not in costs:
                costs[key] = LANES[scenario.backend].job_cost(cfg, load, scenario.strategy)
            cost = costs[key]
            jobs += 1
            events += load.events
            wall += cost.wall_s
            paced += cost.paced_s
            disk = max(disk, cost.disk_bytes)
            rows += cost.result_rows
            loads.add(load.events)
    temp = configs[0].local_dir if configs else None
    return Estimate(jobs=jobs, events=events, wall_s=wall, paced_s=paced, input_bytes=disk,
                    result_bytes=rows * RESULT_ROW_BYTES,
                    temp_dir=temp or tempfile.gettempdir(), results_dir=str(results_dir),
                    events_per_job=loads.pop() if len(loads) == 1 and len(configs) == 1
                    else None)

