"""``ksptrace run --problem iceflow`` names its trace by the grid's unknowns, not by the --n the
grid flags overrode (issue 67: n100000 on a 4,096-unknown grid)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ksptrace.cli.run import as_named, output_path

RUN: dict[str, Any] = {"problem": "iceflow", "ksp": "gmres", "pc": "jacobi", "n": 100000,
                       "iterations": 300, "restart": None, "noise": "none"}
GRID = {"hom": "A", "mx": None, "my": None, "mz": None, "refine": 0}


def _name(run: dict[str, Any], problem: dict[str, Any]) -> str:
    return output_path("traces/", as_named(run, problem), 2, "").name


def test_the_grid_flags_decide_the_name() -> None:
    assert _name(RUN, {**GRID, "mx": 16, "mz": 8}) == "iceflow_gmres_jacobi_n4096_P2_K300.h5"


def test_from_n_the_name_says_the_grid_it_chose() -> None:
    # n = 100000 picks 46 x 46 x 24 points, 2 unknowns each (docs/iceflow.md)
    assert _name(RUN, GRID) == "iceflow_gmres_jacobi_n101568_P2_K300.h5"


def test_a_problem_of_n_unknowns_keeps_its_n() -> None:
    run = {**RUN, "problem": "laplace1d", "iterations": 1000}
    assert _name(run, {}) == "laplace1d_gmres_jacobi_n100000_P2_K1000.h5"
    assert Path(output_path("t.h5", as_named(run, {}), 2, "")).name == "t.h5"
