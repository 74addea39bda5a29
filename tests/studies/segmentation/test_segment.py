"""The segmentation detector: the paper's worked example, locating, segments, bad input."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.studies.segmentation.segment import (
    SegmentationParams,
    detect_many,
    model_segments_many,
    segment,
    suggest_points,
)

P10 = np.arange(1.0, 11.0)
WORKED = np.where(P10 <= 5, P10**2, 30 + P10)


def test_worked_example_reproduces_table_1() -> None:
    res = segment(P10, WORKED)
    assert res.pattern == "001110"
    assert res.segmented
    # windows s4 and s5 of Table 1: models and nRSS as printed in the paper
    assert res.window_nrss[3] == pytest.approx(0.19, abs=0.005)
    assert res.window_nrss[4] == pytest.approx(0.16, abs=0.005)
    assert res.window_nrss[[0, 1, 5]].max() < 1e-10
    assert max(res.window_nrss) < 0.5  # found by the relative nRSS, not by theta
    (cp,) = res.change_points
    assert cp.shared
    assert cp.p_lo == 6
    left, right = res.segments
    assert left.model is not None
    assert right.model is not None
    assert left.model.exponents == (Fraction(2), 0)
    assert left.model.c1 == pytest.approx(1.0)
    assert left.model.c0 == pytest.approx(0.0, abs=1e-9)
    assert right.model.exponents == (Fraction(1), 0)
    assert (right.model.c0, right.model.c1) == pytest.approx((30.0, 1.0))
    # Extra-P's single model of the same data, as quoted in the paper's section 2
    assert res.single is not None
    assert str(res.single) == "1.649 + 3.971 * log2(p)^(2)"


def test_worked_example_windows_models() -> None:
    from ksptrace.studies.segmentation.pmnf import fit

    assert str(fit(P10[3:8], WORKED[3:8])) == "-28.53 + 23.17 * log2(p)^(1)"
    assert str(fit(P10[4:9], WORKED[4:9])) == "-6.188 + 14.83 * log2(p)^(1)"


def test_four_ones_put_the_change_between_two_points() -> None:
    y = np.where(P10 <= 5, 2 * P10**2, 100 + 3 * P10)
    det = detect_many(P10, y)
    assert det.pattern_string(0) == "011110"
    assert (det.lo[0], det.hi[0]) == (4, 5)
    res = segment(P10, y)
    assert str(res.change_points[0]) == "between p = 5 and p = 6"


def test_unsegmented_series_are_not_flagged() -> None:
    rng = np.random.default_rng(3)
    y = 5 + 0.3 * P10 * np.log2(P10)
    y = np.stack([y * (1 + rng.uniform(-0.02, 0.02, 10)) for _ in range(200)])
    det = detect_many(P10, y)
    assert not det.segmented.any()
    assert (det.lo == -1).all()


def test_thresholds_are_parameters() -> None:
    strict = SegmentationParams(epsilon=1e30, theta=10.0, bend_test=False)
    assert not segment(P10, WORKED, strict).segmented
    # the bend test alone still sees the kink: no single smooth law follows p^2 then 30 + p
    bend = segment(P10, WORKED, SegmentationParams(epsilon=1e30, theta=10.0))
    assert bend.segmented
    assert bend.by_bend
    assert segment(P10, WORKED, SegmentationParams(theta=0.15)).segmented


def test_global_split_thresholds_are_checked() -> None:
    with pytest.raises(AnalysisError, match="split_gain"):
        SegmentationParams(split_gain=1.0)
    with pytest.raises(AnalysisError, match="split_min_side"):
        SegmentationParams(split_min_side=1)
    assert not SegmentationParams.paper().global_split


def test_batch_equals_one_by_one() -> None:
    rng = np.random.default_rng(5)
    ys = np.stack([WORKED * (1 + rng.uniform(-0.03, 0.03, 10)) for _ in range(20)])
    ys[::3] = 40 + P10 * rng.uniform(1, 2, (7, 1))
    det = detect_many(P10, ys)
    models = model_segments_many(ys, det)
    for s in range(20):
        one = segment(P10, ys[s])
        assert one.segmented == det.segmented[s]
        if one.segmented:
            assert one.change_points[0].p_lo == P10[det.lo[s]]
            assert str(one.segments[0].model) == str(models.left[s])
            assert str(one.segments[-1].model) == str(models.right[s])


def test_change_near_the_start_needs_two_sided() -> None:
    p = np.arange(1.0, 9.0)
    y = np.where(p <= 2, 10 / p, 5 * p)  # strong scaling, then oversubscription
    assert segment(p, y).segmented
    assert not segment(p, y, SegmentationParams.paper()).segmented


def test_paper_variant_gives_the_same_worked_example() -> None:
    res = segment(P10, WORKED, SegmentationParams.paper())
    assert res.pattern == "001110"
    assert str(res.change_points[0]) == "p = 6"


def test_short_segment_says_what_to_measure() -> None:
    p = 2.0 ** np.arange(0, 8)  # 1 .. 128
    y = np.where(p <= 16, 3.0 + 0.1 * p, 50 * p)
    res = segment(p, y)
    assert res.segmented
    left, right = res.segments
    assert left.model is not None
    assert right.model is None
    assert "add measurements at p = 256" in right.advice
    assert res.describe().count("not enough points") == 1


def test_suggest_points_fills_or_extends() -> None:
    allp = np.arange(1.0, 11.0)
    np.testing.assert_array_equal(suggest_points(allp, allp[7:], 2, "right"), [11, 12])
    geo = 2.0 ** np.arange(1, 8)
    np.testing.assert_array_equal(suggest_points(geo, geo[:3], 2, "left"), [3, 6])


def test_recursion_finds_two_change_points() -> None:
    p = np.arange(1.0, 19.0)
    y = np.select([p <= 6, p <= 12], [2 * p**2, 500 + 3 * p], 20 * p**1.5)
    res = segment(p, y)
    assert len(res.change_points) == 2
    assert len(res.segments) == 3
    assert all(s.model is not None for s in res.segments)
    assert res.change_points[0].p_lo in (6, 7)
    assert res.change_points[1].p_lo in (12, 13)
    assert segment(p, y, SegmentationParams(max_change_points=1)).change_points.__len__() == 1


# ------------------------------------------------------------------------------- bad input


def test_fewer_than_six_points_is_a_message() -> None:
    res = segment([1, 2, 3, 4, 5], [1.0, 2, 3, 4, 5])
    assert not res.ok
    assert not res.segmented
    assert "need at least 6 distinct p" in res.describe()
    assert "measure 1 more" in res.describe()
    assert res.single is not None


def test_duplicates_are_repetitions() -> None:
    p = np.concatenate([P10, P10, P10])
    y = np.concatenate([WORKED, WORKED * 1.01, WORKED * 0.5])
    res = segment(p, y)
    np.testing.assert_allclose(res.y, WORKED)  # the median of the three
    assert res.pattern == "001110"
    assert any("median" in n for n in res.notes)


def test_nan_and_non_positive_p_are_dropped_with_a_note() -> None:
    p = np.concatenate([[0.0, -2.0], P10, [11.0]])
    y = np.concatenate([[1.0, 1.0], WORKED, [np.nan]])
    res = segment(p, y)
    assert res.p.tolist() == P10.tolist()
    assert res.pattern == "001110"
    text = res.describe()
    assert "NaN" in text
    assert "non-positive" in text


def test_nan_leaving_too_few_points() -> None:
    y = np.array([1.0, 2, np.nan, np.nan, 5, 6])
    res = segment(np.arange(1.0, 7.0), y)
    assert not res.ok
    assert "got 4" in res.describe()


def test_constant_series() -> None:
    res = segment(P10, np.full(10, 7.0))
    assert res.ok
    assert not res.segmented
    assert res.pattern == "000000"
    assert str(res.single) == "7"


def test_detect_many_rejects_unsorted() -> None:
    with pytest.raises(AnalysisError, match="increasing"):
        detect_many(P10[::-1], WORKED)
    with pytest.raises(AnalysisError, match="at least 6"):
        detect_many(P10[:5], WORKED[:5])
