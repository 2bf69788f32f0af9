"""`python -m bench.perop` refuses nonsense in one line (status 2, no traceback) before it
measures or simulates anything: fewer than two runs or one run counted twice, malformed
documents, numbers out of range, an output path it could not write; Ctrl-C prints one line and
gives status 130. Nothing here measures: `measure` and Flink's availability check are replaced
by functions that fail the test if called."""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path

import pytest

from bench import perop, perop_repeat
from bench.perop_stats import check_runs

PROTOCOL = {"name": "lean", "forks": 2, "workers": 2, "jvm_iterations": 2, "py_values": 2}


def _doc(created: str = "1", verdict: str = "agree") -> dict:
    """The smallest document both compare and predict use: one cell, its four rates."""
    rates = []
    for side in ("flink", "statebench"):
        for ttl, level in (("off", 1e6), ("on", 5e5)):
            rates.append({"side": side, "backend": "heap", "ttl": ttl, "op": "value_get",
                          "median": level, "cache": None,
                          "values": {"cpu": [[level, level * 1.01], [level * 0.99, level]]}})
    return {"schema": perop.SCHEMA, "created": created, "protocol": dict(PROTOCOL),
            "clock": "cpu", "load": {"before": [1.0] * 3, "after": [1.0] * 3}, "rates": rates,
            "machine_probe": None, "cache_probe": None,
            "cells": [{"backend": "heap", "ttl": "on", "op": "value_get", "verdict": verdict,
                       "ratio": {"value": 1.0, "ci_low": 0.9, "ci_high": 1.1}}]}


def _write(folder: Path, name: str, doc: object) -> Path:
    path = folder / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def _refused(capsys, argv: list[str]) -> str:
    """main(argv) refuses: status 2 and one line on stderr, nothing on stdout."""
    code = perop.main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (code, out, err)
    assert out == "" and err.startswith("bench.perop: ") and err.count("\n") == 1, err
    return err


@pytest.fixture
def no_measuring(monkeypatch) -> list[str]:
    """Measuring and Flink's availability check fail the test; returns the calls made."""
    calls: list[str] = []

    def measure(*a, **k):
        calls.append("measure")
        raise AssertionError("measured")

    def check_available() -> None:
        calls.append("check_available")

    monkeypatch.setattr(perop, "measure", measure)
    monkeypatch.setattr("backends.flink.lanes.check_available", check_available)
    return calls


# --- compare and predict: the runs ------------------------------------------------------------

@pytest.mark.parametrize("cmd", ["compare", "predict"])
def test_fewer_than_two_runs_are_refused(cmd, tmp_path, capsys) -> None:
    """compare of one file said verdict_bar_met: true, every verdict the same."""
    one = _write(tmp_path, "a.json", _doc())
    err = _refused(capsys, [cmd, str(one)])
    assert "at least two runs" in err and "not 1" in err


@pytest.mark.parametrize("cmd", ["compare", "predict"])
def test_one_run_given_twice_is_refused(cmd, tmp_path, capsys) -> None:
    """The same path (however spelled) or the same content twice repeats every verdict."""
    a = _write(tmp_path, "a.json", _doc())
    (tmp_path / "sub").mkdir()
    err = _refused(capsys, [cmd, str(a), str(tmp_path / "sub" / ".." / "a.json")])
    assert "given twice" in err
    os.symlink(a, tmp_path / "link.json")
    assert "given twice" in _refused(capsys, [cmd, str(a), str(tmp_path / "link.json")])
    copy_ = _write(tmp_path, "copy.json", a.read_text())
    err = _refused(capsys, [cmd, str(a), str(copy_)])
    assert "same content" in err and str(copy_) in err
    b = _write(tmp_path, "b.json", _doc(created="2"))
    assert perop.main([cmd, str(a), str(b)]) == 0  # two runs: accepted
    capsys.readouterr()


def test_compare_itself_refuses_one_run_and_runs_without_a_shared_cell() -> None:
    with pytest.raises(ValueError, match="at least two runs"):
        perop.compare([_doc()])
    other = _doc("2")
    other["cells"][0]["op"] = "list_get"
    with pytest.raises(ValueError, match="share no cell"):  # was: verdict_bar_met over 0 cells
        perop.compare([_doc(), other])


