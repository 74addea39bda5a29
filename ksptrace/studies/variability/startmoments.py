"""scipy starts a maximum-likelihood fit from the family's mean and variance at its default
shapes (``rv_continuous.fit_loc_scale``). For families without closed-form moments
(johnsonsu, exponweib) it integrates them numerically on every fit: 0.1 s each, the same two
numbers every time. :func:`remembered_moments` computes each such pair once per process while a
fit runs; the fit itself, and every number it returns, is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

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
            _MOMENTS[key] = original(*args, **kwds)
        return _MOMENTS[key]

    dist.stats = stats
    try:
        yield
    finally:
        del dist.stats  # the class's method again
