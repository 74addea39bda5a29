"""Decision maps from runs: grouping, tables, options files, generated code and the folder."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from ksptrace.errors import AnalysisError, UsageError
from ksptrace.report.decisions import write_decision
from ksptrace.studies.decisions import synthetic as syn
from ksptrace.studies.decisions.files import options_files
from ksptrace.studies.decisions.grouping import Run, build_studies
from ksptrace.studies.decisions.tables import methods_table, sentences, study_tables


def runs(seed: int = 0, n1: int = 5, n2: int = 6, problem: str = "laplace1d") -> list[Run]:
    m = syn.measurements(np.random.default_rng(seed), n1, n2)
    names = {"m0": "gmres", "m1": "pgmres", "m2": "bcgs", "m3": "pipebcgs"}
    return [Run({"nprocs": int(a), "n": int(b), "ksp": names[str(k)], "problem": problem,
                 "pc": "jacobi", "iterations": 1000, "noise": "none",
                 "ranks_per_node": int(a)}, float(t), f"{problem}-{k}-{a}-{b}.h5")
            for a, b, k, t in zip(m.axis1, m.axis2, m.methods, m.times, strict=True)]


def test_one_map_per_group_of_runs_that_differ_only_in_axes_and_method() -> None:
    both = runs(0, problem="laplace1d") + runs(1, problem="iceflow")
    st = build_studies(both)
    assert [s.title for s in st.studies] == ["problem=iceflow", "problem=laplace1d"]
    for s in st.studies:
        assert s.dm.methods == ("bcgs", "gmres", "pgmres", "pipebcgs")
        assert s.dm.axis_names == ("nprocs", "n")
    # the best method per cell is the fastest run's
    lap = st.studies[1]
    r = [x for x in runs(0) if x.attrs["nprocs"] == lap.dm.axis1[1] and
         x.attrs["n"] == lap.dm.axis2[2]]
    fastest = min(r, key=lambda x: x.seconds).attrs["ksp"]
    assert lap.dm.methods[int(lap.dm.best[1, 2])] == fastest


def test_titles_name_the_problem_and_only_keys_that_split_one_problem() -> None:
    lap = runs(0)
    long = [Run({**r.attrs, "iterations": 300, "problem_config": '{"refine": 0}'}, r.seconds)
            for r in runs(1, problem="iceflow")]
    titles = [s.title for s in build_studies(lap + long).studies]
    assert titles == ["problem=iceflow", "problem=laplace1d"]
    k300 = [Run({**r.attrs, "iterations": 300}, r.seconds) for r in runs(2)]
    titles = [s.title for s in build_studies(lap + k300).studies]
    assert titles == ["iterations=1000", "iterations=300"]
    assert [s.title for s in build_studies(lap).studies] == ["all runs"]


def test_groups_that_cannot_form_a_map_are_named_and_strict_mode_fails() -> None:
    flat = [r for r in runs(0) if r.attrs["n"] == runs(0)[0].attrs["n"]]
    st = build_studies(flat)
    assert st.studies == ()
    assert "single value" in st.notes[0]
    with pytest.raises(AnalysisError, match="no decision map could be built"):
        build_studies(flat, strict=True)


def test_unknown_keys_are_refused_with_a_hint() -> None:
    with pytest.raises(UsageError, match=r"no run has the key 'nproc'.*nprocs"):
        build_studies(runs(0), axes=("nproc", "n"))
    with pytest.raises(UsageError, match="three different keys"):
        build_studies(runs(0), axes=("n", "n"))
    with pytest.raises(UsageError, match="three different keys"):
        build_studies(runs(0), axes=("nprocs", "n"), method="n")


def test_tables_follow_the_papers_columns_and_the_sentences_name_the_winners() -> None:
    s = build_studies(runs(2)).studies[0]
    methods, cart, nxt, depth, _threshold, regions, cells = study_tables(s, 0)
    assert list(cart.frame["leaves"]) == [r.tree.stats.leaves for r in s.by_depth]
    assert (cart.frame["CART leaves"] <= cart.frame["leaves"]).all()
    assert len(nxt.frame) == len(s.next_points.points)
    assert methods.frame["cells won"].sum() == s.dm.axis1.size * s.dm.axis2.size
    assert methods.frame["penalty mean %"].iloc[0] == methods.frame["penalty mean %"].min()
    winner = methods.frame.sort_values("cells won").iloc[-1]
    assert winner["penalty max %"] >= 0
    assert list(depth.frame.columns)[:4] == ["max depth", "depth max", "depth min", "depth mean"]
    assert depth.frame["penalty mean %"].iloc[-1] == 0.0
    assert len(regions.frame) == len(s.regions)
    assert len(cells.frame) == s.dm.axis1.size * s.dm.axis2.size
    assert (cells.frame["penalty %"] == 0).all()  # the exact tree is chosen by default
    text = " ".join(sentences(s))
    for m in np.unique(s.dm.best):
        assert s.dm.methods[int(m)] in text


def test_a_method_missing_from_a_cell_is_not_called_cheaper_than_always_using_the_best() -> None:
    """The demo's page read "Always using gmres, the best single method on average, costs
    31.46 %" beside "bcgs +0 %": bcgs had not run in one cell, so its average is over fewer
    cells. Issue 63: a method not run in a cell has no average over the map: "cannot tell (not
    run in 1 of N cells)", never a percentage over the cells it ran in."""
    full = runs(2)
    s = build_studies(full).studies[0]
    one = s.dm.methods[int(s.single.tree.decisions()[0, 0])]
    other = next(m for m in s.dm.methods if m != one)
    cell = next(r for r in full if r.attrs["ksp"] == other)
    gap = [r for r in full if not (r.attrs["ksp"] == other and r.attrs["nprocs"]
                                   == cell.attrs["nprocs"] and r.attrs["n"] == cell.attrs["n"])]
    s = build_studies(gap).studies[0]
    text = " ".join(sentences(s))
    cells = s.dm.axis1.size * s.dm.axis2.size
    assert "the best single method on average among those run in every cell" in text
    assert f"{other} " in text
    assert f"{other} cannot tell (not run in 1 of {cells} cells)" in text
    assert f"{other} +" not in text
    row = next(r for r in methods_table(s, "m").records() if r["method"] == other)
    assert row["not run in"] == 1
    assert row["penalty mean %"] is None


