"""The docs' tables of the regression check's proof count what the checks flagged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workloads.regress import tables


def _run(kind: str, verdicts: dict[str, tuple[float, str]], false: list[str] | None = None,
         ) -> dict:
    return {"kind": kind, "seconds": 120.0, "load": [1.0, 1.0, 1.0],
            "false_flags": false or [], "mde_by_family": {"state": 0.04, "raw": 0.05},
            "rows": [{"name": n, "true_share": s, "verdict": v} for n, (s, v) in
                     verdicts.items()]}


def test_a_benchmark_is_counted_in_its_bucket_by_its_mean_share() -> None:
    doc = {"runs": [
        _run("planted", {"state/a": (0.05, "slower"), "state/b": (0.11, "slower"),
                         "raw/x": (0.0, "no change")}),
        _run("planted", {"state/a": (0.05, "no change"), "state/b": (0.09, "slower"),
                         "raw/x": (0.0, "no change")}),
        _run("empty", {"state/a": (0.0, "no change")}),
    ]}
    found = tables.detection(doc)
    assert found["about 5%"] == {"benchmarks": 1, "least": 1, "median": 1}
    assert found["about 10%"] == {"benchmarks": 1, "least": 2, "median": 2}
    assert found["about 20%"]["benchmarks"] == 0


def test_the_table_counts_false_flags_of_empty_and_planted_checks(tmp_path: Path) -> None:
    runs = [_run("planted", {"state/a": (0.05, "slower"), "raw/x": (0.0, "slower")},
                 ["raw/x"]),
            _run("empty", {"state/a": (0.0, "slower")}, ["state/a"])]
    layout = [_run("layout", {"state/a": (0.0, "slower")}, ["state/a"]),
              _run("layout", {"state/a": (0.0, "no change")})]
    quiet, noisy = (name for name, _ in tables.CONDITIONS[:2])
    (tmp_path / quiet).write_text(json.dumps({"runs": runs + layout}))
    (tmp_path / noisy).write_text(json.dumps({"runs": runs}))
    text = tables.detection_table(tmp_path)
    assert "| 1 in 1 checks | 1 in 2 checks | 1 in 1 checks |" in text
    assert "| 1 in 1 checks | not run | 1 in 1 checks |" in text
    (tmp_path / tables.CONDITIONS[0][0]).write_text(json.dumps([1, 2]))
    with pytest.raises(ValueError, match="not a regress experiment document"):
        tables.detection_table(tmp_path)
