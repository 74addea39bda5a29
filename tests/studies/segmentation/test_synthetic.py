"""The broadened synthetic generator and the evaluation's targets, on small seeded samples."""

from __future__ import annotations

import numpy as np

from ksptrace.studies.segmentation import evaluation as ev
from ksptrace.studies.segmentation import synthetic as syn
from ksptrace.studies.segmentation.segment import SegmentationParams


def test_a_continuous_join_meets_the_first_law_at_the_change() -> None:
    rng = np.random.default_rng(1)
    p = syn.points(10, "linear")
    f = syn.draw_functions(rng, 50, "out")
    g = syn.draw_functions(rng, 50, "out")
    tail = syn._second_law(f, g, p, 5, "continuous")
    assert np.allclose(tail[:, 0], f(p[5:6])[:, 0])
    jump = syn._second_law(f, g, p, 5, "jump")
    assert not np.allclose(jump[:, 0], f(p[5:6])[:, 0])


def test_every_drawn_change_departs_from_the_first_law() -> None:
    rng = np.random.default_rng(2)
    p = syn.points(10, "geometric")
    for join in ("jump", "continuous"):
        y = syn.draw_segmented(rng, 200, "out", p, 5, join)
        assert np.all(np.isfinite(y))
        assert np.all(y > 0)


def test_constants_span_four_orders_of_magnitude() -> None:
    f = syn.draw_functions(np.random.default_rng(3), 5000, "out")
    assert f.c0.min() < 1
    assert f.c0.max() > 100
    assert f.c1.min() < 0.1
    assert f.c1.max() > 10
    assert np.mean(f.j % 1 != 0) > 0.9  # fractional log exponents


def test_location_of_a_continuous_join_includes_the_shared_point() -> None:
    lo = np.array([4, 5, 5, 6, 3])
    hi = np.array([5, 5, 6, 7, 4])
    assert syn.located(lo, hi, 5, "continuous").tolist() == [True, True, True, False, False]
    # a jump lies between points 4 and 5; either of them as a shared point counts
    assert syn.located(lo, hi, 5, "jump").tolist() == [True, True, False, False, False]


def test_low_noise_false_positives_stay_below_one_percent() -> None:
    # 400 smooth out-of-space laws on p = 1..10 at 2 % noise: the unconfirmed two-sided test
    # flags about 2 % of them (the failure), the default detector below 1 %.
    cell = ev.evaluate_cell(np.random.default_rng(4), 400, "out", "linear", 0.02, 5, 5)
    assert cell.false_positive < 1
    loose = ev.evaluate_cell(np.random.default_rng(4), 400, "out", "linear", 0.02, 5, 5,
                             SegmentationParams(confirm=False))  # fmt: skip
    assert loose.false_positive > cell.false_positive
    assert cell.located_all >= 95


def test_small_noise_table_meets_the_targets() -> None:
    cells = list(ev.noise_table(np.random.default_rng(2017), 200))
    summary = ev.summarize(cells)
    assert len(cells) == 24
    assert set(summary) == {"linear", "geometric", "overall"}
    met = ev.meets_targets(summary)
    assert met["fp_low_noise"]
    assert met["located"]
    assert summary["overall"]["overall_correct_pct"] > 92
    # the paper's detector misses the location target on p = 2^k
    paper = ev.summarize(list(ev.noise_table(np.random.default_rng(2017), 200,
                                             SegmentationParams.paper())))  # fmt: skip
    assert not ev.meets_targets(paper)["located"]
