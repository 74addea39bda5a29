"""Restart-cycle positions, pipeline-fill iterations and equal-work selection."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.studies.variability.stats.cycles import cycle_layout, fill_was_recorded, is_pipelined


def test_gmres_positions_repeat_every_restart() -> None:
    lay = cycle_layout(95, "gmres", 30)
    assert lay.cycle_length == 30
    assert list(lay.position[28:33]) == [28, 29, 0, 1, 2]
    assert not lay.fill.any()
    assert list(lay.at_position(14)) == [14, 44, 74]
    assert lay.middle_position() == 14


def test_pgmres_cycle_has_two_fill_iterations_that_can_be_dropped() -> None:
    lay = cycle_layout(64, "pgmres", 30)
    assert lay.cycle_length == 32
    assert list(np.flatnonzero(lay.fill)) == [0, 1, 32, 33]
    kept = lay.keep(drop_fill=True)
    assert kept.size == 60
    assert 0 not in kept
    assert 33 not in kept
    assert lay.keep(drop_fill=False).size == 64
    assert lay.middle_position() == 16


def test_pgmres_without_recorded_fill_and_unrestarted_methods() -> None:
    assert cycle_layout(60, "pgmres", 30, fill_recorded=False).cycle_length == 30
    lay = cycle_layout(10, "bcgs", 0)
    assert lay.cycle_length == 1
    assert not lay.position.any()
    assert cycle_layout(40, "gmres", None).cycle_length == 30


def test_fill_detection_and_pipelined_names() -> None:
    assert fill_was_recorded("pgmres", 5334, 5000)
    assert not fill_was_recorded("pgmres", 5000, 5000)
    assert not fill_was_recorded("gmres", 5334, 5000)
    assert is_pipelined("PGMRES")
    assert is_pipelined("pipebcgs")
    assert not is_pipelined("bcgs")


def test_position_outside_cycle_is_an_error() -> None:
    with pytest.raises(AnalysisError, match="restart cycle"):
        cycle_layout(60, "gmres", 30).at_position(30)
