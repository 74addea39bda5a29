"""The analysis of traces of several solves: one configuration per solve or per pooled length,
each predicted from its own iteration count; cached like any trace."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ksptrace.studies.variability.pages.runs import Analysed, analyse_files
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.trace.write import write_trace
from tests.trace.test_solves import LENGTHS, several

OPTIONS = AnalysisOptions(candidates=("norm",), mc_runs=2)


def test_each_solve_is_analysed_from_its_own_iterations(tmp_path: Path) -> None:
    path = write_trace(several(), tmp_path / "a.h5")
    results = analyse_files([path], OPTIONS, with_figures=False)
    got = {a.analysis.path: a.analysis for a in results.analysed}
    expected = {f"{path}#solve={s}": k for s, k in enumerate(LENGTHS) if k}
    assert {p: a.iterations for p, a in got.items()} == expected
    trace = several()
    assert trace.solves is not None
    for s, k in enumerate(LENGTHS):
        if k:
            a = got[f"{path}#solve={s}"]
            # each solve's own time outside its iterations is its set-up (issue 64), not the
            # first solve's: KSPSolve less it is what the models are compared with
            first, last = trace.solves.offsets[s], trace.solves.offsets[s + 1] - 1
            outside = trace.solves.seconds[:, s] - (trace.stamps[:, last] - trace.stamps[:, first])
            assert a.setup == pytest.approx(outside.max(), rel=1e-12)
            assert a.measured == pytest.approx(trace.solves.seconds[:, s].max() - a.setup,
                                               rel=1e-12)
            assert a.bounds.iterations == k  # the models' K is the solve's own


def test_pooled_solves_make_one_configuration_per_length(tmp_path: Path) -> None:
    path = write_trace(several(), tmp_path / "a.h5")
    pooled = AnalysisOptions(candidates=("norm",), mc_runs=2, pool_solves=True)
    results = analyse_files([path], pooled, with_figures=False)
    assert sorted(a.analysis.iterations for a in results.analysed) == [2, 7, 8]


def test_the_cache_keeps_every_solve_and_renames_a_copy(tmp_path: Path) -> None:
    first = write_trace(several(), tmp_path / "a.h5")
    cache = tmp_path / "cache"
    cold = analyse_files([first], OPTIONS, with_figures=False, cache=cache)
    copy = tmp_path / "b.h5"
    shutil.copy(first, copy)
    warm = analyse_files([copy], OPTIONS, with_figures=False, cache=cache)
    assert len(list(cache.glob("*.pkl"))) == 1  # the same bytes: served from the cache
    assert [a.analysis.path for a in warm.analysed] == [
        str(a.analysis.path).replace(str(first), str(copy)) for a in cold.analysed]
    assert all(isinstance(a, Analysed) for a in warm.analysed)
