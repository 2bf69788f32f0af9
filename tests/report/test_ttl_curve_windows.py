"""The TTL curve of a kind Flink's state TTL does not reach (the windows, the interval join):
the report says plainly that the TTL does not reach the operator in Flink, so a flat curve is
the expected answer, and flags a lane whose curve moved as differing from Flink. Synthetic
TTL-sweep runs (rows.parquet + run.json, as ``tests/report`` builds them); which kinds the TTL
reaches is read from the operators' own state declarations (``workloads.operators.flink_ttl``).
"""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workloads.operators import OPERATOR_CLASSES
from workloads.operators.base import StateDecl
from workloads.operators.flink_ttl import TTL_KINDS, ttl_reaches
from workloads.report.load import load_run
from workloads.report.render import report_html
from workloads.report.ttl_curve import flat_curve, ttl_curve_table

W = "w"
TTLS = (50, 500, 5_000)
UNREACHED = ("tumbling_window", "sliding_window", "session_window", "interval_join")
#: One lane's curve: per TTL, (outputs, peak live entries, share of outputs changed).
Curve = dict[int, tuple[float, float, float]]
FLAT: Curve = {t: (100.0, 40.0, 0.0) for t in TTLS}


def _label(ttl: int) -> str:
    return f"ttl(ms={ttl})"


