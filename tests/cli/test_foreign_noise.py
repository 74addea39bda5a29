"""A trace whose noise attribute no run could have written never sinks ``analyze``, and a
huge seed is one line everywhere (issue 66).

Each foreign trace is analysed with a note saying why its noise is not analysed, beside a good
trace, and the report covers the whole set.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from ksptrace.cli.main import main
from ksptrace.studies.variability.pages import runs
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace

FLAGS = ["--no-figures", "--no-cache", "--candidates", "norm", "--fit-size", "2000",
         "--mc-runs", "2", "--quiet"]
HUGE_SEED = "9" * 4400

FOREIGN = {
    # rc 6: AnalysisError "infinite mean detour" ended analyze with no report
    "pareto": ("pareto:scale=10us,shape=1,p=0.05,per=rank,seed=0",
               "a pareto shape of 1 or less has no finite mean"),
    # OverflowError traceback in NoiseSpec.mean_detour
    "lognormal": ("lognormal:median=10us,sigma=40,p=0.2,per=rank,seed=0",
                  "one detour in a thousand would last"),
    # ValueError traceback (int string conversion) in parse
    "seed": (f"exponential:scale=20us,p=0.5,per=rank,seed={HUGE_SEED}",
             "seed must be an integer from 0 to 9223372036854775807"),
}


def _write(folder: Path, name: str, noise: str | None) -> Path:
    trace = synthetic_trace(4, 60, 2, "cg", seed=1)
    if noise is not None:
        detours = np.zeros((trace.nprocs, trace.stamps.shape[1] - 1))
        trace = dataclasses.replace(trace, attrs={**trace.attrs, "noise": noise},
                                    injected_seconds=detours)
    return write_trace(trace, folder / f"{name}.h5")


def test_every_foreign_noise_trace_is_analysed_with_a_note(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = [_write(tmp_path, "good", None)]
    paths += [_write(tmp_path, name, noise) for name, (noise, _) in FOREIGN.items()]
    out = tmp_path / "report"
    assert main(["analyze", *map(str, paths), "--out", str(out), *FLAGS]) == 0
    assert "Traceback" not in capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["skipped"] == []
    notes = {Path(t["trace"]).stem: " ".join(n for n in t["notes"] if "noise" in n)
             for t in summary["traces"]}
    assert sorted(notes) == sorted(["good", *FOREIGN])
    for name, (_, why) in FOREIGN.items():
        assert why in notes[name], notes[name]
        assert "no noise analysis" in notes[name]
        assert len(notes[name]) < 1000
    assert "noise" not in notes["good"]


def test_a_trace_whose_values_defeat_the_analysis_is_skipped_with_a_note(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The net under the cases above: an arithmetic fault on one trace's values names that
    trace and leaves the others analysed."""
    good, bad = _write(tmp_path, "good", None), _write(tmp_path, "bad", None)
    real = runs.analyze_trace

    def analyze(trace, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(trace.path).endswith("bad.h5"):
            raise OverflowError("math range error")
        return real(trace, *args, **kwargs)

    monkeypatch.setattr(runs, "analyze_trace", analyze)
    results = runs.analyse_files([good, bad], with_figures=False)
    assert [Path(a.analysis.path or "").name for a in results.analysed] == ["good.h5"]
    [skipped] = results.skipped
    assert skipped.reason == (f"{bad}: its values defeat the analysis (OverflowError: math "
                              "range error); it is left out of the report")


def test_a_huge_seed_in_campaign_plan_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.toml"
    path.write_text(f"""
[campaign]
name = "huge"
output = "out"

[sweep]
ksp = ["gmres"]
nprocs = [1]
n = 2000
iterations = 30
noise = ["exponential:scale=20us,p=0.5,seed={HUGE_SEED}"]
""")
    assert main(["campaign", "plan", str(path)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("ksptrace: error: ")
    assert "seed must be an integer from 0 to 9223372036854775807" in err[0]
    assert len(err[0]) < 500


def test_a_huge_seed_given_to_run_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--n", "100", "--iterations", "5", "--out", str(tmp_path / "t.h5"),
                 "--noise", f"exponential:scale=20us,seed={HUGE_SEED}"])
    assert code != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "seed must be an integer from 0 to 9223372036854775807" in err[0]
    assert len(err[0]) < 500
    assert not list(tmp_path.iterdir())
