"""One smooth law with real exponents: its fit, its residual runs, and the relative refit."""

from __future__ import annotations

import numpy as np

from ksptrace.studies.segmentation.pmnf import TERMS
from ksptrace.studies.segmentation.segment import SegmentationParams, segment
from ksptrace.studies.segmentation.smooth_law import SmoothFit, relative_rss, smooth_fit

P10 = np.arange(1.0, 11.0)
ISSUE = 83.1 + 68.6 * P10**0.148 * np.log2(P10) ** 0.42
"""Issue 15's false positive: one smooth law, reported segmented at 2|3 (pattern 100000)."""


def test_a_law_between_the_terms_is_fitted_almost_exactly() -> None:
    fit = smooth_fit(P10, ISSUE)
    assert fit.rms[0] < 0.01  # well below confirm_rms (0.035)
    geo = 2.0 ** np.arange(1, 11)
    y = 3.0 + 0.7 * geo**1.37 * np.log2(geo) ** 0.61
    assert smooth_fit(geo, y).rms[0] < 0.01


def test_the_issues_smooth_law_is_no_longer_segmented() -> None:
    # The two-sided ratio alone fires on it (the window nRSS falls from 0.116 to 0.004) ...
    unconfirmed = segment(P10, ISSUE, SegmentationParams(confirm=False))
    assert unconfirmed.segmented
    assert unconfirmed.pattern == "100000"
    # ... but one smooth law explains every point, so the default detector keeps quiet.
    assert not segment(P10, ISSUE).segmented


def test_durbin_watson_tells_runs_from_alternation() -> None:
    runs = np.array([[1.0, 1, 1, 1, 1, -1, -1, -1, -1, -1]])
    alternating = np.array([[1.0, -1] * 5])
    dw = SmoothFit(np.ones(2), np.concatenate([runs, alternating])).durbin_watson
    assert dw[0] < 0.5
    assert dw[1] > 3


def test_relative_rss_is_the_best_weighted_least_squares_over_the_terms() -> None:
    rng = np.random.default_rng(0)
    y = 5 + 2 * P10**1.3 * (1 + rng.uniform(-0.05, 0.05, 10))
    w = 1 / y
    best = float(np.sum(((np.mean(y * w**2) / np.mean(w**2)) - y) ** 2 * w**2))
    for i, j in TERMS:
        t = P10 ** float(i) * np.log2(P10) ** j
        X = np.stack([np.ones(10), t], axis=1) * w[:, None]
        coef = np.linalg.lstsq(X, y * w, rcond=None)[0]
        best = min(best, float(np.sum((X @ coef - y * w) ** 2)))
    assert np.isclose(relative_rss(P10, y[None])[0], best, rtol=1e-6)
