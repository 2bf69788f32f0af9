"""Reading a rendered report in Chromium: its tabs, and what a person sees of its charts.

A report opens on its first page; every other section is a tab (``workloads.report.template``).
These helpers open each tab the way a reader does (its link), then read what the browser drew:
each chart's size, its text labels' rendered boxes (two that overlap are unreadable), its
legend, and the titles of the axes that show numbers. Shared by the browser tests, which take
Playwright pages from the session's ``browser`` fixture (tests/conftest.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Text boxes overlapping by more than this many pixels in both directions collide.
OVERLAP_PX = 1.0

#: The open section's charts: id, drawn size, and the width they had to fill.
CHARTS_JS = """() => {
  const open = document.querySelector('main > section.open') || document;
  return [...open.querySelectorAll('.js-plotly-plot')].map(el => ({
    id: el.id,
    width: el.getBoundingClientRect().width,
    height: el.getBoundingClientRect().height,
    room: el.closest('.chart').getBoundingClientRect().width,
  }));
}"""

#: Every pair of text labels of one chart whose rendered boxes overlap, and every label drawn
#: outside its chart (cut off); the hover layer (empty until a pointer rests) is not read.
OVERLAPS_JS = """(px) => {
  const out = [];
  const open = document.querySelector('main > section.open') || document;
  for (const el of open.querySelectorAll('.js-plotly-plot')) {
    const boxes = [];
    for (const t of el.querySelectorAll('svg text')) {
      if (t.closest('.hoverlayer')) continue;
      const text = t.textContent.trim();
      const style = getComputedStyle(t);
      if (!text || style.display === 'none' || style.visibility === 'hidden'
          || Number(style.opacity) === 0) continue;
      const r = t.getBoundingClientRect();
      if (r.width < 1 || r.height < 1) continue;
      const kind = (t.closest('g[class]') || t).getAttribute('class');
      boxes.push({text, kind, x0: r.left, y0: r.top, x1: r.right, y1: r.bottom});
    }
    const frame = el.getBoundingClientRect();
    for (let i = 0; i < boxes.length; i++) {
      const a = boxes[i];
      if (a.x0 < frame.left - px || a.x1 > frame.right + px || a.y0 < frame.top - px
          || a.y1 > frame.bottom + px) out.push({chart: el.id, outside: a.text, kind: a.kind});
      for (let j = i + 1; j < boxes.length; j++) {
        const b = boxes[j];
        const w = Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0);
        const h = Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0);
        if (w > px && h > px) out.push({chart: el.id, a: [a.kind, a.text], b: [b.kind, b.text]});
      }
    }
  }
  return out;
}"""

#: Per chart of the open section: whether it shows a legend and its entries, and the axes
#: that carry a trace and show tick labels but have no title (no unit).
READABLE_JS = """() => {
  const open = document.querySelector('main > section.open') || document;
  return [...open.querySelectorAll('.js-plotly-plot')].map(el => {
    const layout = el._fullLayout;
    const used = new Set();
    for (const t of el._fullData) {
      used.add('xaxis' + (t.xaxis || 'x').slice(1));
      used.add('yaxis' + (t.yaxis || 'y').slice(1));
    }
    const untitled = [...used].filter(name => {
      const ax = layout[name];
      if (!ax || ax.visible === false || ax.showticklabels === false) return false;
      return !(ax.title && String(ax.title.text || '').trim());
    });
    const entries = [...el.querySelectorAll('.legend .legendtext')].map(e => e.textContent);
    return {id: el.id, legend: layout.showlegend === true && entries.length > 0, entries,
            untitled};
  });
}"""


def tabs(page: Any) -> list[str]:
    """The report's tab links (``#findings``, ``#state``, ...), in page order."""
    return page.evaluate(
        "() => [...document.querySelectorAll('nav.tabs a')].map(a => a.getAttribute('href'))")


def open_tab(page: Any, href: str) -> None:
    """Click a tab's link and wait until its section shows and its charts are redrawn."""
    page.click(f"nav.tabs a[href='{href}']")
    page.wait_for_function(
        "(id) => { const s = document.querySelector('main > section.open');"
        " return s && '#' + s.id === id; }", arg=href, timeout=15_000)
    page.wait_for_timeout(400)  # plotly's resize settles after its 100 ms debounce


def height(page: Any) -> int:
    """The page's height in CSS pixels (a full-page screenshot's)."""
    return int(page.evaluate("() => document.documentElement.scrollHeight"))


def charts(page: Any) -> list[dict[str, Any]]:
    return page.evaluate(CHARTS_JS)


def overlaps(page: Any) -> list[dict[str, Any]]:
    return page.evaluate(OVERLAPS_JS, OVERLAP_PX)


def readable(page: Any) -> list[dict[str, Any]]:
    return page.evaluate(READABLE_JS)


@dataclass
class OfflinePage:
    """A Playwright page whose network is blocked (``file:``, ``data:`` and ``blob:`` only), with
    what it logged: console errors and page errors (``errors``) and the requests it tried
    beyond the disk (``external``). A report and a site must open from disk alone."""

    page: Any
    errors: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)


def offline_page(browser: Any, viewport: dict[str, int] | None = None) -> OfflinePage:
    """A new :class:`OfflinePage` of ``browser`` (the session's ``browser`` fixture)."""
    page = browser.new_page(**({"viewport": viewport} if viewport else {}))
    found = OfflinePage(page)
    page.on("console", lambda m: found.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: found.errors.append(str(e)))

    def block_network(route: Any) -> None:
        url = route.request.url
        if url.startswith(("file:", "data:", "blob:")):
            route.continue_()
        else:
            found.external.append(url)
            route.abort()

    page.route("**/*", block_network)
    return found
