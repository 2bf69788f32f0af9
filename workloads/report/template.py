"""The page skeleton: HTML5 shell, inline CSS, and how a chart is embedded.

The page must open from ``file://`` with no network, so plotly.js is inlined exactly once in
<head> and every figure is emitted with ``include_plotlyjs=False``.  Fonts are the system stack:
no web fonts, nothing to fetch.

A page with ``tabs`` shows one section at a time (the first on opening, any other by its link or
an address ending in its id, or in the id of anything inside it), so a run's first page is its
decisions and every detail is one click away in the same file. Without JavaScript every section
shows, one below the other. Plotly draws a chart that is hidden at a default size, so a section
or ``<details>`` that opens draws its charts again at their real size.
"""

from __future__ import annotations

import json
from functools import cache
from html import escape

import plotly.io as pio
import plotly.offline

from workloads.report.figures import Chart

#: Plotly options: no "produced with plotly" link (an external href), responsive width.
PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}

CSS = """
:root { --fg: #1d2330; --muted: #5b6475; --line: #d9dde5; --bg-alt: #f5f7fa;
        --accent: #0b5cad; --warn-bg: #fff4e5; --warn: #8a4b00;
        --clock-bg: #eef3fb; --clock: #2f4f86; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff; line-height: 1.45;
       font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; }
header { background: #14213d; color: #fff; padding: 1.2rem 2rem; }
header h1 { margin: 0 0 .3rem; font-size: 1.5rem; }
header p { margin: 0; color: #c9d3e6; font-size: .9rem; }
header code { color: #fff; }
nav { position: sticky; top: 0; z-index: 10; background: #fff; border-bottom: 1px solid var(--line);
      padding: .5rem 2rem; font-size: .9rem; }
nav a { color: var(--accent); text-decoration: none; margin-right: 1.1rem; }
main { max-width: 1280px; margin: 0 auto; padding: 0 2rem 3rem; }
section { margin-top: 2rem; scroll-margin-top: 3rem; }
h2 { border-bottom: 2px solid var(--line); padding-bottom: .25rem; font-size: 1.3rem; }
h3 { font-size: 1.1rem; margin: 1.4rem 0 .4rem; }
h4 { font-size: .95rem; margin: 1rem 0 .3rem; color: var(--muted); }
ul.findings { padding-left: 1.2rem; }
ul.findings li { margin: .25rem 0; }
ul.findings li.warn { background: var(--warn-bg); color: var(--warn); list-style: "⚠ ";
                      padding: .1rem .3rem; }
ul.findings li.clock { background: var(--clock-bg); color: var(--clock); list-style: "⏱ ";
                       padding: .1rem .3rem; }
table.decision td { min-width: 11rem; max-width: 24rem; white-space: normal; }
table.decision td[data-separated="no"] .pick { color: var(--muted); }
table.decision td[data-separated="yes"] .pick { font-weight: 600; }
table.decision .why { display: block; color: var(--muted); font-size: .72rem; }
table.decision tr.engine th { background: var(--bg-alt); font-weight: 600; }
table.decision tr.engine:not([data-engine="statebench"]) th { background: var(--clock-bg);
    color: var(--clock); }
p.evidence { color: var(--muted); font-size: .8rem; margin: .3rem 0 .6rem; }
details.findings { margin: .2rem 0 1.2rem; }
details.findings summary { cursor: pointer; color: var(--accent); font-size: .9rem; }
.badge { display: inline-block; background: var(--clock); color: #fff; border-radius: 3px;
         padding: 0 .4rem; font-size: .75rem; font-weight: 600; letter-spacing: .02em;
         vertical-align: .1em; }
p.clock-note { background: var(--clock-bg); color: var(--clock); padding: .35rem .6rem;
               border-radius: 4px; font-size: .85rem; margin: .4rem 0 .6rem; }
table.stats[data-clock="paced"] thead th { background: var(--clock-bg); }
.chart { border: 1px solid var(--line); border-radius: 6px; padding: .6rem .8rem;
         margin: 1rem 0; }
.chart h3 { margin-top: .2rem; }
.chart p.caption { color: var(--muted); font-size: .85rem; margin: .2rem 0 .4rem; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: .85rem; margin: .3rem 0 1rem; }
th, td { border: 1px solid var(--line); padding: .3rem .5rem; vertical-align: top;
         text-align: left; }
thead th { background: var(--bg-alt); font-weight: 600; }
th .unit { display: block; font-weight: 400; color: var(--muted); font-size: .75rem; }
tbody tr:nth-child(even) { background: #fafbfc; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.num .v { display: block; font-weight: 600; }
td.num .spread { display: block; color: var(--muted); font-size: .72rem; }
td.missing { color: #9aa1ad; text-align: center; }
td.na, tr.na td { color: var(--muted); font-style: italic; }
td.better { background: #e6f4ea; }
td.worse { background: #fde8e8; }
td.grey { color: var(--muted); }
td.different { background: var(--warn-bg); }
td.why { font-size: .75rem; max-width: 22rem; white-space: normal; }
tr.changed th, tr.changed td { background: var(--warn-bg); }
tr[data-backend^="flink-"] > td:first-child, th.reference { background: var(--clock-bg);
    color: var(--clock); }
table.fidelity td[data-verdict="agree"] { color: var(--muted); }
table.fidelity td[data-verdict="undecided"] { color: var(--muted); font-style: italic; }
table.kv th { background: var(--bg-alt); white-space: nowrap; }
pre { background: var(--bg-alt); border: 1px solid var(--line); padding: .7rem; overflow-x: auto;
      font-size: .8rem; margin: 0; }
footer { color: var(--muted); font-size: .8rem; text-align: center; padding: 1rem; }
html.tabbed main > section { display: none; }
html.tabbed main > section.open { display: block; }
nav.tabs a { display: inline-block; padding: .15rem 0; border-bottom: 2px solid transparent; }
nav.tabs a.active { color: var(--fg); font-weight: 600; border-bottom-color: var(--accent); }
"""