def test_options_files_set_the_ksp_type_of_each_region() -> None:
    s = build_studies(runs(3), max_depth=1).studies[0]
    files = options_files(s, "ksp")
    assert len(files) == len(s.regions)
    for (name, text), region in zip(sorted(files.items()), s.regions, strict=True):
        assert name.endswith(f"-{region.method}.opts")
        assert text.rstrip().splitlines()[-1] == f"-ksp_type {region.method}"
        assert all(line.startswith("#") for line in text.rstrip().splitlines()[:-1])
    assert options_files(s, "restart") == {}
    # issue 50: the last region's range, "nprocs ≥ 8", was written "nprocs _ 8"
    last = files[sorted(files)[-1]].splitlines()[1]
    assert ">= " in last
    assert "_ " not in last


def test_the_folder_holds_code_that_agrees_with_the_tree(tmp_path: Path) -> None:
    out = tmp_path / "decide"
    folder, st, _ = write_decision(out, runs(4), ("nprocs", "n"), "ksp")
    index = json.loads((folder / "decision.json").read_text())
    sub = folder / index["maps"][0]["folder"]
    for name in ("by_depth.csv", "by_threshold.csv", "regions.csv", "cells.csv",
                 "decision_maps.png", "decision_penalty.png", "decision_depth.png",
                 "decide.c", "decide.py"):
        assert (sub / name).stat().st_size > 0, name
    assert len(list((sub / "petsc-options").glob("*.opts"))) == len(st.studies[0].regions)
    html = (folder / "decision.html").read_text()
    assert html.count("<img") == 3
    timed = (sub / "by_depth.csv").read_text().splitlines()
    assert "query ns (scalar)" in timed[0]
    assert "ns per level (scalar)" in timed[0]
    assert "query ns" not in study_tables(st.studies[0], 0)[3].to_csv()
    spec = importlib.util.spec_from_file_location("decide_generated", sub / "decide.py")
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    tree = st.studies[0].chosen.tree
    for a in tree.axis1:
        for b in tree.axis2:
            assert mod.decide(a, b) == tree.query(a, b)


