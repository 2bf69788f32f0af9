"""A regression check's answer, for people (console, HTML page) and for tools (JSON)."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

from workloads.regress import stats
from workloads.regress.check import CheckResult
from workloads.results.store import write_text_atomic


def fmt_ratio(e: stats.Estimate) -> str:
    if math.isnan(e.lo):
        return f"{e.ratio:.3f}"
    return f"{e.ratio:.3f} [{e.lo:.3f}, {e.hi:.3f}]"


_ORDER = {stats.SLOWER: 0, stats.FASTER: 1, stats.UNDECIDED: 2, stats.SAME: 3}


def _pct(x: float) -> str:
    return "inf" if math.isinf(x) else f"{100 * x:.1f}%"


def summary_lines(result: CheckResult) -> list[str]:
    """The console's answer: what changed, then what the check could have seen."""
    a, b = result.a, result.b
    est = result.estimates
    lines = [f"regress: B = {b.describe} against A = {a.describe}",
             f"  {len(est)} timed benchmarks, {result.protocol.pairs} pairs of processes x "
             f"{result.protocol.trials} trials ({result.protocol.name}, {result.mode}), "
             f"{result.seconds:.0f} s; slower = q <= {result.alpha} and at least "
             f"{_pct(result.min_effect)}"]
    changed = sorted((e for e in est if e.verdict in (stats.SLOWER, stats.FASTER)),
                     key=lambda e: (_ORDER[e.verdict], -e.ratio))
    if changed:
        lines.append(f"  {'benchmark':44s} {'B/A [95% CI]':24s} {'q':>8s}  verdict")
        for e in changed:
            note = " (accepted)" if result.is_accepted(e.name) else ""
            lines.append(f"  {e.name:44s} {fmt_ratio(e):24s} {e.q:8.2g}  {e.verdict}{note}")
    for c in result.exact:
        note = " (accepted)" if result.is_accepted(f"{c.name}:{c.metric}") else ""
        lines.append(f"  {c.name} {c.metric}: A {c.a} B {c.b}: {c.verdict}{note}")
    same = sum(e.verdict == stats.SAME for e in est)
    lines.append(f"  no change in {same} of {len(est)}; the smallest slowdown each family "
                 "could have shown (median MDE, 80% power): " + ", ".join(
                     f"{family} {_pct(m)}" for family, m in result.mde_by_family().items()))
    if result.not_applicable:
        lines.append(f"  not applicable: {', '.join(sorted(result.not_applicable))}")
    failing = result.failing
    if failing:
        more = ", ..." if len(failing) > 5 else ""
        lines.append(f"  verdict: REGRESSION in {len(failing)} ({', '.join(failing[:5])}{more})")
    else:
        lines.append("  verdict: no regression")
    return lines


def page(result: CheckResult) -> str:
    """A self-contained HTML page: the verdict first, every benchmark's row behind it."""
    def row(e: stats.Estimate) -> str:
        colour = {stats.SLOWER: "#fdd", stats.FASTER: "#dfd"}.get(e.verdict, "")
        pairs = " ".join(f"{r:.3f}" for r in e.pairs)
        return (f'<tr style="background:{colour}"><td>{html.escape(e.name)}</td>'
                f"<td>{html.escape(fmt_ratio(e))}</td><td>{e.p:.2g}</td><td>{e.q:.2g}</td>"
                f"<td>{_pct(e.mde)}</td><td>{e.a_ns:,.0f}</td><td>{e.b_ns:,.0f}</td>"
                f"<td>{html.escape(e.verdict)}</td><td><small>{pairs}</small></td></tr>")

    rows = "\n".join(row(e) for e in sorted(
        result.estimates, key=lambda e: (_ORDER[e.verdict], e.name)))
    exact = "".join(
        f"<tr><td>{html.escape(c.name)}</td><td>{html.escape(c.metric)}</td>"
        f"<td>{html.escape(str(c.a))}</td><td>{html.escape(str(c.b))}</td>"
        f"<td>{html.escape(c.verdict)}</td></tr>" for c in result.exact)
    summary = "<br>".join(html.escape(line) for line in summary_lines(result))
    exact_table = (f"<h2>Exact figures that differ</h2><table><tr><th>scenario</th><th>figure"
                   f"</th><th>A</th><th>B</th><th></th></tr>{exact}</table>" if exact else "")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>statebench regress</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1400px}}
table{{border-collapse:collapse;font-size:13px}}td,th{{border:1px solid #ccc;padding:3px 6px}}
th{{background:#eee;text-align:left}}</style></head><body>
<h1>Did B make anything slower or bigger than A?</h1>
<p>{summary}</p>
<p>Each ratio is B's cost over A's: the geometric mean over pairs of processes of the median of
their interleaved trials' ratios, with a 95% t interval over the pairs. q is the paired test's p
adjusted over the suite (Benjamini-Hochberg); MDE is the smallest slowdown this check would have
flagged with 80% power. Costs are CPU nanoseconds per call.</p>
{exact_table}
<h2>Every benchmark</h2>
<table><tr><th>benchmark</th><th>B/A [95% CI]</th><th>p</th><th>q</th><th>MDE</th>
<th>A ns/call</th><th>B ns/call</th><th>verdict</th><th>per pair</th></tr>
{rows}
</table></body></html>
"""


def write(result: CheckResult, out_dir: Path) -> tuple[Path, Path]:
    """``regress.json`` and ``regress.html`` in ``out_dir``, each written atomically."""
    out_dir.mkdir(parents=True, exist_ok=True)
    doc, page_path = out_dir / "regress.json", out_dir / "regress.html"
    write_text_atomic(doc, json.dumps(json_safe(result.as_dict()), indent=1) + "\n")
    write_text_atomic(page_path, page(result))
    return doc, page_path


def json_safe(value: object) -> object:
    """NaN and infinity as null: JSON has neither."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value
