"""The moments scipy starts a fit from are scipy's to the bit when the lean integrand computes
them, and are computed once per process."""

from __future__ import annotations

import numpy as np
import pytest
import scipy
import scipy.stats as st

from ksptrace.studies.variability import fastnll, startmoments

CHECKED = pytest.mark.skipif(not scipy.__version__.startswith(fastnll.CHECKED_SCIPY),
                             reason=f"the integrand follows scipy {fastnll.CHECKED_SCIPY}, not "
                                    f"{scipy.__version__} (scipy's own is used)")


def _bits(values: tuple[object, ...]) -> list[bytes]:
    return [np.float64(v).tobytes() for v in values]


@CHECKED
@pytest.mark.parametrize(("name", "shapes"), [
    ("johnsonsu", (1.0, 1.0)), ("johnsonsu", (-0.7, 2.5)), ("exponweib", (1.0, 1.0)),
    ("exponweib", (2.3, 0.6)), ("johnsonsu", (1.0, -1.0))])
def test_the_lean_integrand_gives_scipys_moments_to_the_bit(
        name: str, shapes: tuple[float, ...]) -> None:
    dist = getattr(st, name)
    want = dist.stats(*shapes, moments="mv")
    calls: list[float] = []
    lean = startmoments._lean_integrand(dist)

    def counted(q: float, m: object, *args: object) -> object:
        calls.append(q)
        return lean(q, m, *args)

    dist._mom_integ1 = counted
    try:
        got = dist.stats(*shapes, moments="mv")
    finally:
        del dist._mom_integ1
    assert _bits(got) == _bits(want), (got, want)
    assert bool(calls) == (shapes[-1] > 0)  # an invalid shape is answered without integrating


@CHECKED
def test_remembered_moments_integrate_once_with_the_lean_integrand(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(startmoments, "_MOMENTS", {})
    dist = st.johnsonsu
    want = dist.stats(1.0, 1.0, moments="mv")
    seen: list[str] = []
    real = startmoments._lean_integrand

    def spy(d: object) -> object:
        seen.append("lean")
        return real(d)

    monkeypatch.setattr(startmoments, "_lean_integrand", spy)
    for _ in range(3):
        with startmoments.remembered_moments(dist):
            assert _bits(dist.stats(1.0, 1.0, moments="mv")) == _bits(want)
    assert seen == ["lean"]
    assert "_mom_integ1" not in vars(dist)
    assert "stats" not in vars(dist)


def test_another_scipy_keeps_scipys_integrand(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(startmoments.scipy, "__version__", "9.9.9")
    dist = st.exponweib
    with startmoments._lean(dist):
        assert "_mom_integ1" not in vars(dist)