@pytest.mark.parametrize("cmd", ["compare", "predict"])
def test_runs_of_different_protocols_or_clocks_are_refused(cmd, tmp_path, capsys) -> None:
    a = _write(tmp_path, "a.json", _doc())
    wide = _doc("2")
    wide["protocol"]["name"] = "wide"
    err = _refused(capsys, [cmd, str(a), str(_write(tmp_path, "w.json", wide))])
    assert "one protocol" in err and "w.json" in err
    wall = _doc("3")
    wall["clock"] = "wall"
    for r in wall["rates"]:
        r["values"]["wall"] = r["values"]["cpu"]
    assert "one clock" in _refused(capsys, [cmd, str(a), str(_write(tmp_path, "c.json", wall))])


# --- malformed documents --------------------------------------------------------------------

def _without(path: str):
    """A change that removes the field at a dotted path (a number: a list's item)."""
    def change(doc: dict) -> None:
        *head, last = path.split(".")
        for key in head:
            doc = doc[int(key)] if isinstance(doc, list) else doc[key]
        del doc[int(last) if isinstance(doc, list) else last]
    return change


def _setting(path: str, value: object):
    def change(doc: dict) -> None:
        *head, last = path.split(".")
        for key in head:
            doc = doc[int(key)] if isinstance(doc, list) else doc[key]
        doc[int(last) if isinstance(doc, list) else last] = value
    return change


#: (command, what is done to the second document, a phrase of the refusal). Before, these gave
#: AttributeError, KeyError, TypeError, IndexError or ZeroDivisionError tracebacks, or a result
#: made of nonsense (a verdict of "maybe", a median of 0 printed as Infinity, NaN).
MALFORMED = [
    ("compare", _without("cells"), "has no 'cells'"),
    ("predict", _without("protocol"), "has no 'protocol'"),
    ("compare", _without("protocol"), "has no 'protocol'"),
    ("compare", _setting("cells", "x"), "cells is 'x', not a list"),
    ("compare", _setting("cells.0", 3), "cells[0] is the number 3, not an object"),
    ("compare", _without("cells.0.verdict"), "cells[0] has no 'verdict'"),
    ("compare", _setting("cells.0.verdict", "maybe"), "not one of agree, disagree, undecided"),
    ("compare", _setting("cells.0.ratio.value", "1"), "cells[0].ratio.value is '1'"),
    ("compare", _setting("cells.0.ttl", "off"), "cells[0].ttl is 'off'"),
    ("compare", _setting("rates.0.median", 0), "rates[0].median is the number 0"),
    ("compare", _setting("rates.0.median", True), "the boolean true, not a positive number"),
    ("compare", _setting("rates.0.cache", {"median": -1}), "rates[0].cache.median"),
    ("compare", _setting("machine_probe", {"n": 3}), "machine_probe has no 'median'"),
    ("compare", _without("load"), "has no 'load'"),
    ("compare", _setting("rates.1", None), "rates[1] is null, not an object"),
    ("compare", _setting("rates.0.side", "python"), "rates[0].side is 'python'"),
    ("compare", lambda d: d["cells"].append(dict(d["cells"][0])), "cells[1] repeats cells[0]"),
    ("compare", lambda d: d["rates"].append(dict(d["rates"][0])), "rates[4] repeats rates[0]"),
    ("predict", _setting("protocol", []), "protocol is a list, not an object"),
    ("predict", _setting("protocol.forks", "2"), "protocol.forks is '2'"),
    ("predict", _setting("protocol.forks", 10**6), "not an integer from 1 to 200"),
    ("predict", _setting("protocol.py_values", 0), "protocol.py_values is the number 0"),
    ("predict", _setting("clock", "sundial"), "clock is 'sundial', not one of cpu, wall"),
    ("predict", _without("rates.0.values"), "rates[0] has no 'values'"),
    ("predict", _without("rates.0.values.cpu"), "rates[0].values has no 'cpu'"),
    ("predict", _setting("rates.1.values.cpu", [5e5, 5e5]), "rates[1].values.cpu[0] is the "
     "number 500000.0, not a non-empty list"),
    ("predict", _setting("rates.1.values.cpu", []), "rates[1].values.cpu holds no process"),
    ("predict", _setting("rates.1.values.cpu.0.0", 0), "holds the number 0, not a positive"),
    ("predict", _setting("rates.1.values.cpu.0.0", None), "holds null, not a positive"),
    ("predict", _setting("rates.1.values.cpu.1", [1.0]), "different numbers of values"),
    ("predict", _without("rates.0"), "has no rate with TTL off (flink/heap/off/value_get)"),
    ("predict", _setting("rates.1.values.cpu", [[5e5, 5e5]]), "different numbers of processes"),
    ("predict", _setting("schema", "statebench-perop-2"), "its schema is 'statebench-perop-2'"),
    ("predict", _setting("rates", []), "nothing to fit"),  # was: every cell of none repeated
    ("compare", _setting("cells", []), "share no cell"),  # was: verdict_bar_met, 0 of 0 cells
]