#: Runs in <head>, before any chart draws: the tabbed page hides its sections from the start.
TABS_HEAD = "document.documentElement.classList.add('tabbed');"

#: Runs after the page: shows the section the address names (else the first), keeps the tab
#: links in step, and redraws the charts of a section or <details> that opens (drawn while
#: hidden, plotly gives them a default width).
TABS_SCRIPT = """
(function () {
  var sections = Array.prototype.slice.call(document.querySelectorAll('main > section'));
  var links = Array.prototype.slice.call(document.querySelectorAll('nav.tabs a'));
  function redraw(root) {
    if (!window.Plotly) { return; }
    root.querySelectorAll('.js-plotly-plot').forEach(function (el) {
      Plotly.Plots.resize(el).catch(function () {});
    });
  }
  function show(hash, scroll) {
    var id = decodeURIComponent((hash || '').slice(1));
    var target = id ? document.getElementById(id) : null;
    var open = (target && target.closest('main > section')) || sections[0];
    if (!open) { return; }
    sections.forEach(function (s) { s.classList.toggle('open', s === open); });
    links.forEach(function (a) {
      var on = a.getAttribute('href') === '#' + open.id;
      a.classList.toggle('active', on);
      if (on) { a.setAttribute('aria-current', 'page'); }
      else { a.removeAttribute('aria-current'); }
    });
    redraw(open);
    if (target && target !== open) { target.scrollIntoView(); }
    else if (scroll) { window.scrollTo(0, 0); }
  }
  window.addEventListener('hashchange', function () { show(location.hash, true); });
  document.addEventListener('toggle', function (e) {
    if (e.target.open) { redraw(e.target); }
  }, true);
  show(location.hash, false);
})();
"""


@cache
def plotly_js() -> str:
    """The plotly.js bundle, inlined once per page (cached: it is ~4.8 MB)."""
    return plotly.offline.get_plotlyjs()


def chart_html(chart: Chart) -> str:
    """A chart inside a wrapper carrying a stable id and the strategies it draws.

    ``data-strategies`` (a JSON list) lets a browser test compare what should be drawn with the
    trace names plotly actually rendered.
    """
    div = pio.to_html(
        chart.figure,
        include_plotlyjs=False,
        full_html=False,
        div_id=f"{chart.fig_id}-plot",
        config=PLOTLY_CONFIG,
        validate=False,
    )
    strategies = escape(json.dumps(chart.strategies))
    return (
        f'<div class="chart" id="{escape(chart.fig_id)}" data-strategies="{strategies}">'
        f"<h3>{escape(chart.title)}</h3>"
        f'<p class="caption">{escape(chart.caption)}</p>{div}</div>'
    )


def section(section_id: str, title: str, body: str) -> str:
    return f'<section id="{escape(section_id)}"><h2>{escape(title)}</h2>\n{body}\n</section>'


def page(
    title: str, header_html: str, sections: list[tuple[str, str, str]], with_plotly: bool,
    tabs: bool = False,
) -> str:
    """Assemble the full HTML5 document; ``sections`` are (id, title, body HTML). With ``tabs``
    one section shows at a time, the first on opening (see the module's docstring)."""
    nav = "".join(f'<a href="#{escape(sid)}">{escape(t)}</a>' for sid, t, _ in sections)
    body = "\n".join(section(sid, t, b) for sid, t, b in sections)
    script = f'<script type="text/javascript">{plotly_js()}</script>' if with_plotly else ""
    head = f"<script>{TABS_HEAD}</script>\n" if tabs else ""
    tail = f"<script>{TABS_SCRIPT}</script>\n" if tabs else ""
    nav_attrs = ' class="tabs"' if tabs else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n{head}{script}\n</head>\n"
        f"<body>\n<header>{header_html}</header>\n<nav{nav_attrs}>{nav}</nav>\n<main>\n"
        f"{body}\n</main>\n"
        "<footer>Generated by statebench. Self-contained: opens offline.</footer>\n"
        f"{tail}</body>\n</html>\n"
    )
