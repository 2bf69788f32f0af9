"""The per-op repeatability prediction (bench/perop_repeat.py) on synthetic runs whose spread
and drift are known: it recovers them, and its verdicts follow from them."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bench import perop
from bench.perop_repeat import SideFit, fit, predict, report

PROTOCOL = {"name": "lean", "forks": 3, "workers": 3, "jvm_iterations": 3, "py_values": 3}


def _run(cells: dict[str, dict[str, float]], rng: np.random.Generator, processes: int = 3,
         rounds: int = 3) -> dict:
    """One run's document: per cell (op name) and side, a level (log of TTL / off), a drift
    (this run's offset is drawn once), a process spread and a per-round spread."""
    rates = []
    for op, spec in cells.items():
        for side in ("statebench", "flink"):
            offset = rng.normal(0, spec.get("drift", 0.0))
            proc = rng.normal(0, spec.get("process", 0.0), (processes, 1))
            noise = rng.normal(0, spec.get("round", 0.0), (processes, rounds))
            level = spec[side] + offset + proc + noise
            off = np.full((processes, rounds), 1e6)
            for ttl, values in (("off", off), ("on", off * np.exp(level))):
                rates.append({"side": side, "backend": "heap", "ttl": ttl, "op": op,
                              "values": {"cpu": values.tolist()}})
    return {"schema": perop.SCHEMA, "clock": "cpu", "protocol": PROTOCOL, "rates": rates}


def _runs(cells: dict, n: int = 3, seed: int = 1, **kw) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [_run(cells, rng, **kw) for _ in range(n)]


def test_fit_recovers_the_levels_and_splits_round_noise_from_process_spread() -> None:
    cells = {"calm": {"statebench": math.log(0.5), "flink": math.log(0.25), "round": 0.1}}
    fitted = fit(_runs(cells, n=6, processes=12, rounds=12))[("heap", "on", "calm")]
    assert fitted["statebench"].level == pytest.approx(math.log(0.5), abs=0.03)
    assert fitted["flink"].level == pytest.approx(math.log(0.25), abs=0.03)
    for side in fitted.values():
        assert side.round == pytest.approx(0.1, rel=0.25)
        assert side.process < 0.05 and side.drift < 0.05


def test_a_cell_far_inside_the_band_repeats_and_one_on_its_edge_cannot() -> None:
    cells = {"inside": {"statebench": 0.0, "flink": 0.0, "round": 0.02},
             "edge": {"statebench": math.log(1.5), "flink": 0.0, "drift": 0.1, "round": 0.02}}
    fits = fit(_runs(cells, n=4))
    own = predict(fits, 3, 3, 3, 3, draws=100)
    ceiling = predict(fits, 200, 200, 3, 3, draws=40)
    assert own["repeat_by_cell"]["heap/on/inside"] == 1.0
    # on the edge, more processes cannot help: the drift moves it across from run to run
    assert ceiling["repeat_by_cell"]["heap/on/edge"] < 0.6
    assert own["cells"] == 2 and own["bar"] == 2 and own["bar_met_share"] < 0.6


def test_more_rounds_decide_a_cell_whose_spread_is_round_noise() -> None:
    noisy = SideFit(level=0.0, drift=0.0, process=0.0, round=0.25)
    fits = {("heap", "on", "noisy"): {"statebench": noisy, "flink": noisy}}
    few = predict(fits, 3, 3, 3, 3, draws=200)["repeat_by_cell"]["heap/on/noisy"]
    many = predict(fits, 3, 3, 60, 60, draws=200)["repeat_by_cell"]["heap/on/noisy"]
    assert few < 0.8 and many == 1.0  # decided in some runs only, then in every run


def test_report_and_command_line_refuse_what_they_cannot_use(capsys, tmp_path) -> None:
    runs = _runs({"a": {"statebench": 0.0, "flink": 0.0, "round": 0.05}}, n=2)
    out = report(runs, [(4, 4, 6, 6)], draws=20)
    assert out["own"]["forks"] == 3 and out["options"][0]["rounds"] == [6, 6]
    with pytest.raises(ValueError, match="at least two runs"):
        fit(runs[:1])
    other = dict(runs[1], protocol=dict(PROTOCOL, forks=5))
    with pytest.raises(ValueError, match="one protocol"):
        fit([runs[0], other])
    with pytest.raises(SystemExit):
        perop.main(["predict", "x.json", "--option", "3,3,0,3"])
    assert "four integers >= 1" in capsys.readouterr().err
    files = []
    for i, doc in enumerate((runs[0], other)):
        files.append(tmp_path / f"{i}.json")
        files[-1].write_text(json.dumps(doc))
    assert perop.main(["predict", *map(str, files)]) == 2
    assert "one protocol" in capsys.readouterr().err


def test_a_pair_of_runs_shares_more_verdicts_than_a_triple() -> None:
    """A cell that flips does so less often over two runs than over three: what a pair of runs
    should share is predicted by the same model."""
    noisy = SideFit(level=math.log(1.4), drift=0.05, process=0.0, round=0.1)
    fits = {("heap", "on", "edge"): {"statebench": noisy, "flink": SideFit(0.0, 0.0, 0.0, 0.1)}}
    pair = predict(fits, 3, 3, 9, 9, runs=2, draws=300)["repeat_by_cell"]["heap/on/edge"]
    triple = predict(fits, 3, 3, 9, 9, runs=3, draws=300)["repeat_by_cell"]["heap/on/edge"]
    assert 0.0 < triple < pair < 1.0
    runs = _runs({"a": {"statebench": 0.0, "flink": 0.0, "round": 0.05}}, n=2)
    assert report(runs, [], draws=10, runs=2)["simulated_runs"] == 2
    with pytest.raises(ValueError, match="at least two runs"):
        report(runs, [], draws=10, runs=1)


def test_repeat_writes_each_run_and_their_comparison_and_refuses_an_earlier_repeat(
        tmp_path, capsys) -> None:
    """`repeat` writes run-1..N and compare.json; a folder that holds a repeat already is
    refused before any run (runs of another hour are not back to back), as is a file."""
    made = []

    def fake_run(protocol, out, clock):
        doc = {"schema": perop.SCHEMA, "protocol": {"name": protocol.name}, "load": [0, 0, 0],
               "rates": [], "cells": [{"backend": "heap", "ttl": "on", "op": "value_get",
                                       "verdict": "agree", "ratio": {"value": 1.0}}]}
        out.write_text(json.dumps(doc))
        made.append(out.name)
        return doc

    folder = tmp_path / "wide"
    result = perop.repeat(perop.PROTOCOLS["ci"], 2, folder, measure_run=fake_run)
    assert made == ["run-1.json", "run-2.json"]
    assert result["runs"] == 2 and result["same_verdict"] == 1
    assert json.loads((folder / "compare.json").read_text()) == result
    with pytest.raises(ValueError, match=r"already holds a repeat \(run-1\.json"):
        perop.repeat(perop.PROTOCOLS["ci"], 2, folder, measure_run=fake_run)
    with pytest.raises(ValueError, match="at least two runs"):
        perop.repeat(perop.PROTOCOLS["ci"], 1, tmp_path / "one", measure_run=fake_run)
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="is not a folder"):
        perop.repeat(perop.PROTOCOLS["ci"], 2, tmp_path / "file", measure_run=fake_run)
    assert made == ["run-1.json", "run-2.json"]  # nothing measured for a refused repeat
    assert perop.main(["repeat", "--dir", str(folder), "--protocol", "ci"]) == 2
    assert "already holds a repeat" in capsys.readouterr().err
