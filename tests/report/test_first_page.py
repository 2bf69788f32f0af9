"""A report a person reads (issue 41, parts 2 and 3): a first page that fits, details one click
away in the same file, and charts a person can read.

The default comparison's report (the session's ``default_comparison``: tests/conftest.py) opens
in Chromium at 1,400 px wide on its first page: the decision tables and at most one chart per
workload, under 15,000 px. Every other section is a tab: opened by its link, its charts are
drawn at their real width (a chart drawn while hidden has plotly's default size), no two text
labels of a chart overlap (read from their rendered boxes), every chart has a legend and every
axis that shows numbers a title with their unit, and nothing errs or touches the network.
Without a browser: the throughput-vs-state and throughput charts give each engine a panel of
its own, so a Python lane and a JVM lane never share a frontier or an axis.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.report import browsing
from workloads.report import render_report
from workloads.report.engines import engine_of, engine_order
from workloads.report.figures import pareto_chart, perf_chart
from workloads.report.load import load_run
from workloads.report.render import report_html

#: The first page's budget (issue 41), at :data:`VIEWPORT`'s width.
FIRST_PAGE_MAX_PX = 15_000
VIEWPORT = {"width": 1400, "height": 900}
W = "ycsb-a"


@pytest.fixture(scope="module")
def default_report(default_comparison: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default comparison rendered to a file of this module's own (other modules render
    the same run to its folder)."""
    return render_report(default_comparison, tmp_path_factory.mktemp("first-page") / "r.html")


@pytest.mark.browser
def test_the_default_comparison_opens_on_a_first_page_that_fits(
        browser: object, default_report: Path) -> None:
    offline = browsing.offline_page(browser, VIEWPORT)
    page, errors, external = offline.page, offline.errors, offline.external
    page.goto(default_report.as_uri(), wait_until="load")
    page.wait_for_function(
        "() => [...document.querySelectorAll('section.open .chart')]"
        ".every(c => c.querySelector('.main-svg'))", timeout=15_000)
    first = page.evaluate("""() => {
        const open = document.querySelector('main > section.open');
        const hidden = [...document.querySelectorAll('main > section')].filter(
            s => s !== open && getComputedStyle(s).display !== 'none').map(s => s.id);
        return {id: open.id, hidden, tables: open.querySelectorAll('table.decision').length,
                workloads: [...open.querySelectorAll('div.workload')].map(w => [
                    w.dataset.workload, w.querySelectorAll('.chart').length])};
    }""")
    assert first["id"] == "findings" and first["hidden"] == []
    assert first["tables"] == len(first["workloads"]) >= 5
    assert all(n <= 1 for _, n in first["workloads"]), first["workloads"]
    tall = browsing.height(page)
    assert tall < FIRST_PAGE_MAX_PX, f"the first page is {tall} px tall"
    print(f"first page: {tall} px at {VIEWPORT['width']} px wide")  # for the docs' note

    problems: dict[str, object] = {}
    for href in browsing.tabs(page):
        browsing.open_tab(page, href)
        for chart in browsing.charts(page):  # drawn at its real size once its tab shows
            assert chart["width"] >= 0.9 * chart["room"] > 300, (href, chart)
            assert chart["height"] > 200, (href, chart)
        for found in browsing.readable(page):
            assert found["legend"], (href, found["id"], "has no legend")
            assert found["untitled"] == [], (href, found["id"], "axes without a unit")
            assert len(found["entries"]) == len(set(found["entries"])), (href, found)
        if clashes := browsing.overlaps(page):
            problems[href] = clashes[:5]
        print(f"{href}: {browsing.height(page)} px")
    assert problems == {}, f"labels that overlap or are cut off: {problems}"
    page.close()
    assert errors == [] and external == []


@pytest.mark.browser
def test_a_chart_in_a_closed_tab_draws_at_its_size_when_opened_by_address(
        browser: object, default_report: Path) -> None:
    """Opening the file at a chart's address shows that chart's tab, drawn at full width."""
    page = browser.new_page(viewport=VIEWPORT)  # type: ignore[attr-defined]
    page.goto(default_report.as_uri() + f"#fig-state-{W}", wait_until="load")
    page.wait_for_timeout(600)
    opened = page.evaluate("() => document.querySelector('main > section.open').id")
    size = page.evaluate(f"""() => {{
        const el = document.getElementById('fig-state-{W}-plot');
        return [el.getBoundingClientRect().width,
                el.closest('.chart').getBoundingClientRect().width];
    }}""")
    page.close()
    assert opened == "state"
    assert size[0] >= 0.9 * size[1] > 300


