"""Self-contained HTML reports for statebench runs.

``render_report(run_dir)`` turns ``results/<run-id>/`` (rows.parquet + run.json) into one
offline HTML page comparing TTL cleanup strategies; ``render_diff(a, b, out)`` compares two runs.
"""

from workloads.report.render import render_diff, render_report

__all__ = ["render_diff", "render_report"]
