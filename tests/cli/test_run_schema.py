"""``ksptrace run`` tells a rerun from a different experiment by the attributes of the trace
already at the destination, in either schema's layout (no MPI needed)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ksptrace.cli.run import _refuse_other_experiment
from ksptrace.errors import UsageError
from ksptrace.trace.model import Trace
from ksptrace.trace.write import write_trace
from tests.trace.schema1 import write_schema1

RUN: dict[str, Any] = {"problem": "laplace1d", "n": 100, "ksp": "gmres", "pc": "jacobi",
                       "iterations": 5, "warmup": False, "restart": None}
WRITERS: dict[str, Callable[[Trace, Path], Path]] = {
    "schema1": write_schema1, "schema2": lambda t, p: write_trace(t, p)}


def existing(attrs: dict[str, Any]) -> Trace:
    stamps = np.cumsum(np.full((1, 6), 1e-3), axis=1)
    full = {**RUN, "restart": 30, "nprocs": 1, "petsc_options": "", "problem_config": "{}",
            **attrs}
    return Trace(stamps, np.ones(6), np.zeros(1, dtype=np.int64), ("h",), np.ones(1), full)


@pytest.mark.parametrize("schema", sorted(WRITERS))
def test_a_rerun_passes_and_another_experiment_is_named(tmp_path: Path, schema: str) -> None:
    same = WRITERS[schema](existing({}), tmp_path / "same.h5")
    _refuse_other_experiment(same, dict(RUN), {}, (), 1)
    other = WRITERS[schema](existing({"ksp": "cg", "nprocs": 2}), tmp_path / "other.h5")
    with pytest.raises(UsageError, match="holds a different experiment") as info:
        _refuse_other_experiment(other, dict(RUN), {}, (), 1)
    assert "ksp 'cg' there, 'gmres' here" in str(info.value)
    assert "nprocs 2 there, 1 here" in str(info.value)


def test_a_file_that_is_no_trace_is_left_to_the_existence_check(tmp_path: Path) -> None:
    path = tmp_path / "junk.h5"
    path.write_bytes(b"not hdf5")
    _refuse_other_experiment(path, dict(RUN), {}, (), 1)
