"""Expansion: cartesian by default, zipped axes, repetitions, stable ids."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ksptrace.jobs.expand import load_spec, run_id

Write = Callable[..., Path]


def test_cartesian_product_and_repetitions(write_campaign: Write) -> None:
    spec = load_spec(write_campaign(
        "[campaign]\nrepetitions = 3\n[sweep]\nksp = ['gmres', 'bcgs']\nnprocs = [1, 2, 4]\n"))
    assert len(spec.runs) == 2 * 3 * 3
    assert len({r.run_id for r in spec.runs}) == len(spec.runs)
    first = spec.runs[:3]
    assert [r.repetition for r in first] == [0, 1, 2]
    assert {r.param("ksp") for r in first} == {"gmres"}
    assert [r.index for r in spec.runs] == list(range(len(spec.runs)))


def test_zip_varies_keys_together(write_campaign: Write) -> None:
    spec = load_spec(write_campaign(
        "[campaign]\nzip = [['n', 'nprocs']]\n"
        "[sweep]\nksp = ['gmres', 'bcgs']\nn = [1000, 2000, 4000]\nnprocs = [1, 2, 4]\n"))
    pairs = {(r.param("n"), r.nprocs) for r in spec.runs}
    assert pairs == {(1000, 1), (2000, 2), (4000, 4)}
    assert len(spec.runs) == 6


def test_ids_are_stable_and_independent_of_order(write_campaign: Write) -> None:
    a = load_spec(write_campaign("[sweep]\nksp = ['gmres', 'bcgs']\nnprocs = [1, 2]\n", "a.toml"))
    b = load_spec(write_campaign("[sweep]\nnprocs = [2, 1]\nksp = ['bcgs', 'gmres']\n# x\n",
                                 "b.toml"))
    assert {r.run_id for r in a.runs} == {r.run_id for r in b.runs}
    assert a.campaign_hash != b.campaign_hash
    params = dict(a.runs[0].params)
    assert run_id(params, 1, 0, ()) == a.runs[0].run_id
    assert run_id(params, 1, 1, ()) != a.runs[0].run_id
    assert run_id(params, 1, 0, (("log_view", ""),)) != a.runs[0].run_id


def test_problem_specific_keys_apply_only_to_their_problem(write_campaign: Write) -> None:
    spec = load_spec(write_campaign(
        "[sweep]\nproblem = ['laplace1d', 'iceflow']\nhom = ['A', 'C']\n"))
    by_problem: dict[str, list[dict[str, object]]] = {}
    for r in spec.runs:
        by_problem.setdefault(str(r.param("problem")), []).append(dict(r.params))
    assert len(by_problem["laplace1d"]) == 1  # the hom axis collapses for laplace1d
    assert "hom" not in by_problem["laplace1d"][0]
    assert sorted(str(p["hom"]) for p in by_problem["iceflow"]) == ["A", "C"]


def test_run_arguments(write_campaign: Write) -> None:
    spec = load_spec(write_campaign(
        "[sweep]\nksp = 'gmres'\nrestart = 50\nwarmup = true\n"
        "[petsc_options]\nlog_view = ''\nksp_gmres_modifiedgramschmidt = true\n"))
    args = spec.runs[0].run_args(["--np", "2"])
    assert args[:3] == ["run", "--problem", "laplace1d"]
    assert "--warmup" in args
    assert args[args.index("--restart") + 1] == "50"
    assert args[args.index("--out") + 1] == f"traces/{spec.runs[0].run_id}.h5"
    assert args[-5:] == ["--np", "2", "-log_view", "-ksp_gmres_modifiedgramschmidt", "true"]
