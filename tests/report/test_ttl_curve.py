"""The report's state-vs-TTL curve (issue 17 item 5): a real, small TTL sweep of the q20 join
(in-process, heap and RocksDB) is written as a comparison and rendered; the curve's figure and
table carry, per backend and TTL, the peak live entries, the peak checkpoint bytes and
``ttl_changed_results`` that a reader of the rows apart from the report's
(``tests/ttl_curve_rows.py``) computes from the same rows; runs that are not a TTL sweep draw
no curve."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.ttl_curve_rows import ttl_curve
from workloads.report import render_report
from workloads.report.figures import charts, ttl_curve_chart
from workloads.report.fmt import fmt_value
from workloads.report.load import load_run
from workloads.run.compare import comparison_configs, run_comparison, write_comparison
from workloads.run.sweep import parse_sweep
from workloads.spec import load_spec

TTLS = (100, 400, 4_000)


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder of q20 swept over three TTLs (2 s of event time, checkpoints every 0.5 s)."""
    spec = load_spec("nexmark-q20-join").with_overrides(
        events=20_000, rate=10_000, checkpoint_interval_ms=500)
    configs = comparison_configs(
        [spec], backends=("heap", "rocksdb"), repetitions=1, measure_latency=False,
        sweep=parse_sweep("ttl(ms=" + ",".join(map(str, TTLS)) + ")"))
    outcomes = run_comparison(configs, in_process=True)
    return write_comparison(outcomes, tmp_path_factory.mktemp("ttl-curve"))


def test_figure_plots_the_rows_curve(swept: Path) -> None:
    expected = ttl_curve(pq.read_table(swept / "rows.parquet"))
    assert {(p.backend, p.ttl_ms) for p in expected} == {
        (b, t) for b in ("heap", "rocksdb") for t in TTLS}
    chart = ttl_curve_chart(load_run(swept), "nexmark-q20-join")
    assert chart is not None and chart.fig_id == "fig-ttl-curve-nexmark-q20-join"
    traces = {(t.meta["backend"], t.meta["metric"]): t for t in chart.figure.data}
    assert set(traces) == {(b, m) for b in ("heap", "rocksdb")
                           for m in ("peak_live_entries", "peak_checkpoint_bytes")}
    for backend in ("heap", "rocksdb"):
        mine = [p for p in expected if p.backend == backend]
        live = traces[(backend, "peak_live_entries")]
        ckpt = traces[(backend, "peak_checkpoint_bytes")]
        assert list(live.x) == [p.ttl_changed_results for p in mine]
        assert list(live.y) == [p.peak_live_entries for p in mine]
        assert list(ckpt.y) == [p.peak_checkpoint_bytes for p in mine]
        assert list(live.text) == [fmt_value(t, "ms") for t in TTLS]
        # the trade-off the curve exists to show: a longer TTL keeps more, changes less
        assert live.y[0] < live.y[1] < live.y[2] and ckpt.y[0] < ckpt.y[2]
        assert live.x[0] > live.x[1] >= live.x[2] == 0.0
    # NeverReturnExpired: the same accesses on both backends, so the same entries and outputs
    assert list(traces[("heap", "peak_live_entries")].y) == list(
        traces[("rocksdb", "peak_live_entries")].y)
    assert list(traces[("heap", "peak_live_entries")].x) == list(
        traces[("rocksdb", "peak_live_entries")].x)


def test_report_shows_figure_and_table(swept: Path) -> None:
    html = render_report(swept).read_text(encoding="utf-8")
    assert 'id="fig-ttl-curve-nexmark-q20-join"' in html
    table = re.search(r'<table class="ttl-curve" id="ttl-curve-nexmark-q20-join".*?</table>',
                      html, re.S)
    assert table is not None
    rows = re.findall(r"<tr><td>(.*?)</td>(.*?)</tr>", table.group(0), re.S)
    cells = [(b, re.findall(r"<td class=num>(.*?)</td>", rest)) for b, rest in rows]
    expected = ttl_curve(pq.read_table(swept / "rows.parquet"))
    assert len(cells) == len(expected) == 6
    for (backend, row), p in zip(cells, expected):
        assert p.backend in backend
        assert row == [fmt_value(p.ttl_ms, "ms"), f"{p.peak_live_entries:,.0f}",
                       f"{p.peak_checkpoint_bytes:,.0f}",
                       fmt_value(p.ttl_changed_results, "share")]


def test_no_curve_without_a_ttl_sweep(swept: Path, tmp_path: Path) -> None:
    meta = json.loads((swept / "run.json").read_text(encoding="utf-8"))
    meta["sweep"] = {**meta["sweep"], "strategy": "timer", "knob": "granularity_ms"}
    other = tmp_path / swept.name
    other.mkdir()
    (other / "run.json").write_text(json.dumps(meta), encoding="utf-8")
    (other / "rows.parquet").write_bytes((swept / "rows.parquet").read_bytes())
    run = load_run(other)
    assert ttl_curve_chart(run, "nexmark-q20-join") is None
    assert all(not c.fig_id.startswith("fig-ttl-curve") for c in charts(run).get("sweep", []))
    assert 'class="ttl-curve"' not in render_report(other).read_text(encoding="utf-8")