@pytest.mark.parametrize(("cmd", "change", "phrase"), MALFORMED,
                         ids=[f"{c}-{p}" for c, _, p in MALFORMED])
def test_a_malformed_document_is_refused_in_one_line(cmd, change, phrase, tmp_path,
                                                     capsys) -> None:
    bad = copy.deepcopy(_doc("2"))
    change(bad)
    a, b = _write(tmp_path, "a.json", _doc()), _write(tmp_path, "bad.json", bad)
    err = _refused(capsys, [cmd, str(a), str(b)])
    assert phrase in err
    if "share no cell" not in phrase and "nothing to fit" not in phrase:
        assert f"{b}: " in err or f"{b} " in err  # the file is named


@pytest.mark.parametrize("cmd", ["compare", "predict"])
@pytest.mark.parametrize(("text", "phrase"), [
    ("[1, 2]", "a list, not an object"),  # was: AttributeError
    ('"text"', "'text', not an object"),
    ("{", "is not JSON"),
    ("\xff\xfe\x00garbage", "is not JSON"),
    ('{"schema": "statebench-perop-3", "x": NaN}', "NaN is not a JSON number"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),  # was: RecursionError
    ("{}", "it has no schema"),
])
def test_a_file_that_is_no_document_is_refused_in_one_line(cmd, text, phrase, tmp_path,
                                                           capsys) -> None:
    a = _write(tmp_path, "a.json", _doc())
    b = tmp_path / "b.json"
    b.write_bytes(text.encode("latin-1"))
    err = _refused(capsys, [cmd, str(a), str(b)])
    assert phrase in err and str(b) in err


def test_a_folder_a_pipe_or_a_missing_file_is_refused(tmp_path, capsys) -> None:
    a = _write(tmp_path, "a.json", _doc())
    assert "is a folder" in _refused(capsys, ["compare", str(a), str(tmp_path)])
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # was: read forever
    assert "not a regular file" in _refused(capsys, ["compare", str(a), str(fifo)])
    assert "cannot read" in _refused(capsys, ["predict", str(a), str(tmp_path / "none.json")])
    huge = tmp_path / "huge.json"
    with huge.open("wb") as f:  # sparse: no disk, and never read
        f.truncate(perop.MAX_DOCUMENT_BYTES + 1)
    assert "64 MiB at most" in _refused(capsys, ["compare", str(a), str(huge)])


# --- numbers --------------------------------------------------------------------------------

def test_predict_runs_are_bounded_before_any_simulation(tmp_path, capsys, monkeypatch) -> None:
    """--runs 100000 simulated for hours (half a second a run)."""
    def predict(*a, **k):
        raise AssertionError("simulated")

    monkeypatch.setattr(perop_repeat, "predict", predict)
    a, b = _write(tmp_path, "a.json", _doc()), _write(tmp_path, "b.json", _doc("2"))
    err = _refused(capsys, ["predict", str(a), str(b), "--runs", "100000"])
    assert "--runs" in err and f"give 2 to {perop_repeat.MAX_RUNS}" in err
    assert "at least two runs" in _refused(capsys, ["predict", str(a), str(b), "--runs", "1"])
    with pytest.raises(ValueError, match="at most 100 runs"):
        perop_repeat.report([_doc(), _doc("2")], [], runs=101)


