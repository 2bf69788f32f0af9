"""The agree / disagree / undecided verdict of an interval against a band, shared by the
per-op suite (bench/perop_stats.py) and the report's fidelity section: one rule, so a verdict
means the same wherever statebench prints one."""

from __future__ import annotations


def verdict(lo: float, hi: float, band: float) -> str:
    """agree when the whole interval lies within [1/band, band], disagree when it lies wholly
    outside, undecided when it straddles an edge."""
    if lo >= 1 / band and hi <= band:
        return "agree"
    if hi < 1 / band or lo > band:
        return "disagree"
    return "undecided"