def _swept(folder: Path, kind: str, lanes: dict[str, Curve], refused: tuple[str, ...] = (),
           time_characteristic: str = "EventTime") -> Path:
    """A run folder of workload ``w`` of ``kind`` swept over :data:`TTLS`: per lane and TTL its
    outputs and changed share (repetition 0) and live entries over three samples peaking at the
    given number; each ``refused`` lane's sweep scenarios not applicable, as the planner lists
    them."""
    rows = []

    def row(backend: str, ttl: int, metric: str, step: int, t: int, value: float,
            unit: str) -> None:
        rows.append({"workload": W, "backend": backend, "strategy": _label(ttl), "task": -1,
                     "step": step, "logical_time_ms": t, "metric": metric, "value": value,
                     "unit": unit})

    for backend, curve in lanes.items():
        for ttl, (outputs, peak, changed) in curve.items():
            row(backend, ttl, "operator_outputs", 0, -1, outputs, "count")
            row(backend, ttl, "ttl_changed_results", 0, -1, changed, "share")
            for step, value in enumerate((peak / 2, peak, peak / 3)):
                row(backend, ttl, "live_entries", step, 100 * (step + 1), value, "entries")
    for backend in refused:
        for ttl in TTLS:
            row(backend, ttl, "not_applicable", 0, -1, 1.0, "flag")
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "rows.parquet")
    sweep = {"strategy": "ttl", "knob": "ms", "values": list(TTLS),
             "labels": [_label(t) for t in TTLS]}
    spec = {"name": W, "operator": {"kind": kind},
            "state": {"time_characteristic": time_characteristic, "ttl_ms": 1_000},
            "checkpoints": {"mode": "full"}}
    meta = {"run_id": "x", "spec": spec, "sweep": sweep,
            "config": {"backends": [*lanes, *refused], "sweep": sweep,
                       "clock": "event" if time_characteristic == "EventTime" else "paced"},
            "not_applicable": [{"backend": b, "strategy": _label(t),
                                "reason": f"{_label(t)} is a TTL sweep's scenario: refused"}
                               for b in refused for t in TTLS]}
    (folder / "run.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def _note(html: str) -> re.Match[str] | None:
    return re.search(r'<p class="([^"]*ttl-reach[^"]*)" data-ttl-reach="(\w+)" '
                     r'data-workload="w">(.*?)</p>', html, re.S)


def test_the_kinds_flinks_ttl_reaches_are_read_from_the_operators_declarations() -> None:
    assert {"dedup", "regular_join", "group_agg", "topn"} == TTL_KINDS
    assert set(UNREACHED) == set(OPERATOR_CLASSES) - TTL_KINDS
    with pytest.raises(ValueError, match="not emulated"):
        ttl_reaches("nope")


@pytest.mark.parametrize("kind", UNREACHED)
def test_a_flat_curve_says_the_ttl_does_not_reach_the_operator(kind: str,
                                                               tmp_path: Path) -> None:
    run = load_run(_swept(tmp_path / "run", kind, {"heap": FLAT, "rocksdb": FLAT},
                          refused=("flink-heap",)))
    found = flat_curve(run, W)
    assert found is not None
    text = found.text
    assert text.startswith(f"Flink's state TTL does not reach this operator ({kind})")
    assert "a flat curve is what Flink shows, not a failed sweep" in text
    assert "Flat, as in Flink, on heap, rocksdb." in text
    assert "Not flat" not in text
    assert "No curve on flink-heap: the sweep's scenarios did not run there" in text
    table = ttl_curve_table(run, W)
    note = _note(table)
    assert note is not None and note.group(2) == "flat" and "warn" not in note.group(1)
    assert unescape(note.group(3)) == text
    assert table.index(note.group(0)) < table.index('<table class="ttl-curve"')
    assert note.group(0) in report_html(run)  # the report's sweep tab shows it


@pytest.mark.parametrize("kind", UNREACHED)
def test_a_lane_whose_curve_moved_is_flagged_as_differing_from_flink(kind: str,
                                                                     tmp_path: Path) -> None:
    moved: Curve = {50: (90.0, 30.0, 0.1), 500: (100.0, 40.0, 0.0), 5_000: (100.0, 40.0, 0.0)}
    run = load_run(_swept(tmp_path / "run", kind, {"heap": FLAT, "rocksdb": moved}))
    found = flat_curve(run, W)
    assert found is not None and found.differs
    assert found.flat == ("heap",)
    (backend, moves), = found.moved
    assert backend == "rocksdb"
    assert moves == ("outputs 90 to 100", "outputs changed by the TTL up to 10.0%",
                     "peak live entries 30 to 40")
    assert "Not flat on rocksdb (" in found.text
    assert "this lane differs from Flink, which applies no TTL here" in found.text
    note = _note(ttl_curve_table(run, W))
    assert note is not None and note.group(2) == "differs" and "warn" in note.group(1)


@pytest.mark.parametrize("outputs, peak, changed, moved", [
    (24_549.0, 40.0, 0.0, "outputs 100 to 24,549"),
    (100.0, 41.0, 0.0, "peak live entries 40 to 41"),
    (100.0, 40.0, 0.001, "outputs changed by the TTL up to 0.100%")])
def test_each_measure_alone_makes_a_curve_not_flat(outputs: float, peak: float, changed: float,
                                                   moved: str, tmp_path: Path) -> None:
    one = {**FLAT, 5_000: (outputs, peak, changed)}
    found = flat_curve(load_run(_swept(tmp_path / "run", "tumbling_window", {"heap": one})), W)
    assert found is not None and found.flat == ()
    assert found.moved == (("heap", (moved,)),)


def test_a_timing_dependent_entry_count_moving_is_not_the_ttl(tmp_path: Path) -> None:
    """On a paced clock the counts are timing-dependent: entries that move with the machine
    do not make the curve differ from Flink's; outputs still do."""
    jitter: Curve = {50: (100.0, 38.0, 0.0), 500: (100.0, 41.0, 0.0), 5_000: (100.0, 40.0, 0.0)}
    run = load_run(_swept(tmp_path / "run", "session_window", {"heap": jitter},
                          time_characteristic="ProcessingTime"))
    found = flat_curve(run, W)
    assert found is not None and found.flat == ("heap",) and not found.differs


@pytest.mark.parametrize("kind", sorted(TTL_KINDS))
def test_a_ttl_kind_gets_no_flat_curve_sentence(kind: str, tmp_path: Path) -> None:
    run = load_run(_swept(tmp_path / "run", kind, {"heap": FLAT}))
    assert flat_curve(run, W) is None
    assert _note(ttl_curve_table(run, W)) is None
    assert '<table class="ttl-curve"' in ttl_curve_table(run, W)


def test_the_sentence_follows_the_declarations(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Declaring a window's contents with the TTL (as the emulation did before issue 29) makes
    it a TTL kind everywhere that asks: no flat-curve sentence, in the kinds list too."""
    run_dir = _swept(tmp_path / "run", "tumbling_window", {"heap": FLAT})
    assert flat_curve(load_run(run_dir), W) is not None
    window = OPERATOR_CLASSES["tumbling_window"]
    monkeypatch.setattr(window, "STATES", tuple(
        StateDecl(d.name, d.shape, d.value_type, d.key_type, ttl=True) for d in window.STATES))
    assert ttl_reaches("tumbling_window")
    assert flat_curve(load_run(run_dir), W) is None