def _parser_refused(capsys, argv: list[str]) -> str:
    """argparse refuses argv: status 2 and one line (no usage block)."""
    with pytest.raises(SystemExit) as exit_:
        perop.main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.startswith("bench.perop: ") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("option", ["201,3,3,3", "3,201,3,3", "3,3,1001,3", "3,3,3,100000"])
def test_predict_options_are_bounded(option, capsys) -> None:
    err = _parser_refused(capsys, ["predict", "a.json", "b.json", "--option", option])
    assert "forks and workers 1-200, rounds 1-1000" in err
    assert perop._option("200,200,1000,1000") == (200, 200, 1000, 1000)


@pytest.mark.parametrize(("argv", "phrase"), [
    (["predict", "a.json", "b.json", "--runs", "x"], "predict: argument --runs: invalid int"),
    (["repeat"], "repeat: the following arguments are required: --dir"),
    (["run", "--protocol", "huge"], "run: argument --protocol: invalid choice: 'huge'"),
    (["compare"], "compare: the following arguments are required: files"),
    ([], "required: {run,compare,predict,repeat}"),
])
def test_a_bad_command_line_is_refused_in_one_line(argv, phrase, capsys) -> None:
    assert phrase in _parser_refused(capsys, argv)


def test_check_runs_names_the_range() -> None:
    check_runs(2, 10)
    check_runs(10, 10)
    with pytest.raises(ValueError, match=r"at most 10 runs, not 11 \(give 2 to 10\)"):
        check_runs(11, 10)
    with pytest.raises(ValueError, match=r"at least two runs, not 0 \(give 2 to 10\)"):
        check_runs(0, 10)


def test_repeat_runs_are_bounded_before_the_jdk_check_and_the_folder(tmp_path, capsys,
                                                                     no_measuring) -> None:
    folder = tmp_path / "r"
    err = _refused(capsys, ["repeat", "--dir", str(folder), "--protocol", "ci", "--runs",
                            "1000"])
    assert f"give 2 to {perop.MAX_REPEAT_RUNS}" in err
    assert "at least two runs" in _refused(capsys, ["repeat", "--dir", str(folder), "--runs",
                                                    "1"])
    assert no_measuring == [] and not folder.exists()
    with pytest.raises(ValueError, match="at most 10 runs"):
        perop.repeat(perop.PROTOCOLS["ci"], 11, folder, measure_run=lambda *a: {})


# --- run --out, repeat --dir ----------------------------------------------------------------

