"""Human-readable numbers.

Sizes use decimal SI prefixes (kB = 1000 B) so that tables agree with plotly's axis ticks,
which only know SI.  Three significant digits: benchmark numbers are noisier than that anyway.
"""

from __future__ import annotations

import math

MISSING = "—"
#: Typographic characters, named so the source stays unambiguous ASCII where it matters.
DASH = "\u2013"
TIMES = "\u00d7"

_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def _sig(x: float, digits: int = 3) -> str:
    """``x`` with ``digits`` significant digits and no scientific notation for normal sizes."""
    if x == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(x)))
    decimals = max(0, digits - 1 - magnitude)
    return f"{x:.{decimals}f}"


def si(x: float, suffix: str = "") -> str:
    """1234567 -> '1.23 M' (+ suffix)."""
    for scale, prefix in _SI:
        if abs(x) >= scale:
            return f"{_sig(x / scale)} {prefix}{suffix}".rstrip()
    return f"{_sig(x)} {suffix}".rstrip()


def _duration_us(us: float) -> str:
    if abs(us) >= 1e6:
        return f"{_sig(us / 1e6)} s"
    if abs(us) >= 1e3:
        return f"{_sig(us / 1e3)} ms"
    return f"{_sig(us)} µs"


def fmt_value(value: float | None, unit: str) -> str:
    """Format ``value`` measured in ``unit``; None/NaN become the missing marker."""
    if value is None or not math.isfinite(value):
        return MISSING
    if unit == "bytes":
        return si(value, "B")
    if unit == "us":
        return _duration_us(value)
    if unit == "ms":
        return _duration_us(value * 1e3)
    if unit in ("records/s", "ops/s"):
        return si(value, "/s")
    if unit == "share":  # a fraction 0..1 reads as a percentage
        return f"{_sig(value * 100)}%"
    if unit == "x":  # a factor such as write amplification
        return f"{_sig(value)}{TIMES}"
    if unit in ("entries", "count"):
        if abs(value) < 10_000 and float(value).is_integer():
            return f"{int(value):,}"
        return si(value)
    return si(value)


def fmt_range(lo: float, hi: float, unit: str) -> str:
    """'16.8-61.7 MB' rather than '16.8 MB-61.7 MB' when both ends share a suffix.

    A zero lower end (series that start empty) needs no unit: '0-61.7 MB'.
    """
    a, b = fmt_value(lo, unit), fmt_value(hi, unit)
    if lo == 0:
        return f"0{DASH}{b}"
    head_a, _, tail_a = a.rpartition(" ")
    head_b, _, tail_b = b.rpartition(" ")
    if head_a and head_b and tail_a == tail_b:
        return f"{head_a}{DASH}{head_b} {tail_a}"
    return f"{a}{DASH}{b}"


def iec_bytes(x: float) -> str:
    """Binary units for memory sizes, which machines report in powers of two: '24.0 GiB'."""
    for power, prefix in ((40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki")):
        if abs(x) >= 2**power:
            return f"{x / 2**power:.1f} {prefix}B"
    return f"{x:.0f} B"


def fmt_ratio(ratio: float | None) -> str:
    """b/a ratios: '1.23x'; missing or undefined ratios become the missing marker."""
    if ratio is None or not math.isfinite(ratio):
        return MISSING
    return f"{_sig(ratio)}{TIMES}"


def _fold(r: float) -> str:
    """A fold with three significant digits and no trailing zeros: 2.5, 18.5, 10, 1,250."""
    return f"{r:,.0f}" if r >= 1000 else f"{r:.3g}"


def compare_phrase(new: float, base: float, noun: str, up: str = "higher",
                   down: str = "lower") -> str:
    """``new`` relative to ``base`` in words a reader takes in at once, noun included.

    Small changes are percentages ('12% lower throughput'); from 2x on they are folds
    ('18.5x the p99 latency', '4.1x fewer entries'), never '1752% higher'. Changes under 1% are
    "about the same", because run-to-run noise is larger, so '1.0x more' cannot appear.
    """
    if base == 0:
        return f"{noun} above 0 (the baseline is 0)" if new > 0 else f"the same {noun} (0)"
    r = new / base
    if abs(r - 1.0) < 0.01:
        return f"about the same {noun}"
    if r >= 2:
        return f"{_fold(r)}{TIMES} the {noun}"
    if r > 1:
        return f"{(r - 1) * 100:.0f}% {up} {noun}"
    if r <= 0.5:
        return f"{_fold(1 / r)}{TIMES} {down} {noun}" if r > 0 else f"no {noun}"
    return f"{(1 - r) * 100:.0f}% {down} {noun}"


def _percent(share: float) -> str:
    """A percentage a reader takes in: '25%', '0.6%' (never '0%' for a real difference)."""
    pct = share * 100
    return f"{pct:.0f}%" if pct >= 1 else f"{pct:.1g}%"


def fold_phrase(fold: float | None, noun: str, worse: str) -> str:
    """A decided fold in words, worse side first: how a strategy ``fold`` times behind the
    leader reads ('25% lower throughput', '4.38x fewer stored entries', '45% more bytes'),
    from the very number the decision table prints (so the two cannot disagree). ``worse``:
    'lower' or 'fewer' (the other number is ``fold`` times larger), 'more' or 'higher' (this
    one is)."""
    if fold is None or not math.isfinite(fold) or fold <= 0:
        return f"{worse} {noun}"
    if fold >= 2:
        return f"{_fold(fold)}{TIMES} {worse} {noun}"
    share = 1 - 1 / fold if worse in ("lower", "fewer") else fold - 1
    return f"{_percent(share)} {worse} {noun}"


def connector(new: float, base: float) -> str:
    """The word joining a :func:`compare_phrase` to the baseline's name: 'about the same X as',
    '18.5x the X of', otherwise '12% lower X than'."""
    if base == 0:
        return " than "
    r = new / base
    if abs(r - 1.0) < 0.01:
        return " as "
    return " of " if r >= 2 else " than "
