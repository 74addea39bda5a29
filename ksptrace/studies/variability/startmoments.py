"""scipy starts a maximum-likelihood fit from the family's mean and variance at its default
shapes (``rv_continuous.fit_loc_scale``). For families without closed-form moments
(johnsonsu, exponweib) it integrates them numerically on every fit: 0.1 s each, the same two
numbers every time. :func:`remembered_moments` computes each such pair once per process while a
fit runs; the fit itself, and every number it returns, is unchanged.

The one computation left (about 0.09 s a process, a fortieth of a demo analysis) integrates
``ppf(q) ** m`` over (0, 1) with ``quad``, and scipy's generic ``ppf`` checks and broadcasts its
arguments at each of the thousand or so points. With the scipy release that was checked
(``fastnll.CHECKED_SCIPY``) the integrand is :func:`_lean_integrand` instead: the family's own
``_ppf`` on the one-element arrays scipy's ``ppf`` hands it, times the integer scale 1 plus the
integer loc 0, as scipy does, so the same bits (``tests/studies/variability/test_startmoments.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import scipy

from ksptrace.studies.variability.fastnll import CHECKED_SCIPY

_MOMENTS: dict[tuple[str, tuple[Any, ...], tuple[tuple[str, Any], ...]], Any] = {}


def _key(name: str, args: tuple[Any, ...], kwds: dict[str, Any]) -> tuple[Any, ...] | None:
    try:
        key = (name, tuple(float(a) for a in args), tuple(sorted(kwds.items())))
        hash(key)
    except (TypeError, ValueError):  # an array of shapes: not remembered
        return None
    return key


@contextmanager
def remembered_moments(dist: Any) -> Iterator[None]:
    """Within the block, ``dist.stats`` answers a repeated question from memory."""
    original: Callable[..., Any] = dist.stats

    def stats(*args: Any, **kwds: Any) -> Any:
        key = _key(dist.name, args, kwds)
        if key is None:
            return original(*args, **kwds)
        if key not in _MOMENTS:
            with _lean(dist):
                _MOMENTS[key] = original(*args, **kwds)
        return _MOMENTS[key]

    dist.stats = stats
    try:
        yield
    finally:
        del dist.stats  # the class's method again


_ONE, _ZERO = np.array([1]), np.array([0])


def _lean_integrand(dist: Any) -> Callable[..., Any]:
    """``dist._mom_integ1``: ``dist.ppf(q, *shapes) ** m`` for q inside (0, 1) and valid shapes
    (where scipy's ``ppf`` ends in ``_ppf(q, *shapes) * scale + loc`` on one-element arrays)."""
    ppf = dist._ppf

    def integrand(q: float, m: Any, *shapes: Any) -> Any:
        value = ppf(np.atleast_1d(np.asarray(q)), *(np.atleast_1d(np.asarray(s)) for s in shapes))
        return (value * _ONE + _ZERO)[0] ** m
    return integrand


@contextmanager
def _lean(dist: Any) -> Iterator[None]:
    """Within the block, ``dist``'s ppf moments integrate :func:`_lean_integrand` (with the
    checked scipy release and shapes that pass the family's check; else scipy's own)."""
    if not scipy.__version__.startswith(CHECKED_SCIPY) or "_mom_integ1" in vars(dist):
        yield
        return
    dist._mom_integ1 = _lean_integrand(dist)
    try:
        yield
    finally:
        del dist._mom_integ1
