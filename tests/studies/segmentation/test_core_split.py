"""The change a sweep over process counts is known to cross: where ranks outnumber the cores."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.studies.segmentation.segment import SegmentationParams, segment

P = np.arange(1.0, 9.0)
# Minimum over repetitions on this machine (2 cores): the undisturbed time of a quiet demo, and
# of a sweep beside a busy process pinned to core 1 (docs/segmentation.md), in ms.
QUIET = np.array([21.1, 22.4, 55.2, 79.6, 129.8, 134.7, 186.1, 228.8])
BESIDE_BUSY = np.array([20.2, 23.3, 92.3, 177.9, 231.4, 282.5, 379.7, 460.4])


@pytest.mark.parametrize("y", [QUIET, BESIDE_BUSY])
def test_a_knee_at_the_core_count_is_found_with_two_points_before_it(y: np.ndarray) -> None:
    assert not segment(P, y).segmented  # the window tests alone cannot see it
    res = segment(P, y, cores=2)
    assert res.segmented
    assert [(c.p_lo, c.p_hi) for c in res.change_points] == [(2.0, 3.0)]
    assert any("outnumber the 2 cores" in n for n in res.notes)


def test_a_smooth_law_across_the_core_count_stays_one_law() -> None:
    assert not segment(P, 20.0 * P**1.5, cores=2).segmented


def test_a_knee_elsewhere_is_not_moved_to_the_core_count() -> None:
    knee_at_4 = np.where(P <= 4, 10.0, 10.0 + 30.0 * (P - 4))
    res = segment(P, knee_at_4, cores=2)
    assert (2.0, 3.0) not in [(c.p_lo, c.p_hi) for c in res.change_points]


def test_the_paper_mode_does_not_use_it() -> None:
    assert not segment(P, QUIET, SegmentationParams.paper(), cores=2).segmented


def test_a_sweep_that_does_not_cross_the_cores_is_left_alone() -> None:
    assert not segment(P, QUIET, cores=8).segmented
