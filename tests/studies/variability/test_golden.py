"""The analysis gives today's numbers (issue 35): every value ``analyze_trace`` computes for four
demo traces (gmres, pgmres and bcgs of the laplace1d demo, pipebcgs of iceflow; P = 1 and 2)
equals, within 1e-6 relative, what it computed when the files in ``golden/`` were written,
before any throughput work. A change that moves a fitted parameter, an SSE ranking, a model
value or a Monte Carlo result fails here; rewrite the files only for a change that means to
move them (``python -m tests.studies.variability.golden_values write``) and say why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.studies.variability.golden_values import FOLDER, analysed, differences, flatten

TRACES = sorted(FOLDER.glob("*.h5"))


def test_there_are_golden_traces() -> None:
    assert len(TRACES) == 4
    assert all(p.with_suffix(".json").is_file() for p in TRACES)


@pytest.mark.parametrize("path", TRACES, ids=[p.stem for p in TRACES])
def test_the_analysis_gives_the_stored_numbers(path: Path) -> None:
    expected = json.loads(path.with_suffix(".json").read_text())
    assert len(expected) > 1000  # every fit, model and per-iteration value, not a summary
    bad = differences(expected, analysed(path))
    assert not bad, f"{len(bad)} values moved, e.g. {bad[:5]}"


def test_the_comparison_catches_a_moved_value() -> None:
    values = flatten({"fit": [1.0, 2.0], "name": "norm"})
    assert differences(values, values) == []
    assert differences(values, {**values, "[fit][1]": 2.0 * (1 + 2e-6)})
    assert not differences(values, {**values, "[fit][1]": 2.0 * (1 + 5e-7)})
    assert differences(values, {**values, "[name]": "gamma"})
    assert differences(values, {"[fit][0]": 1.0, "[name]": "norm"})  # one missing
