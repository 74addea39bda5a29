"""Numbers in prose: times in the unit that suits them and ratios with the digits their range
needs, never in e-notation and never with more than about four significant digits (issue 63:
the report printed "1.00014 ×" and "6.52e+03 µs").

A time is rounded first and its unit chosen after, so 999.96 µs reads "1 ms", not "1e+03 µs";
a negative time takes the unit of its size. A ratio whose range over blocks needs more decimals
than four significant digits allow is given as its excess over 1 in per cent ("+0.31 %"),
whose digits are few. Pure: numbers in, strings out.
"""

from __future__ import annotations

import math

import numpy as np

UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6))
MAX_DIGITS = 4
"""A ratio is printed with at most this many significant digits."""


def significant(value: float, digits: int) -> str:
    """``value`` rounded to ``digits`` significant digits, positional (no e-notation), trailing
    zeros dropped as ``g`` drops them: 1500 -> '1500', 0.000123 -> '0.000123'."""
    if not math.isfinite(value):
        return str(value)
    return str(np.format_float_positional(value, precision=digits, unique=True, fractional=False,
                                          trim="-"))


def seconds_text(seconds: float, digits: int = 4) -> str | None:
    """``seconds`` in s, ms or µs with ``digits`` significant digits, the unit chosen after
    rounding; None below 1 µs (the caller says it in ns) and for a non-finite value."""
    if not math.isfinite(seconds):
        return None
    size = abs(seconds)
    if size == 0.0:
        return "0 s"
    for unit, factor in UNITS:
        rounded = float(f"{size / factor:.{digits}g}")
        if rounded >= 1.0:
            return f"{'-' if seconds < 0 else ''}{significant(rounded, digits)} {unit}"
    return None


def fixed_places(width: float) -> int:
    """Decimals that show two significant digits of a range ``width`` (two when it is 0)."""
    return 2 if not width > 0 else max(2, 1 - math.floor(math.log10(width) + 1e-9))


def ratio_range(estimate: float, low: float, high: float, of: str) -> str:
    """A ratio of ``of`` with its range: '1.52 × (blocks 1.31 to 1.74) K·mean' when four
    significant digits show the range, else its excess over 1 in per cent: 'K·mean + 0.31 %
    (blocks +0.10 % to +0.43 %)' (not '1.0031 × (blocks 1.0010 to 1.0043)')."""
    size = max(abs(estimate), abs(low), abs(high))
    cap = max(0, MAX_DIGITS - 1 - math.floor(math.log10(size))) if size else MAX_DIGITS
    places = fixed_places(high - low)
    if places <= cap or abs(estimate - 1.0) >= 0.1:  # four digits show it, or it is not near 1
        places = min(places, cap)
        return (f"{estimate:.{places}f} × (blocks {low:.{places}f} to {high:.{places}f}) "
                f"{of}")
    pct = [100.0 * (v - 1.0) for v in (estimate, low, high)]
    top = max(abs(v) for v in pct)
    p = min(fixed_places(pct[2] - pct[1]), MAX_DIGITS - 1 - math.floor(math.log10(top)))
    sign = "−" if pct[0] < 0 else "+"
    shown = [f"{v:+.{p}f} %".replace("-", "−") for v in pct[1:]]
    return f"{of} {sign} {abs(pct[0]):.{p}f} % (blocks {shown[0]} to {shown[1]})"
