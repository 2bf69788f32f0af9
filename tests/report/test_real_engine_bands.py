"""The bands tool's documents: runs kept with their condition, added to, and judged run by run.

The measuring itself runs real Flink jobs (``python -m workloads.report.real_engine_bands``,
minutes per workload); these tests pin what it writes and how it reads it back, on records of
the shape it writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from workloads.report import real_engine_bands as RB
from workloads.report.real_engine import CHECKPOINT, ENTRIES, OUTPUTS, TTL_CHANGED, parse_bands


def record(ratio: float, repeat: int, condition: str = RB.QUIET, kind: str = "dedup",
           changed: float = 0.10) -> dict[str, Any]:
    return {"workload": "nexmark-q18-dedup", "kind": kind, "strategy": "compaction_filter",
            "ttl": True, "real": "flink-sql", "emulated": "flink-rocksdb", "repeat": repeat,
            "condition": condition, "load_1m": 1.0,
            OUTPUTS: {"real": 100.0, "emulated": 100.0, "ratio": 1.0},
            ENTRIES: {"real": 10.0, "emulated": 10.0, "ratio": 1.0},
            CHECKPOINT: {"real": ratio * 1000, "emulated": 1000.0, "ratio": ratio},
            TTL_CHANGED: {"real": changed, "emulated": 0.10, "ratio": None}}


def test_a_band_says_how_many_of_its_runs_were_loaded() -> None:
    runs = [record(1.3, 0), record(1.35, 1), record(1.5, 2, RB.LOADED)]
    (ckpt,) = [b for b in RB.bands_from_runs(runs) if b["measure"] == CHECKPOINT]
    assert (ckpt["lo"], ckpt["hi"], ckpt["runs"]) == (1.3, 1.5, 3)
    assert "1 of them beside a neighbour loading every core" in ckpt["source"]
    (quiet,) = [b for b in RB.bands_from_runs([*runs[:2], record(1.4, 2)])
                if b["measure"] == CHECKPOINT]
    assert "neighbour" not in quiet["source"]


def test_each_runs_verdicts_are_judged_against_the_bands_and_flips_are_named() -> None:
    bands = parse_bands({"bands": RB.bands_from_runs(
        [record(1.3, 0), record(1.4, 1), record(1.45, 2)])})
    inside, outside = record(1.35, 0), record(1.9, 1, RB.LOADED)
    assert RB.record_verdicts(inside, bands)[CHECKPOINT] == ("construction", 1.35)
    assert RB.record_verdicts(outside, bands)[CHECKPOINT] == ("differ", 1.9)
    assert RB.record_verdicts(inside, bands)[OUTPUTS][0] == "agree"
    assert RB.record_verdicts(record(1.35, 0, changed=0.3), bands)[TTL_CHANGED][0] == "differ"
    table = RB.verdict_table([inside, outside], bands)
    assert "| 1 | beside a neighbour loading every core | 1.0 | dedup | flink-sql |" in table
    assert "1.90x differ" in table
    assert "differ in some runs only: dedup flink-sql checkpoint_bytes: construction, differ" \
        in table
    same = RB.verdict_table([inside, record(1.36, 1, RB.LOADED)], bands)
    assert "differ in some runs only: none" in same
    assert same.endswith("differ by construction in others: none")
    near = RB.verdict_table([inside, record(1.1, 1, RB.LOADED)], bands)
    assert "differ in some runs only: none" in near
    assert near.endswith("others: dedup flink-sql checkpoint_bytes: agree, construction")


def test_verdicts_print_from_a_document_and_missing_files_are_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = [record(1.3, 0), record(1.4, 1), record(1.45, 2)]
    doc = tmp_path / "bands.json"
    doc.write_text(json.dumps({"bands": RB.bands_from_runs(runs), "runs": runs}))
    assert RB.main(["--verdicts", str(doc), "--bands", str(doc)]) == 0
    assert "1.45x construction" in capsys.readouterr().out
    assert RB.main(["--verdicts", str(tmp_path / "none.json")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("args, says", [
    (["--repeats", "1"], "at least 3 runs"),
    (["--repeats", "-1", "--neighbour-repeats", "5"], "cannot be negative"),
    (["--events", "0"], "--events must be positive"),
    (["--add", "--repeats", "1"], "does not exist"),
])
def test_bad_arguments_are_one_line_before_any_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str) -> None:
    out = tmp_path / "b.json"
    assert RB.main([*args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
    assert not out.exists()


def test_add_keeps_the_runs_already_written_and_lists_every_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "b.json"
    first = [record(1.3, 0), record(1.4, 1), record(1.45, 2)]
    out.write_text(json.dumps({"commands": ["python -m workloads.report.real_engine_bands"],
                               "bands": RB.bands_from_runs(first), "runs": first}))

    def fake_measure(*_: Any, done: Any, loaded: int, **__: Any) -> list[dict[str, Any]]:
        added = [record(1.7, 3 + i, RB.LOADED) for i in range(loaded)]
        done(added)
        return added

    monkeypatch.setattr(RB, "measure", fake_measure)
    assert RB.main(["--add", "--repeats", "0", "--neighbour-repeats", "2",
                    "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert len(doc["runs"]) == 5 and len(doc["commands"]) == 2
    (ckpt,) = [b for b in doc["bands"] if b["measure"] == CHECKPOINT]
    assert (ckpt["lo"], ckpt["hi"], ckpt["runs"]) == (1.3, 1.7, 5)


def test_held_out_a_run_is_judged_by_the_bands_of_the_others_only() -> None:
    runs = [record(1.3, 0), record(1.35, 1), record(1.4, 2), record(1.9, 3, RB.LOADED)]
    held = RB.held_out_bands(runs, "nexmark-q18-dedup", 3)
    (band,) = [b for k, b in held.items() if k[1] == CHECKPOINT]
    assert (band.lo, band.hi, band.runs) == (1.3, 1.4, 3)
    table = RB.verdict_table(runs, None)
    assert "1.90x differ" in table  # its own run would have put it inside
    assert "1.90x construction" in RB.verdict_table(runs, parse_bands(
        {"bands": RB.bands_from_runs(runs)}))


def test_a_band_holds_two_percent_past_its_runs_and_no_further() -> None:
    """Runs of a state the records fix differ by the few records a barrier lands late: a
    fourth run 1% past three is inside, 5% past is not."""
    bands = parse_bands({"bands": RB.bands_from_runs(
        [record(1.650, 0), record(1.651, 1), record(1.652, 2)])})
    assert RB.record_verdicts(record(1.652 * 1.01, 3), bands)[CHECKPOINT][0] == "construction"
    assert RB.record_verdicts(record(1.650 * 0.99, 3), bands)[CHECKPOINT][0] == "construction"
    assert RB.record_verdicts(record(1.652 * 1.05, 3), bands)[CHECKPOINT][0] == "differ"
    assert RB.record_verdicts(record(1.650 * 0.95, 3), bands)[CHECKPOINT][0] == "differ"


def test_a_gap_by_construction_is_named_on_the_first_screen_as_information(
        tmp_path: Path) -> None:
    """The done-when of the real-engine check: beyond 1.25x, the first screen names the
    measure and its cause even when the gap is understood (by construction), as information;
    a differ makes the line a warning."""
    from tests.report.test_real_engine import _lane, _synthetic
    from workloads.report.load import load_run
    from workloads.report.real_engine import real_engine_front

    no_ttl = [{**record(r, i), "ttl": False} for i, r in enumerate((1.6, 1.65, 1.7))]
    bands = parse_bands({"bands": RB.bands_from_runs(no_ttl)})
    folder = _synthetic(tmp_path / "c", "dedup", {
        "flink-sql": _lane("estimated_entries", 1000, 1650.0),
        "flink-rocksdb": _lane("live_entries", 1000, 1000.0)})
    line = real_engine_front(load_run(folder), "w", bands)
    assert line is not None and line.severity == "info"
    assert "differ by construction" in line.text and "row serializers differ" in line.text
    outside = _synthetic(tmp_path / "d", "dedup", {
        "flink-sql": _lane("estimated_entries", 1000, 2500.0),
        "flink-rocksdb": _lane("live_entries", 1000, 1000.0)})
    warned = real_engine_front(load_run(outside), "w", bands)
    assert warned is not None and warned.severity == "warn"
    assert real_engine_front(load_run(folder), "w", {}) is not None  # no band: a differ