def test_a_folder_of_other_files_is_refused_and_kept(tmp_path: Path) -> None:
    keep = tmp_path / "mine.txt"
    keep.write_text("x")
    with pytest.raises(UsageError, match="holding other files"):
        write_decision(tmp_path, runs(0), ("nprocs", "n"), "ksp")
    assert keep.read_text() == "x"


def test_a_rerun_replaces_an_earlier_decide_folder(tmp_path: Path) -> None:
    out = tmp_path / "d"
    write_decision(out, runs(0), ("nprocs", "n"), "ksp")
    write_decision(out, runs(1), ("nprocs", "n"), "ksp", max_depth=1)
    index = json.loads((out / "decision.json").read_text())
    assert index["maps"][0]["chosen_tree"] == "depth ≤ 1"


def test_the_analysis_report_shows_the_map_when_runs_span_p_and_n(tmp_path: Path) -> None:
    from ksptrace.report.compose import write_report
    from ksptrace.studies.variability.run.options import AnalysisOptions
    from ksptrace.trace.synthetic import synthetic_trace

    fast = AnalysisOptions(candidates=("norm",), fit_size=500, mc_runs=1)
    traces = [synthetic_trace(p, 20, p, ksp, n=n, seed=p + n,
                              base_seconds=1e-4 * (f if n < 5000 else 2.0 / f))
              for p in (1, 2) for n in (1000, 10_000) for ksp, f in (("gmres", 1.0),
                                                                      ("bcgs", 1.5))]
    report = write_report(tmp_path / "r", traces, fast, with_figures=False)
    html = report.html.read_text()
    assert 'id="q-decision"' in html  # the main page answers "which solver where"
    assert 'href="studies/decision.html"' in html
    assert 'id="decision"' in (tmp_path / "r" / "studies" / "decision.html").read_text()
    summary = json.loads(report.summary.read_text())
    [m] = summary["decision_maps"]
    assert m["best"] == [["gmres", "bcgs"], ["gmres", "bcgs"]]
    assert (tmp_path / "r" / "decision1_by_depth.csv").exists()
    # one solver only: no map and no section
    single = write_report(tmp_path / "s", [t for t in traces if t.attrs["ksp"] == "gmres"],
                          fast, with_figures=False)
    assert 'id="q-decision"' not in single.html.read_text()
    assert not (tmp_path / "s" / "studies" / "decision.html").exists()
    assert json.loads(single.summary.read_text())["decision_maps"] == []


def test_the_follow_up_campaign_of_a_real_problem_loads(tmp_path: Path) -> None:
    from ksptrace.jobs.campaign_file import load_campaign_file

    lap = [Run({**r.attrs, "problem_config": "{}", "noise": "exponential:scale=1ms"},
               r.seconds) for r in runs(5)]
    folder, st, _ = write_decision(tmp_path / "d", lap, ("nprocs", "n"), "ksp")
    [s] = st.studies
    assert s.next_points.points
    nxt = next((folder).glob("*/next.toml"))
    text = nxt.read_text()
    assert 'problem = "laplace1d"' in text
    assert 'noise = "exponential:scale=1ms"' in text
    assert load_campaign_file(nxt) is not None
