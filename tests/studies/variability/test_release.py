"""A full garbage collection after each trace only where it frees memory that matters (issue 35):
it costs about 70 ms once scipy and matplotlib are loaded, more than a small trace's analysis."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from ksptrace.studies.variability.pages import runs
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace


@pytest.mark.parametrize(("threshold", "collections"), [(1 << 40, 0), (1, 1)])
def test_a_trace_is_collected_after_its_analysis_only_when_large(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threshold: int, collections: int
) -> None:
    path = write_trace(synthetic_trace(2, 60, 1, "gmres", seed=3), tmp_path / "t.h5")
    calls: list[int] = []
    monkeypatch.setattr(runs, "RELEASE_BYTES", threshold)
    monkeypatch.setattr(gc, "collect", lambda *a: calls.append(1) or 0)
    result = runs.analyse_file(str(path), AnalysisOptions(mc_runs=2), with_figures=False)
    assert isinstance(result, runs.Analysed)
    assert len(calls) == collections
