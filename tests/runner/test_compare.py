"""`statebench compare`, `report` and `diff` end to end (in-process, small), and usage errors."""

from __future__ import annotations

import json
import statistics
from html.parser import HTMLParser
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from workloads import cli
from workloads.report.fmt import fmt_ratio


@pytest.fixture
def compared(default_comparison: Path) -> Path:
    """The session's default comparison (tests/conftest.py; `compare --in-process --events 30000
    --repetitions 2`)."""
    return default_comparison


def test_compare_covers_the_default_matrix(compared: Path, capsys) -> None:
    meta = json.loads((compared / "run.json").read_text())
    names = ["sessions-churn", "ycsb-a", "sessions-paced", "nexmark-q20-join",
             "nexmark-q18-dedup"]
    assert [s["name"] for s in meta["spec"]] == names
    assert meta["config"]["kind"] == "comparison"
    workloads = meta["config"]["workloads"]
    assert set(workloads) == set(names)
    assert workloads["sessions-paced"]["clock"] == "paced"
    assert workloads["sessions-paced"]["rocksdb"]["state_layout"] == "ttl_db"
    assert workloads["ycsb-a"]["clock"] == "event"
    rows = pq.read_table(compared / "rows.parquet").to_pylist()
    ran = {(r["workload"], r["backend"], r["strategy"]) for r in rows
           if r["metric"] == "records_per_s" and r["task"] == -1}
    skipped = {(n["workload"], n["backend"], n["strategy"]) for n in meta["not_applicable"]}
    for workload in ("sessions-churn", "ycsb-a"):
        for backend in ("heap", "rocksdb"):
            for strategy in ("none", "full_snapshot", "incremental(5, false)",
                             "compaction_filter(1000)", "timer"):
                key = (workload, backend, strategy)
                assert (key in ran) != (key in skipped), key  # each ran, or is reported n/a
    for backend, strategy in (("heap", "none"), ("rocksdb", "none"),
                              ("rocksdb", "compaction_filter(1000)")):
        assert ("sessions-paced", backend, strategy) in ran
    assert ("ycsb-a", "rocksdb", "incremental(5, false)") in skipped
    # the operator workloads (a regular join, a dedup) ran on every lane; a Flink lane lists
    # the strategies Flink has no counterpart of (timer) not applicable with why
    reasons = {(n["workload"], n["backend"], n["strategy"]): n["reason"]
               for n in meta["not_applicable"]}
    for workload in ("nexmark-q20-join", "nexmark-q18-dedup"):
        for backend in meta["config"]["backends"]:
            for strategy in ("none", "timer"):
                key = (workload, backend, strategy)
                if backend.startswith("flink-") and strategy == "timer":
                    assert key not in ran and key in reasons
                else:
                    assert key in ran and key not in reasons
        changed = _totals(compared, workload, "heap", "timer", "ttl_changed_results")
        assert changed and 0 <= min(changed) <= max(changed) <= 1
    assert ("ycsb-a", "heap", "incremental(5, false)") in ran
    reps = {r["step"] for r in rows if r["metric"] == "records_per_s" and r["task"] == -1}
    assert reps == {0, 1}
    assert max(r["value"] for r in rows if r["metric"] == "expired_returned") == 0
    html = (compared / "report.html").read_text()
    assert "sessions-churn" in html and "ycsb-a" in html and "timer" in html


class _Cells(HTMLParser):
    """Chart wrappers, plot divs, and every table cell with its table's, row's and own attributes
    (the report's stable hooks: ``data-workload``, ``data-backend``, ``data-metric``, ...)."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.charts: list[str] = []
        self.ids: set[str] = set()
        self.rows: list[tuple[dict, dict, list[tuple[dict, str]]]] = []
        self._table: dict = {}
        self._row: tuple[dict, list] | None = None
        self._cell: dict | None = None
        self._text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.ids.add(a.get("id", ""))
        if tag == "div" and "chart" in a.get("class", "").split():
            self.charts.append(a["id"])
        elif tag == "table":
            self._table = a
        elif tag == "tr":
            self._row = (a, [])
        elif tag in ("td", "th"):
            self._cell, self._text = a, []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row[1].append((self._cell, "".join(self._text).strip()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append((self._table, *self._row))
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._text.append(data)


def _totals(run_dir: Path, workload: str, backend: str, strategy: str, metric: str) -> list[float]:
    """The task=-1 values of one metric, read from the stored rows without the report's code."""
    return [r["value"] for r in pq.read_table(run_dir / "rows.parquet").to_pylist()
            if (r["workload"], r["backend"], r["strategy"], r["metric"], r["task"])
            == (workload, backend, strategy, metric, -1)]


