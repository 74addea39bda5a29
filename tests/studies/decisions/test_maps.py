"""Decision maps: medians and best methods per cell, nearest-neighbour fill, 2^k reshaping and
the messages for bad input."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.studies.decisions import synthetic as syn
from ksptrace.studies.decisions.maps import DecisionMap, decision_map, square_map


def small_map() -> DecisionMap:
    # 2 x 3 grid; cell (1, 2) unmeasured; cell (0, 0) has three repetitions of "a".
    a1 = np.array([2, 2, 2, 2, 2, 2, 2, 4, 4, 4, 4, 2, 2])
    a2 = np.array([10, 10, 10, 10, 20, 20, 30, 10, 10, 20, 20, 30, 10])
    m = np.array(["a", "a", "a", "b", "a", "b", "a", "a", "b", "a", "b", "b", "b"])
    t = np.array([1.0, 5.0, 2.0, 3.0, 4.0, 1.0, 1.0, 2.0, 1.0, 1.0, 2.0, 3.0, 9.0])
    return decision_map(a1, a2, m, t, ("P", "n"))


def test_medians_counts_and_best_method_per_cell() -> None:
    dm = small_map()
    assert dm.methods == ("a", "b")
    assert dm.axis1.tolist() == [2.0, 4.0]
    assert dm.axis2.tolist() == [10.0, 20.0, 30.0]
    assert dm.times[0, 0, 0] == 2.0  # median of 1, 5, 2
    assert dm.times[1, 0, 0] == 6.0  # median of 3, 9
    assert dm.counts[0, 0, 0] == 3
    assert np.isnan(dm.times[:, 1, 2]).all()
    assert dm.best[0].tolist() == [0, 1, 0]
    assert dm.best[1, :2].tolist() == [1, 0]


def test_missing_cell_is_filled_from_the_nearest_measured_cell_and_flagged() -> None:
    dm = small_map()
    assert dm.filled.tolist() == [[False, False, False], [False, False, True]]
    # (1, 2) has two neighbours at distance 1: (0, 2) -> a and (1, 1) -> a.
    assert dm.best[1, 2] == 0
    assert np.isnan(dm.best_time[1, 2])


def test_square_map_replicates_rows_and_columns_evenly_and_records_it() -> None:
    m = syn.measurements(np.random.default_rng(0), 5, 11)
    dm = decision_map(m.axis1, m.axis2, m.methods, m.times)
    sq = square_map(dm)
    assert sq.k == 4
    assert sq.cells.shape == (16, 16)
    assert sq.replicated_rows == 11
    assert sq.replicated_cols == 5
    assert sq.replicated_share == pytest.approx(1 - 55 / 256)
    assert np.array_equal(np.unique(sq.row_source), np.arange(5))
    assert np.array_equal(np.unique(sq.col_source), np.arange(11))
    assert np.all(np.diff(sq.row_source) >= 0)
    assert np.array_equal(sq.cells, dm.best[np.ix_(sq.row_source, sq.col_source)])
    assert np.bincount(sq.row_source).max() - np.bincount(sq.row_source).min() <= 1


def test_square_map_of_a_power_of_two_grid_is_the_grid_itself() -> None:
    m = syn.measurements(np.random.default_rng(1), 8, 8)
    dm = decision_map(m.axis1, m.axis2, m.methods, m.times)
    sq = square_map(dm)
    assert sq.k == 3
    assert sq.replicated_share == 0.0
    assert np.array_equal(sq.cells, dm.best)


def test_fewer_than_two_methods_is_refused_with_a_message() -> None:
    with pytest.raises(AnalysisError, match=r"at least 2 methods.*only 'gmres'"):
        decision_map(np.array([1, 2]), np.array([1, 2]), np.array(["gmres"] * 2),
                     np.array([1.0, 2.0]))


def test_single_value_on_an_axis_is_refused_with_a_message() -> None:
    with pytest.raises(AnalysisError, match="axis 'nprocs' has the single value 4"):
        decision_map(np.array([4, 4]), np.array([1, 2]), np.array(["a", "b"]),
                     np.array([1.0, 2.0]), ("nprocs", "n"))
    with pytest.raises(AnalysisError, match="axis 'n' has the single value 100"):
        decision_map(np.array([2, 4]), np.array([100, 100]), np.array(["a", "b"]),
                     np.array([1.0, 2.0]), ("nprocs", "n"))


def test_nan_times_are_refused_naming_the_first_bad_run() -> None:
    with pytest.raises(AnalysisError, match=r"1 of 3 times are NaN.*run 1, method 'b', "
                                            r"nprocs=4, n=20"):
        decision_map(np.array([2, 4, 2]), np.array([10, 20, 20]), np.array(["a", "b", "b"]),
                     np.array([1.0, np.nan, 2.0]), ("nprocs", "n"))


def test_other_bad_input_is_refused() -> None:
    with pytest.raises(AnalysisError, match="one length"):
        decision_map(np.array([1, 2]), np.array([1]), np.array(["a", "b"]), np.array([1.0, 2.0]))
    with pytest.raises(AnalysisError, match="no measurements"):
        decision_map(np.array([]), np.array([]), np.array([]), np.array([]))
    with pytest.raises(AnalysisError, match="positive"):
        decision_map(np.array([1, 2]), np.array([1, 2]), np.array(["a", "b"]),
                     np.array([1.0, 0.0]))