def _deny_writing(monkeypatch) -> None:
    """Creating a file fails as in a read-only folder (root writes anywhere: chmod cannot)."""
    def mkstemp(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(perop.tempfile, "mkstemp", mkstemp)


def test_run_refuses_an_output_it_could_not_write_before_measuring(tmp_path, capsys,
                                                                    monkeypatch,
                                                                    no_measuring) -> None:
    (tmp_path / "file").write_text("")
    os.mkfifo(tmp_path / "fifo")
    cases = [(tmp_path / "missing" / "out.json", "does not exist"),
             (tmp_path, "is a folder, not a file"),
             (tmp_path / "file" / "out.json", "is not a folder"),
             (tmp_path / "fifo", "not a regular file")]
    for out, phrase in cases:
        err = _refused(capsys, ["run", "--protocol", "ci", "--out", str(out)])
        assert phrase in err, err
    assert not (tmp_path / "missing").exists()  # was: made, then an hour measured
    _deny_writing(monkeypatch)
    err = _refused(capsys, ["run", "--protocol", "ci", "--out", str(tmp_path / "out.json")])
    assert f"cannot write in {tmp_path}: Permission denied" in err
    assert no_measuring == []
    with pytest.raises(ValueError, match="cannot write in"):
        perop.run(perop.PROTOCOLS["ci"], tmp_path / "out.json")
    assert no_measuring == []


def test_run_checks_writing_with_a_probe_it_removes(tmp_path) -> None:
    perop.check_out(tmp_path / "out.json")
    assert list(tmp_path.iterdir()) == []


def test_repeat_refuses_a_folder_it_cannot_write_in_before_any_run(tmp_path, capsys,
                                                                   monkeypatch,
                                                                   no_measuring) -> None:
    """Before: an unwritable folder was found when the first run (an hour) was written; a path
    under a file when the folder was made, after the JDK check."""
    made = []
    folder = tmp_path / "r"
    (tmp_path / "file").write_text("")
    err = _refused(capsys, ["repeat", "--dir", str(tmp_path / "file" / "r"), "--protocol",
                            "ci"])
    assert f"{tmp_path / 'file'} is not a folder" in err
    _deny_writing(monkeypatch)
    for target in (folder, folder / "deeper"):  # made by repeat: its parent is probed
        err = _refused(capsys, ["repeat", "--dir", str(target), "--protocol", "ci"])
        assert f"cannot write in {tmp_path}: Permission denied" in err
        assert not folder.exists()
    folder.mkdir()
    with pytest.raises(ValueError, match=re.escape(f"cannot write in {folder}")):
        perop.repeat(perop.PROTOCOLS["ci"], 2, folder, measure_run=lambda *a: made.append(a))
    assert made == [] and no_measuring == []


# --- interrupts and failed writes -----------------------------------------------------------

def _fake_measuring(monkeypatch, interrupt_at: int | None = None) -> None:
    """measure returns at once (KeyboardInterrupt on its `interrupt_at`-th call); document
    makes a small valid document."""
    calls = []

    def measure(protocol, progress=None):
        calls.append(1)
        if len(calls) == interrupt_at:
            raise KeyboardInterrupt
        return {}, []

    monkeypatch.setattr(perop, "measure", measure)
    monkeypatch.setattr(perop, "document", lambda *a, **k: {**_doc(str(len(calls))),
                                                            "cpus": 2})
    monkeypatch.setattr(perop, "format_document", lambda doc: ["table"])
    monkeypatch.setattr("backends.flink.lanes.check_available", lambda: None)


def _main(argv: list[str]) -> int:
    """perop.main, a KeyboardInterrupt that escapes it failing the test (not the session)."""
    try:
        return perop.main(argv)
    except KeyboardInterrupt:
        pytest.fail("KeyboardInterrupt escaped main (a traceback for the user)")


def test_an_interrupted_run_says_so_in_one_line_and_leaves_no_file(tmp_path, capsys,
                                                                   monkeypatch) -> None:
    _fake_measuring(monkeypatch, interrupt_at=1)
    out = tmp_path / "out.json"
    assert _main(["run", "--protocol", "ci", "--out", str(out)]) == 130
    assert capsys.readouterr().err == "bench.perop: interrupted\n"  # was: a traceback
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_or_failed_write_leaves_no_half_file(tmp_path, capsys,
                                                            monkeypatch) -> None:
    _fake_measuring(monkeypatch)
    out = tmp_path / "out.json"
    for error, code in ((KeyboardInterrupt(), 130), (OSError(28, "No space left on device"), 2)):
        def replace(self, target, error=error):
            raise error

        monkeypatch.setattr(Path, "replace", replace)
        assert _main(["run", "--protocol", "ci", "--out", str(out)]) == code
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("bench.perop: ")
        assert list(tmp_path.iterdir()) == []


def test_an_interrupted_repeat_keeps_the_runs_that_ended(tmp_path, capsys, monkeypatch) -> None:
    _fake_measuring(monkeypatch, interrupt_at=2)
    folder = tmp_path / "r"
    assert _main(["repeat", "--dir", str(folder), "--protocol", "ci"]) == 130
    assert capsys.readouterr().err.endswith("  run 2 of 3\nbench.perop: interrupted\n")
    assert sorted(p.name for p in folder.iterdir()) == ["run-1.json"]
