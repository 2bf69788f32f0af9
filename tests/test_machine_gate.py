"""The per-op suite's machine gate: which rounds it keeps, retakes or keeps although slow, and
that a statebench worker's op still gives every measured round when the gate retakes some."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import pytest

from bench import machine_gate as mg
from bench.flink_ops import LEAN, MODES, _Backend, statebench_op


class ScriptedGate(mg.MachineGate):
    """A real gate whose probe rates after calibration come from a script (the machine's speed
    cannot be ordered), then stay at `rest`."""

    def __init__(self, script: Iterable[float], rest: float = 1.0, **kw) -> None:
        self._script = list(script)
        self._rest = rest
        self._scripted = False
        super().__init__(1_000, calibration=0, **kw)
        self.rates = [1.0] * 10  # the reference: speed 1.0
        self._scripted = True

    def probe(self) -> float:
        if not self._scripted:
            return super().probe()
        rate = self._script.pop(0) if self._script else self._rest
        self.rates.append(rate)
        return rate


def test_a_probe_below_the_floor_of_the_reference_is_slow() -> None:
    g = ScriptedGate([])
    assert g.reference == pytest.approx(1.0)
    assert g.fast(0.75) and not g.fast(0.65)
    seeded = ScriptedGate([], reference=2.0)  # an earlier worker saw the machine twice as fast
    assert not seeded.fast(1.0)


def test_the_reference_is_a_high_quantile_not_one_fast_outlier() -> None:
    g = ScriptedGate([])
    g.rates = [1.0] * 19 + [5.0]
    assert g.reference == pytest.approx(1.0)


def test_a_slow_round_is_retaken_while_retakes_last_then_kept_and_counted() -> None:
    g = ScriptedGate([])
    assert g.settle(True, retakes_left=False)
    assert not g.settle(False, retakes_left=True)
    assert g.settle(False, retakes_left=False)
    assert (g.counts.retaken, g.counts.slow_kept) == (1, 1)


def test_wait_returns_once_the_machine_is_back_and_gives_up_after_its_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    g = ScriptedGate([0.3, 0.4, 0.9])
    slept: list[float] = []
    assert g.wait(sleep=slept.append)
    assert len(slept) == 2
    monkeypatch.setattr(mg, "WAIT_S", 0.0)
    never = ScriptedGate([], rest=0.2)
    assert not never.wait(sleep=slept.append)
    assert never.counts == mg.GateCounts()  # waiting retakes and keeps nothing


def test_a_real_probe_measures_dict_updates_per_cpu_second() -> None:
    g = mg.MachineGate(2_000, calibration=3)
    assert len(g.rates) == 3 and all(r > 1e5 for r in g.rates)
    # check() is the verdict of the probe it just took against the reference, whatever the
    # machine did meanwhile (the reference includes that probe): fast() on that probe's rate
    verdict = g.check()
    assert len(g.rates) == 4
    assert verdict is (g.rates[-1] >= g.floor * g.reference)
    # and the floor decides it: a real probe always clears a floor of 0, never one of 10^9
    assert mg.MachineGate(2_000, calibration=2, floor=0.0).check() is True
    assert mg.MachineGate(2_000, calibration=2, floor=1e9).check() is False


def test_the_cache_probe_reads_a_larger_dict_and_decides_nothing() -> None:
    g = mg.MachineGate(2_000, calibration=0)
    assert g.cache_probe() > 1e5
    assert len(g.cache_rates) == 1 and g.rates == []  # not part of the gate's reference
    assert g.counts == mg.GateCounts()
    assert len(g._cache._d) == mg.CACHE_PROBE_SCALE * 2_000
    with pytest.raises(RuntimeError, match="without a cache probe"):
        mg.MachineGate(2_000, calibration=0, cache_keys=0).cache_probe()


def test_a_worker_op_retakes_the_slow_round_and_still_gives_every_round(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    protocol = replace(LEAN, keys=2_000, py_min_value_s=0.005)
    sb = _Backend("heap", "value", list(range(protocol.keys)), tmp_path)
    # the wait before round 1 and its first turn are fast, the second turn slow: retaken
    gate = ScriptedGate([1.0, 1.0, 0.2])
    runs = statebench_op(sb, "value_update", protocol, gate)
    assert set(runs) == set(MODES)
    for run in runs.values():
        assert len(run.cpu_rates) == len(run.rates) == protocol.py_values
        assert (run.retaken, run.slow_kept) == (1, 0)
    # one cache reading per kept round, the same for every mode (a round holds them all);
    # the retaken round's reading is dropped with it
    assert len(gate.cache_rates) == protocol.py_values + 1
    assert {tuple(run.cache) for run in runs.values()} == {tuple(gate.cache_rates[1:])}
    monkeypatch.setattr(mg, "WAIT_S", 0.0)
    always_slow = ScriptedGate([], rest=0.1)
    kept = statebench_op(sb, "value_get", protocol, always_slow)
    assert all(len(r.rates) == protocol.py_values for r in kept.values())
    # py_values retakes, then every round kept and counted as slow
    assert {(r.retaken, r.slow_kept) for r in kept.values()} == {
        (protocol.py_values, protocol.py_values)}
