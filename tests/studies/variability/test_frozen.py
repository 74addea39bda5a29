"""A fit's frozen distribution, made without a new instance of its family, answers every
question to the bit as scipy's own frozen distribution does."""

from __future__ import annotations

import numpy as np
import pytest
import scipy
import scipy.stats as st

from ksptrace.studies.variability import fastnll, fitting

CHECKED = pytest.mark.skipif(not scipy.__version__.startswith(fastnll.CHECKED_SCIPY),
                             reason=f"checked with scipy {fastnll.CHECKED_SCIPY}, not "
                                    f"{scipy.__version__} (scipy's own frozen is made)")
PARAMS = {
    "johnsonsu": (0.7, 1.3, 2e-4, 3e-5), "lognorm": (0.4, 1e-5, 2e-4), "gamma": (3.2, 0.0, 1e-4),
    "norm": (3e-4, 2e-5), "genextreme": (-0.2, 3e-4, 4e-5), "exponweib": (1.7, 0.8, 0.0, 2e-4),
}


def _bits(value: object) -> bytes:
    return np.asarray(value, dtype=np.float64).tobytes()


@CHECKED
@pytest.mark.parametrize("name", sorted(PARAMS))
def test_every_question_is_answered_as_scipys_frozen_answers_it(name: str) -> None:
    params = PARAMS[name]
    ours, theirs = fitting._freeze(getattr(st, name), params), getattr(st, name)(*params)
    assert ours.dist is getattr(st, name)
    assert type(ours) is type(theirs)
    assert (ours.a, ours.b, ours.args, ours.kwds) == (theirs.a, theirs.b, theirs.args, theirs.kwds)
    x = theirs.ppf(np.linspace(0.001, 0.999, 101))
    q = np.linspace(0.0, 1.0, 11)
    for method in ("pdf", "logpdf", "cdf", "sf", "logcdf", "logsf"):
        assert _bits(getattr(ours, method)(x)) == _bits(getattr(theirs, method)(x)), method
    for method in ("ppf", "isf"):
        assert _bits(getattr(ours, method)(q)) == _bits(getattr(theirs, method)(q)), method
    for method in ("mean", "var", "std", "median", "entropy"):
        assert _bits(getattr(ours, method)()) == _bits(getattr(theirs, method)()), method
    assert _bits(ours.stats("mvsk")) == _bits(theirs.stats("mvsk"))
    assert _bits(ours.interval(0.9)) == _bits(theirs.interval(0.9))
    draws = [f.rvs(size=50, random_state=np.random.default_rng(3)) for f in (ours, theirs)]
    assert _bits(draws[0]) == _bits(draws[1])


def test_another_scipy_gets_scipys_own_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fitting.scipy, "__version__", "9.9.9")
    frozen = fitting._freeze(st.norm, (1.0, 2.0))
    assert frozen.dist is not st.norm
    assert frozen.mean() == 1.0