def test_report_re_renders_from_stored_rows(compared: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "again.html"
    assert cli.main(["report", str(compared), "-o", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    doc = _Cells(out.read_text())
    for workload in ("sessions-churn", "ycsb-a"):
        for kind in ("state", "perf", "pareto"):  # 30 k events: 0.3 s, no checkpoint
            chart = f"fig-{kind}-{workload}"
            assert chart in doc.charts and f"{chart}-plot" in doc.ids  # plotly drew into it
    # the headline numbers are the stored rows' numbers: median of the two repetitions'
    # records/s, and the peak of the live-entries series
    for metric, expected in (
        ("records_per_s", statistics.median(
            _totals(compared, "ycsb-a", "heap", "none", "records_per_s"))),
        ("live_entries", max(_totals(compared, "ycsb-a", "heap", "none", "live_entries"))),
    ):
        (cell,) = [c for table, row, cells in doc.rows for c, _ in cells
                   if table.get("data-workload") == "ycsb-a"
                   and row.get("data-backend") == "heap" and row.get("data-strategy") == "none"
                   and c.get("data-metric") == metric]
        assert cell["title"].endswith(f"exact value {expected:.6g}"), (metric, cell["title"])


def test_diff_renders_two_runs_side_by_side(compared: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "diff.html"
    assert cli.main(["diff", str(compared), str(compared), "-o", str(out)]) == 0
    doc = _Cells(out.read_text())
    ratios = {}
    for table, _row, cells in doc.rows:
        if "diff" not in table.get("class", "").split() or len(cells) < 6:
            continue
        backend, strategy = cells[0][1], cells[1][1]
        metric = next((c["data-metric"] for c, _ in cells if "data-metric" in c), None)
        if metric is not None:
            ratios[(table["data-workload"], backend, strategy, metric)] = cells
    ran = {(r["workload"], r["backend"], r["strategy"])
           for r in pq.read_table(compared / "rows.parquet").to_pylist()
           if r["metric"] == "records" and r["task"] == -1}
    assert ran and {k[:3] for k in ratios} == ran  # a row for every scenario that ran
    # a run against itself: A and B show the same stored number, and their ratio is 1
    records = _totals(compared, "sessions-churn", "rocksdb", "timer", "records")
    cells = ratios[("sessions-churn", "rocksdb", "timer", "records")]
    a, b, ratio = cells[3], cells[4], cells[5]
    assert a == b and a[0]["title"].endswith(f"exact value {statistics.median(records):.6g}")
    assert ratio[1] == fmt_ratio(1.0)
    assert all(c[5][1] == fmt_ratio(1.0) for k, c in ratios.items()
               if k[3] in ("records", "live_entries", "logical_bytes"))


@pytest.mark.parametrize(("argv", "message"), [
    (["compare", "--in-process", "no-such-spec"], "no-such-spec"),
    (["compare", "--in-process", "--backend", "mysql"], "mysql"),
    (["compare", "--in-process", "--strategy", "lazy"], "lazy"),
    (["report", "/nonexistent/run"], "not a statebench run folder"),
])
def test_usage_errors_exit_2_with_a_message(argv: list[str], message: str, capsys) -> None:
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_default_backends_include_flink_lanes_or_say_what_is_missing(monkeypatch) -> None:
    import backends.flink.lanes as lanes
    from backends.flink.errors import FlinkUnavailableError
    from workloads.run.compare import DEFAULT_BACKENDS, default_backends

    said: list[str] = []

    def unavailable() -> None:
        raise FlinkUnavailableError("the Flink lanes need pip install 'statebench[flink]'")

    monkeypatch.setattr(lanes, "check_available", unavailable)
    assert default_backends(said.append) == ("heap", "rocksdb")
    assert said == ["statebench: Flink's reference lanes are left out: the Flink lanes need "
                    "pip install 'statebench[flink]'"]
    monkeypatch.setattr(lanes, "check_available", lambda: None)
    assert default_backends(said.append) == DEFAULT_BACKENDS
    assert {"flink-heap", "flink-rocksdb"} <= set(DEFAULT_BACKENDS) and len(said) == 1
