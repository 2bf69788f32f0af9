"""A TTL swept over each window kind (q7 tumbling, q5 sliding, q11 session) and the interval
join shows what Flink shows, on every lane: the TTL changes nothing the operator emits or keeps
(Flink registers their state without a TTL: docs/operators.md, "Which operators Flink's state
TTL reaches"), so the curve is flat; the same sweep of q20's join, whose state Flink's TTL
reaches, is not (the flatness check can fail).

Which lanes run a TTL sweep (``--sweep "ttl(ms=...)"``) of these kinds: ``heap`` and
``rocksdb`` (the emulation, each TTL with the ``timer`` cleanup, against its replay without
TTL), ``flink-heap`` and ``flink-rocksdb`` (Flink never built timer cleanup: each TTL with
Flink's default background cleanup of the backend, ``Lane.ttl_sweep_cleanup``) and
``flink-sql``, ``flink-sql-heap`` (the real SQL job at ``table.exec.state.ttl`` = each TTL). The
Spark lanes refuse the sweep's scenarios, each in one line: ``spark-sql`` (Spark's built-in
operators have no state TTL), ``spark-tws`` (key-value specs only).

One in-process run per workload (few events, the two TTLs), made by the first test that asks
for it and kept for the module; the report is read from its folder. The real SQL job's side of
the same claim (a TTL changes nothing a window or the interval join emits, on HashMap and
RocksDB, every job in one JVM) is ``tests/flink/test_sql_kinds.py``'s: through the lanes each
TTL would start a JVM of its own (about 20 s each), so the SQL lanes are planned here, not run.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from workloads.report.load import load_run
from workloads.report.render import report_html
from workloads.report.ttl_curve import flat_curve, lane_moves
from workloads.run.compare import comparison_configs, run_comparison, write_comparison
from workloads.run.plan import RunConfig, plan_scenarios
from workloads.run.sweep import parse_sweep
from workloads.spec import load_spec

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("sql_job_built")]

#: The kinds Flink's state TTL does not reach, by shipped spec.
WINDOWS = ("nexmark-q7-window", "nexmark-q5-sliding", "nexmark-q11-session",
           "nexmark-interval-join")
#: A kind it reaches, swept alike: its curve must move.
CONTRAST = "nexmark-q20-join"
#: A TTL far shorter than every window, session gap and join bound, and one nothing reaches.
SWEEP = parse_sweep("ttl(ms=20,100000)")
EVENTS = 4_000
#: The lanes run here; the SQL lanes are planned (they take the sweep) and run elsewhere.
RUN_THE_SWEEP = ("heap", "rocksdb", "flink-heap", "flink-rocksdb")
TAKE_THE_SWEEP = (*RUN_THE_SWEEP, "flink-sql", "flink-sql-heap")
#: Lane -> what its one-line refusal of a sweep scenario says is missing.
REFUSE_THE_SWEEP = {
    "spark-sql": "no state TTL",
    "spark-tws": "runs key-value specs",
}
#: Lanes whose live entries are counted exactly (the SQL job has RocksDB's estimate only).
EXACT_ENTRIES = ("heap", "rocksdb")


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """Workload -> its run folder, swept on the lanes that run it (run once, on first ask)."""
    folders: dict[str, Path] = {}

    def run(name: str) -> Path:
        if name not in folders:
            configs = comparison_configs(
                [load_spec(name).with_overrides(events=EVENTS)], backends=RUN_THE_SWEEP,
                repetitions=1, measure_latency=False, sweep=SWEEP, warm_up=False)
            folders[name] = write_comparison(run_comparison(configs, in_process=True),
                                             tmp_path_factory.mktemp(name))
        return folders[name]

    return run


def per_ttl(folder: Path, backend: str, metric: str) -> dict[int, float]:
    """Swept TTL -> the job total of ``metric`` (repetition 0); for a series, its peak."""
    rows = pq.read_table(folder / "rows.parquet").to_pylist()
    out: dict[int, float] = {}
    for label, ttl in zip(SWEEP.labels, SWEEP.values):
        values = [r["value"] for r in rows
                  if (r["backend"], r["strategy"], r["metric"], r["task"])
                  == (backend, label, metric, -1) and r["step"] >= 0]
        if values:
            out[ttl] = max(values)
    return out


@pytest.mark.parametrize("name", (*WINDOWS, CONTRAST))
def test_the_lanes_that_refuse_a_ttl_sweep_say_why_in_one_line(name: str) -> None:
    cfg = RunConfig(load_spec(name), backends=(*TAKE_THE_SWEEP, *REFUSE_THE_SWEEP),
                    strategies=("none", *SWEEP.labels), sweep=SWEEP)
    runnable, skipped = plan_scenarios(cfg)
    assert {s.backend for s in runnable if s.strategy in SWEEP.labels} == set(TAKE_THE_SWEEP)
    refused = [n for n in skipped if n.strategy in SWEEP.labels]
    assert {n.backend for n in refused} == set(REFUSE_THE_SWEEP)
    for n in refused:
        assert "\n" not in n.reason and REFUSE_THE_SWEEP[n.backend] in n.reason, n


@pytest.mark.parametrize("backend", RUN_THE_SWEEP)
@pytest.mark.parametrize("workload", WINDOWS)
def test_a_window_or_interval_join_ttl_sweep_is_flat_on_every_lane(
        swept: Callable[[str], Path], workload: str, backend: str) -> None:
    folder = swept(workload)
    outputs = per_ttl(folder, backend, "operator_outputs")
    assert set(outputs) == set(SWEEP.values) and min(outputs.values()) > 0
    assert len(set(outputs.values())) == 1, outputs  # the same outputs at every TTL
    compared = per_ttl(folder, backend, "ttl_compared_outputs")
    assert set(compared) == set(SWEEP.values) and min(compared.values()) > 0
    assert per_ttl(folder, backend, "ttl_changed_results") == {
        t: 0.0 for t in SWEEP.values}  # none changed against the run without TTL
    if backend in EXACT_ENTRIES:  # the same state, and nothing of it expired
        assert len(set(per_ttl(folder, backend, "live_entries").values())) == 1
        assert set(per_ttl(folder, backend, "expired_present_entries").values()) == {0}
    found = flat_curve(load_run(folder), workload)
    assert found is not None and backend in found.flat, found


@pytest.mark.parametrize("workload", WINDOWS)
def test_the_report_says_the_ttl_does_not_reach_each_window(swept: Callable[[str], Path],
                                                            workload: str) -> None:
    html = report_html(load_run(swept(workload)))
    assert f'data-ttl-reach="flat" data-workload="{workload}"' in html
    found = re.search(r"Flat, as in Flink, on ([^.<]+)\.", html)
    assert found is not None and set(found.group(1).split(", ")) == set(RUN_THE_SWEEP), found
    assert 'data-ttl-reach="differs"' not in html


@pytest.mark.parametrize("backend", RUN_THE_SWEEP)
def test_the_same_sweep_of_a_ttl_kind_is_not_flat(swept: Callable[[str], Path],
                                                  backend: str) -> None:
    folder = swept(CONTRAST)
    short, long = SWEEP.values
    changed = per_ttl(folder, backend, "ttl_changed_results")
    assert changed[short] > 0 and changed[long] == 0.0, changed
    outputs = per_ttl(folder, backend, "operator_outputs")
    assert outputs[short] != outputs[long], outputs
    run = load_run(folder)
    assert "data-ttl-reach" not in report_html(run)  # the TTL reaches q20's join
    assert lane_moves(run, CONTRAST, backend)  # the flatness check fails here
    assert flat_curve(run, CONTRAST) is None