def test_the_first_page_is_decisions_and_one_chart_per_workload(
        make_run: Callable[..., Path]) -> None:
    run = load_run(make_run("first", flink=True))
    html = report_html(run)
    nav = re.search(r'<nav class="tabs">(.*?)</nav>', html, re.S)
    assert nav is not None
    links = re.findall(r'href="#([\w-]+)"', nav.group(1))
    assert links[0] == "findings" and "pareto" not in links
    assert {"state", "perf", "checkpoint", "tables", "not-applicable", "environment",
            "spec"} <= set(links)
    first = html[html.index('<section id="findings">'):]
    first = first[:first.index("</section>")]
    charts = re.findall(r'<div class="chart" id="([\w-]+)"', first)
    assert charts == [f"fig-pareto-{w}" for w in run.workloads]
    for caption in re.findall(r'<p class="caption">(.*?)</p>', html):
        assert len(caption.split()) <= 90, caption  # no paragraph in a caption
        assert "Not applicable, so not shown" not in caption


def test_each_engine_has_its_own_frontier_and_its_own_axes(
        make_run: Callable[..., Path]) -> None:
    """The trade-off chart: a panel per engine, each trace's backends of that panel's engine,
    each engine's Pareto-optimal points its own (statebench's lanes are on their frontier
    however much faster Flink's are), no (backend, strategy) drawn twice, one legend entry per
    strategy and per backend."""
    run = load_run(make_run("engines", flink=True))
    chart = pareto_chart(run, W)
    assert chart is not None
    fig = chart.figure
    engines = engine_order(run.backends)
    assert engines == ["statebench", "flink"]
    titles = [a.text for a in fig.layout.annotations]
    assert titles == ["statebench's lanes", "Flink's lanes (context)"]
    drawn: list[tuple[str, str]] = []
    optimal: dict[str, int] = {}
    for trace in fig.data:
        meta = trace.meta or {}
        if meta.get("kind") != "pareto":
            continue
        panel = int((trace.xaxis or "x")[1:] or 1) - 1
        assert {engine_of(b) for b in meta["backends"]} == {engines[panel]}, trace.name
        drawn += [(b, trace.name) for b in meta["backends"]]
        optimal[engines[panel]] = optimal.get(engines[panel], 0) + sum(
            1 for width in trace.marker.line.width if width)
    assert len(drawn) == len(set(drawn))
    assert optimal.get("statebench", 0) >= 1 and optimal.get("flink", 0) >= 1
    shown = [t.name for t in fig.data if t.showlegend is not False]
    assert len(shown) == len(set(shown))
    assert fig.layout.showlegend is True
    for axis in (fig.layout.xaxis, fig.layout.yaxis, fig.layout.xaxis2, fig.layout.yaxis2):
        assert axis.title.text and ("bytes" in axis.title.text or "records/s" in axis.title.text)
    # a panel is a third of the page wide: its x axis labels few ticks (a log axis labelled
    # every digit, 400k 500k 600k ..., and they overlapped on the README's comparison)
    for axis in (fig.layout.xaxis, fig.layout.xaxis2):
        assert axis.dtick == "D2" if axis.type == "log" else 0 < axis.nticks <= 6, axis


def test_throughput_bars_give_each_engine_a_row(make_run: Callable[..., Path]) -> None:
    run = load_run(make_run("bars", flink=True))
    chart = perf_chart(run, W)
    assert chart is not None
    rows: dict[str, set[str]] = {}
    for trace in chart.figure.data:
        ticks = {x.split("<br>")[0] for x in trace.x}
        engines = {engine_of(b) for b in ticks}
        assert len(engines) == 1, ticks  # no axis holds a Python and a JVM lane
        rows.setdefault(trace.yaxis, set()).update(engines)
    assert all(len(found) == 1 for found in rows.values())
    assert {e for found in rows.values() for e in found} == {"statebench", "flink"}
