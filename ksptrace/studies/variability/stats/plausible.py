"""Which numbers a report may print (issue 52): an error beyond ±ABSURD_PCT % is no estimate of
anything but a failed model, prediction or fit, and is reported as failed with its reason, never
as a percentage. A cost, variance or time below zero is likewise a failed estimate ("cannot
tell"). Pure: numbers in, numbers or words out.
"""

from __future__ import annotations

import math

ABSURD_PCT = 1000.0
"""An error beyond ±1000 % (a model off by more than 11×) is a failure, not a number."""
FAILED = "failed"


def plausible_pct(pct: float | None) -> float | None:
    """``pct`` when it is a finite error within ±ABSURD_PCT %, else None."""
    if pct is None or not math.isfinite(pct) or abs(pct) > ABSURD_PCT:
        return None
    return pct


def is_absurd(pct: float | None) -> bool:
    """Whether ``pct`` is an error that must be reported as failed (beyond ±ABSURD_PCT %, or
    not finite); None (no value) is not."""
    return pct is not None and plausible_pct(pct) is None


def off_by(ratio: float) -> str:
    """How far ``value / reference`` is from 1 in words: "+34 %", or, beyond ±ABSURD_PCT %,
    "failed: more than 11× above" without the percentage."""
    pct = 100.0 * (ratio - 1.0)
    if plausible_pct(pct) is not None:
        return f"{pct:+.0f} %"
    if not math.isfinite(ratio):
        return f"{FAILED}: not a finite value"
    if ratio < 0:
        return f"{FAILED}: below zero"
    return f"{FAILED}: more than {1.0 + ABSURD_PCT / 100.0:.0f}× above"


def montecarlo_status(value: float, measured: float) -> str:
    """A simulated runtime's status against the measured one: "ok", or "failed: <why>" when it
    is not finite or more than ±ABSURD_PCT % off (then it is printed nowhere, issue 63)."""
    if not math.isfinite(value):
        return f"{FAILED}: not a finite value"
    if value < 0:
        return f"{FAILED}: below zero"
    if is_absurd(100.0 * (value - measured) / measured):
        return (f"{FAILED}: more than {1.0 + ABSURD_PCT / 100.0:.0f}× "
                f"{'above' if value > measured else 'below'} the measured time")
    return "ok"
