"""How the Johnson S_U fits of aₖ and sₖ appear in a table: their parameters where those
describe the fit, otherwise the limit the fit reached, or why there is none (issue 52: the page
across configurations printed a scale of 3 ns beside a shape a of 24, numbers that mean nothing
at a limit of the family).

The forms of a fit (:func:`form`):

* ``Johnson S_U``: an ordinary fit; its four parameters, times rounded to the clock's
  resolution (1 ns) in the CSV as on the page.
* ``normal limit``: the fit ran off to a → −∞, b → ∞ (``ParameterFits.lower_normal`` /
  ``span_normal``); the Monte Carlo draws from the normal of the data's mean and standard
  deviation, shown as loc and scale (a normal's own parameters); a and b have no value.
* ``lognormal limit``: the scale is below ``LIMIT_RATIO`` of the fitted distribution's own
  standard deviation. As the scale goes to 0 with scale·e^(|a|/b) fixed, S_U tends to a
  shifted lognormal, loc ± (scale/2)·e^(|Z − a|/b) for large |a|: only b, loc and that product
  are determined, so a and the scale are not shown (the optimiser stops anywhere on that
  ridge).
* ``failed (<status>)``: the fitting engine did not verify the fit.
* ``no fit``: too few iterations, or a constant sample (P = 1: every sₖ is 0).

Pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ksptrace.studies.variability.conclusions.findings import fmt_time
from ksptrace.studies.variability.stats.fitting import JohnsonSU
from ksptrace.studies.variability.stats.montecarlo import NormalLimit, ParameterFits
from ksptrace.trace.model import MIN_ITERATION_SECONDS

PARAMS = ("a", "b", "loc", "scale")
VARIABLES = ("a_k", "s_k")
COLUMNS = tuple(c for v in VARIABLES for c in (
    f"{v}_fit", *(f"{v}_{p}" + ("_s" if p in ("loc", "scale") else "") for p in PARAMS)))
"""Per variable: the fit's form, then scipy's a, b, loc and scale (loc and scale in seconds)."""
LIMIT_RATIO = 1e-3
"""A scale below this share of the distribution's standard deviation: the lognormal limit."""
NORMAL, LOGNORMAL, JSU, NONE = "normal limit", "lognormal limit", "Johnson S_U", "no fit"
NOTES = {
    NORMAL: "normal limit: the fit ran off to the family's normal limit (a → −∞, b → ∞); loc "
            "and scale are the mean and standard deviation of the normal the Monte Carlo draws "
            "from.",
    LOGNORMAL: "lognormal limit: the scale is below 1/1000 of the fitted distribution's "
               "spread, where S_U is a shifted lognormal and only b, loc and scale·e^(|a|/b) "
               "are determined, so a and the scale are not shown.",
}
"""What each limit means, under a table that shows it."""


def scale_share(fit: JohnsonSU) -> float:
    """The fit's scale over its distribution's standard deviation (a function of a and b only:
    √2 / √(expm1(1/b²)·(e^(1/b²)·cosh(2a/b) + 1))), computed in logs so that no shape
    overflows; 0 for a shape whose spread is infinite."""
    w = 1.0 / fit.b ** 2
    x = abs(2.0 * fit.a / fit.b)
    log_cosh = x + math.log1p(math.exp(-2.0 * x)) - math.log(2.0)
    log_var_over_scale2 = (-math.log(2.0) + math.log(math.expm1(w))
                           + _logaddexp(w + log_cosh, 0.0))
    return math.exp(-0.5 * log_var_over_scale2)


def _logaddexp(x: float, y: float) -> float:
    high = max(x, y)
    return high + math.log1p(math.exp(min(x, y) - high))


def form(fit: JohnsonSU, normal: NormalLimit | None) -> str:
    """What the fit is: one of the module's forms."""
    if normal is not None:
        return NORMAL
    if fit.status not in ("ok", "boundary"):
        return f"failed ({fit.status})"
    if not (all(math.isfinite(v) for v in fit.params) and fit.b > 0 and fit.scale > 0):
        return "failed (parameters not finite)"
    if scale_share(fit) < LIMIT_RATIO:
        return LOGNORMAL
    return JSU


RESOLUTION_DIGITS = round(-math.log10(MIN_ITERATION_SECONDS))
"""Decimal places of a time in seconds at the clock's resolution (9: 1 ns)."""


def _time(seconds: float) -> float:
    """Seconds rounded to the clock's resolution (whole nanoseconds, written without binary
    noise)."""
    return round(seconds, RESOLUTION_DIGITS)


def values(fit: JohnsonSU | None, normal: NormalLimit | None
           ) -> tuple[str, tuple[float | None, ...]]:
    """The form and the parameters (a, b, loc, scale) a table gives, None where none is."""
    if fit is None:
        return NONE, (None,) * 4
    kind = form(fit, normal)
    if kind == NORMAL and normal is not None:
        return kind, (None, None, _time(normal.mean), _time(normal.std))
    if kind == LOGNORMAL:
        return kind, (None, fit.b, _time(fit.loc), None)
    if kind == JSU:
        return kind, (fit.a, fit.b, _time(fit.loc), _time(fit.scale))
    return kind, (None,) * 4


def _both(p: ParameterFits | None) -> list[tuple[str, tuple[float | None, ...]]]:
    if p is None:
        return [values(None, None)] * 2
    return [values(p.lower, p.lower_normal), values(p.span, p.span_normal)]


def csv_cells(p: ParameterFits | None) -> dict[str, Any]:
    """The CSV cells of :data:`COLUMNS` for one run's fits."""
    out: list[Any] = []
    for kind, params in _both(p):
        out += [kind, *params]
    return dict(zip(COLUMNS, out, strict=True))


def shown_cells(p: ParameterFits | None) -> dict[str, str]:
    """The same cells as text for the page (times in the unit that suits them, never finer
    than 1 ns; the form in place of a parameter a limit leaves undetermined)."""
    out: dict[str, str] = {}
    for v, (kind, params) in zip(VARIABLES, _both(p), strict=True):
        out[f"{v}_fit"] = kind
        for name, value in zip(PARAMS, params, strict=True):
            if value is None:
                text = "—" if kind in (NORMAL, LOGNORMAL) else kind
            elif name in ("loc", "scale"):
                text = fmt_time(value)
            else:
                text = f"{value:.4g}"
            out[f"{v}_{name}"] = text
    return out


def notes(fits: Iterable[ParameterFits | None]) -> tuple[str, ...]:
    """What the limits a table shows mean (:data:`NOTES`), each once."""
    kinds = {kind for p in fits for kind, _ in _both(p)}
    return tuple(text for kind, text in NOTES.items() if kind in kinds)
