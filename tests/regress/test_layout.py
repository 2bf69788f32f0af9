"""The interpreter's layout is drawn per pair of processes, the same on both sides of a pair.

A commit that only added unused classes read 1.085x on ``state/heap/ttl_nobg/reducing_add``
in every pair alike (CPython's attribute cache: which lookups collide depends on the classes
made before), and the check called it a regression. Drawing the layout per pair turns that bias
into spread between pairs. These tests pin the mechanism: the worker makes the classes it is
told to before the revision is imported, and the coordinator tells both workers of a pair the
same number and different pairs different numbers, from the check's seed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from workloads.regress import pairs as P

ROOT = Path(__file__).resolve().parents[2]


def test_a_worker_makes_the_layouts_classes_before_it_answers(tmp_path: Path) -> None:
    rev = P.Revision("A", ROOT, "this checkout")
    for layout in (0, 37):
        worker = P.Worker(rev, {}, tmp_path, layout)
        try:
            assert worker.ready["layout"] == layout
        finally:
            worker.close()


class _Recorder:
    """A worker that answers at once and records the layout it was started with."""

    started: list[tuple[str, int]] = []

    def __init__(self, rev: P.Revision, scenario: dict[str, Any], log_dir: Path,
                 layout: int = 0) -> None:
        self.started.append((rev.label, layout))
        self._req: dict[str, Any] = {}

    def send(self, req: dict[str, Any]) -> None:
        self._req = req

    def receive(self) -> dict[str, Any]:
        return {"ns": 5_000_000} if self._req.get("cmd") == "run" else {"ok": True}

    def ask(self, req: dict[str, Any]) -> dict[str, Any]:
        self.send(req)
        return self.receive()

    def close(self) -> None:
        pass


def _layouts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, seed: int) -> list[list[int]]:
    monkeypatch.setattr(P, "Worker", _Recorder)
    _Recorder.started = []
    a, b = P.Revision("A", tmp_path, "a"), P.Revision("B", tmp_path, "b")
    P.measure(a, b, ["state/heap/plain/value_get"], 8, lambda _: 2, P.INTERLEAVED, seed, {},
              tmp_path)
    started = _Recorder.started
    return [[layout for _, layout in started[i:i + 2]] for i in range(0, len(started), 2)]


def test_both_sides_of_a_pair_share_a_layout_and_pairs_draw_their_own(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    per_pair = _layouts(monkeypatch, tmp_path, seed=7)
    assert len(per_pair) == 8
    assert all(a == b for a, b in per_pair)
    firsts = [a for a, _ in per_pair]
    assert len(set(firsts)) >= 6  # 8 draws from 4096 offsets
    assert all(0 <= x < P.LAYOUTS for x in firsts)
    assert _layouts(monkeypatch, tmp_path, seed=7) == per_pair  # the seed repeats the check
    assert _layouts(monkeypatch, tmp_path, seed=8) != per_pair
