"""Which level changes in a metric's history across commits are worth naming a commit for.

A history is one metric's values in commit order (None where a commit has none). It arrives
already cut into constant pieces, as asv's step detection (``asv.step_detect.detect_steps``,
what asv's published site draws) gives them: ``(left, right, level, minimum, error)``, ``left``
inclusive and ``right`` exclusive positions in the history. This module only decides which
boundaries between pieces are change points, so the rule can be read and tested apart from asv
(which statebench does not install; ``bench/changepoints.py`` runs it on asv's results):

* **measured** histories (times, ratios, sizes that move with background work) report a
  change only between two pieces of at least :data:`MIN_PIECE` commits each, whose levels
  differ by more than the unit's minimum relative change (:func:`min_change`). A one-commit
  piece is a blip until a second commit confirms it, and the step detector does not know how
  large a change matters.
* **exact** histories (counts that the same code and seed reproduce to the unit, see
  :func:`is_exact`) report every change, one commit being enough: nothing but a commit moves them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

#: asv's piece: (left, right, level, minimum, error); positions index the history.
Piece = tuple[int, int, float, float, float]
#: Commits a measured piece needs on each side of a change.
MIN_PIECE = 2
#: The least relative change reported per unit of a measured history. A same-process ratio
#: cancels the machine's level (bench/bench_ratios.py), so what is left is the op's own noise;
#: an absolute time also carries the machine's, so it needs more.
MIN_CHANGE = {"ratio": 0.05, "seconds": 0.10}
#: Any other measured unit (bytes of a timing-dependent size, ...).
DEFAULT_MIN_CHANGE = 0.05
#: Units that are never exact: a time or a quotient of times.
TIMED_UNITS = frozenset(MIN_CHANGE)


@dataclass(frozen=True)
class ChangePoint:
    """A change of level between two pieces of a history.

    ``first_after`` is the first position of the piece after the change, ``last_before`` the
    last of the piece before it (a position without a value or a skipped blip may lie between:
    the change is then somewhere in ``(last_before, first_after]``)."""

    last_before: int
    first_after: int
    before: float
    after: float

    @property
    def ratio(self) -> float:
        """after / before (inf from a level of 0)."""
        if self.before == 0:
            return math.inf if self.after else 1.0
        return self.after / self.before


def min_change(unit: str, exact: bool) -> float:
    """The least relative change reported for a history in ``unit``: 0 for an exact one (any
    change), else :data:`MIN_CHANGE` or :data:`DEFAULT_MIN_CHANGE`."""
    if exact:
        return 0.0
    return MIN_CHANGE.get(unit, DEFAULT_MIN_CHANGE)


def _present(values: Sequence[float | None]) -> list[tuple[int, float]]:
    return [(i, v) for i, v in enumerate(values) if v is not None and not math.isnan(v)]


def is_exact(unit: str, values: Sequence[float | None]) -> bool:
    """Whether a history is an exact count. asv's results do not say (whether a statebench
    metric is exact depends on its backend, strategy and clock:
    ``workloads.report.metrics.class_of``), so the history shows it: a count in whole units
    that repeats to the unit from most commits to the next. A timing-dependent size (RocksDB's
    files) differs by some bytes at every commit; a time or ratio is never exact."""
    if unit in TIMED_UNITS:
        return False
    present = [v for _, v in _present(values)]
    if len(present) < 2 or any(v != int(v) for v in present):
        return False
    repeats = sum(a == b for a, b in itertools.pairwise(present))
    return repeats * 2 >= len(present) - 1


def exact_pieces(values: Sequence[float | None]) -> list[Piece]:
    """An exact history's pieces: its runs of equal values, in asv's format. asv's detector
    gives the same on a noiseless history except at its last commit, which it reads as an
    outlier; a count has no outliers."""
    pieces: list[Piece] = []
    start = last = None
    level = 0.0
    for i, v in _present(values):
        if start is not None and v != level:
            pieces.append((start, last + 1, level, level, 0.0))
            start = None
        if start is None:
            start, level = i, v
        last = i
    if start is not None:
        pieces.append((start, last + 1, level, level, 0.0))
    return pieces


def change_points(values: Sequence[float | None], pieces: Sequence[Piece],
                  least: float, min_piece: int = MIN_PIECE) -> list[ChangePoint]:
    """The changes between consecutive pieces of at least ``min_piece`` commits with a value
    whose levels differ by more than ``least`` (relative to the earlier level; for an exact
    history ``least`` is 0 and ``min_piece`` 1). Shorter pieces are skipped over: a blip that
    returns to the level around it is no change, one that does not is part of the change."""
    present = {i for i, _ in _present(values)}
    kept = [p for p in pieces if sum(1 for i in range(p[0], p[1]) if i in present) >= min_piece]
    found = []
    for (_, right, before, _, _), (left, _, after, _, _) in itertools.pairwise(kept):
        change = abs(after - before) / abs(before) if before else (math.inf if after else 0.0)
        if change > least:
            last_before = max(i for i in present if i < right)
            found.append(ChangePoint(last_before, left, before, after))
    return found
