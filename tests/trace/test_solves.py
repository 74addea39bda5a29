"""Traces of several solves (schema 3): the model, the file, and splitting and pooling."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from ksptrace.errors import TraceError
from ksptrace.trace.model import Solves, Trace
from ksptrace.trace.read import read_trace
from ksptrace.trace.solves import split
from ksptrace.trace.write import write_trace

LENGTHS = (4, 0, 7, 4, 2)
DATA = Path(__file__).resolve().parents[1] / "data" / "trace"


def several(path: str | None = None) -> Trace:
    rng = np.random.default_rng(3)
    offsets = np.concatenate([[0], np.cumsum([k + 1 for k in LENGTHS])])
    stamps = np.cumsum(rng.uniform(1e-3, 2e-3, (2, offsets[-1])), axis=1)
    seconds = rng.uniform(0.01, 0.02, (2, len(LENGTHS)))
    reasons = ("CONVERGED_RTOL", "CONVERGED_ATOL", "DIVERGED_ITS", "CONVERGED_RTOL",
               "CONVERGED_RTOL")
    solves = Solves(offsets, seconds, reasons, np.array(LENGTHS))
    return Trace(stamps, np.arange(offsets[-1], dtype=float), np.zeros(2, int), ("a", "b"),
                 seconds.sum(axis=1), {"problem": "loop", "ksp": "cg", "solves": 5}, path,
                 solves=solves)


def test_iterations_never_include_the_gap_between_solves() -> None:
    trace = several()
    assert trace.iterations == sum(LENGTHS)
    t = trace.iteration_seconds
    assert t.shape == (2, sum(LENGTHS))
    within = [np.diff(trace.stamps[:, a:b], axis=1) for a, b in
              zip(trace.solves.offsets[:-1], trace.solves.offsets[1:], strict=True)]  # type: ignore[union-attr]
    np.testing.assert_array_equal(t, np.concatenate(within, axis=1))


def test_round_trip_is_schema_3_and_keeps_every_solve(tmp_path: Path) -> None:
    trace = several()
    back = read_trace(write_trace(trace, tmp_path / "t.h5"))
    assert back.attrs["schema_version"] == 3
    assert back.solves is not None
    assert back.solves.reasons == trace.solves.reasons  # type: ignore[union-attr]
    np.testing.assert_array_equal(back.solves.offsets, trace.solves.offsets)  # type: ignore[union-attr]
    np.testing.assert_array_equal(back.solves.seconds, trace.solves.seconds)  # type: ignore[union-attr]
    np.testing.assert_array_equal(back.stamps, trace.stamps)
    np.testing.assert_array_equal(back.iteration_seconds, trace.iteration_seconds)
    with h5py.File(tmp_path / "t.h5") as f:
        assert f["iteration_seconds"].shape == (2, sum(LENGTHS))  # no padding
        assert f["stamps"].shape == (2, sum(LENGTHS) + len(LENGTHS))


def test_old_traces_still_read() -> None:
    old = read_trace(DATA / "schema1.h5")
    assert old.solves is None
    assert split(old) == (old,)


def test_each_solve_is_a_trace_of_its_own() -> None:
    trace = several("f.h5")
    parts = split(trace)
    assert [p.attrs["solve"] for p in parts] == [0, 2, 3, 4]  # solve 1 did no iteration
    assert [p.iterations for p in parts] == [4, 7, 4, 2]
    assert parts[1].attrs["converged_reason"] == "DIVERGED_ITS"
    assert parts[1].path == "f.h5#solve=2"
    assert parts[1].solve_max == trace.solves.seconds[:, 2].max()  # type: ignore[union-attr]
    assert len({p.config_key() for p in parts}) == 4


def test_pooling_joins_the_solves_of_equal_length() -> None:
    trace = several()
    pooled = {p.attrs["solve"]: p for p in split(trace, pool=True)}
    assert set(pooled) == {"K=2 x 1", "K=4 x 2", "K=7 x 1"}
    four = pooled["K=4 x 2"]
    t = trace.iteration_seconds
    np.testing.assert_allclose(four.iteration_seconds, np.concatenate([t[:, :4], t[:, 11:15]],
                                                                      axis=1))
    np.testing.assert_allclose(four.solve_seconds, trace.solves.seconds[:, [0, 3]].sum(axis=1))  # type: ignore[union-attr]
    assert four.residual_norms.tolist() == [0, 1, 2, 3, 4, 15, 16, 17, 18]  # no second call 0


@pytest.mark.parametrize(("damage", "message"), [
    ("offsets", "has shape"),
    ("reasons", "incomplete solves group, missing reasons"),
    ("end", "the solves end at stamp"),
])
def test_a_damaged_solves_group_is_refused(tmp_path: Path, damage: str, message: str) -> None:
    path = write_trace(several(), tmp_path / "t.h5")
    with h5py.File(path, "a") as f:
        g = f["solves"]
        if damage == "offsets":
            del g["offsets"]
            g["offsets"] = np.array([0, 5, 5])
        elif damage == "reasons":
            del g["reasons"]
        else:
            data = g["offsets"][...]
            data[-1] -= 1
            g["offsets"][...] = data
    with pytest.raises(TraceError, match=message):
        read_trace(path)


def test_each_solve_split_off_has_its_own_time_outside_its_iterations() -> None:
    """Issue 64: every solve inherited the trace's first-solve ``setup_max``; each has its own,
    from the record: its KSPSolve time less the span of its stamps, the largest over ranks."""
    trace = several()
    trace = Trace(trace.stamps, trace.residual_norms, trace.node_ids, trace.hostnames,
                  trace.solve_seconds, {**trace.attrs, "setup_max": 0.000389},
                  solves=trace.solves)
    s = trace.solves
    assert s is not None
    parts = split(trace)
    assert len(parts) == 4  # the solve of no iteration is left out
    for part, i in zip(parts, [0, 2, 3, 4], strict=True):
        a, b = int(s.offsets[i]), int(s.offsets[i + 1])
        own = (s.seconds[:, i] - (trace.stamps[:, b - 1] - trace.stamps[:, a])).max()
        assert part.attrs["setup_max"] == pytest.approx(own, rel=1e-12)
        assert part.attrs["setup_max"] != pytest.approx(0.000389)
    (pooled,) = [p for p in split(trace, pool=True) if p.attrs["solve"] == "K=4 x 2"]
    spans = [(int(s.offsets[i]), int(s.offsets[i + 1])) for i in (0, 3)]
    each = np.stack([s.seconds[:, i] - (trace.stamps[:, b - 1] - trace.stamps[:, a])
                     for i, (a, b) in zip((0, 3), spans, strict=True)], axis=1)
    assert pooled.attrs["setup_max"] == pytest.approx(each.sum(axis=1).max(), rel=1e-12)


def test_a_solve_whose_time_is_shorter_than_its_stamps_gets_no_setup() -> None:
    trace = several()
    s = trace.solves
    assert s is not None
    short = Solves(s.offsets, np.full_like(s.seconds, 1e-9), s.reasons, s.petsc_iterations)
    odd = Trace(trace.stamps, trace.residual_norms, trace.node_ids, trace.hostnames,
                short.seconds.sum(axis=1), {**trace.attrs, "setup_max": 0.5}, solves=short)
    assert all("setup_max" not in p.attrs for p in split(odd))
