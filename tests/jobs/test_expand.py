"""Expansion: cartesian by default, zipped axes, repetitions, stable ids."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from ksptrace.cli.main import build_parser, main
from ksptrace.errors import CampaignError
from ksptrace.harness.petsc.petsc_types import BUILTIN, SOURCE_ENV
from ksptrace.jobs import expand
from ksptrace.jobs.campaign_file import load_campaign_file
from ksptrace.jobs.expand import load_spec, run_id, sweep_size

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


def test_interleave_runs_repetitions_in_rounds(write_campaign: Write) -> None:
    text = "[campaign]\nrepetitions = 3\n{}[sweep]\nnprocs = [1, 2, 4]\n"
    plain = load_spec(write_campaign(text.format("")))
    rounds = load_spec(write_campaign(text.format("interleave = true\n")))
    assert [(r.repetition, r.nprocs) for r in rounds.runs] == [
        (rep, p) for rep in range(3) for p in (1, 2, 4)]
    assert [r.index for r in rounds.runs] == list(range(9))
    # the same runs (same ids: a campaign resumes across the change), only in another order
    assert {r.run_id for r in rounds.runs} == {r.run_id for r in plain.runs}


def test_alternate_reverses_every_other_round(write_campaign: Write) -> None:
    """The paired noise design's order: S0 S1 P0 P1, then P1 P0 S1 S0 (ABBA over rounds)."""
    text = ("[campaign]\nrepetitions = 4\ninterleave = true\n{}[sweep]\n"
            "ksp = ['gmres', 'pgmres']\nnoise = ['none', 'exponential:scale=1ms,p=0.1,seed=1']\n")
    plain = load_spec(write_campaign(text.format("")))
    abba = load_spec(write_campaign(text.format("alternate = true\n")))
    cells = [(r.param("ksp"), r.param("noise")) for r in abba.runs]
    forward = cells[:4]
    assert cells == forward + forward[::-1] + forward + forward[::-1]
    assert [r.repetition for r in abba.runs] == [rep for rep in range(4) for _ in range(4)]
    assert [r.index for r in abba.runs] == list(range(16))
    assert {r.run_id for r in abba.runs} == {r.run_id for r in plain.runs}


def test_each_repetition_draws_its_own_noise(write_campaign: Write) -> None:
    """With noise_seed_per_repetition, block r's noisy runs share seed base + r."""
    spec = load_spec(write_campaign(
        "[campaign]\nrepetitions = 3\nnoise_seed_per_repetition = true\n[sweep]\n"
        "ksp = ['gmres', 'pgmres']\nnoise = ['none', 'exponential:scale=1ms,p=0.1,seed=5']\n"))
    seeds = {(r.repetition, r.param("ksp")): r.param("noise") for r in spec.runs
             if r.param("noise") != "none"}
    for rep in range(3):
        assert seeds[(rep, "gmres")] == seeds[(rep, "pgmres")]
        assert seeds[(rep, "gmres")].endswith(f"seed={5 + rep}")
    assert sum(r.param("noise") == "none" for r in spec.runs) == 6  # the quiet runs unchanged


def test_alternate_needs_interleave(write_campaign: Write) -> None:
    with pytest.raises(CampaignError, match="add interleave = true"):
        load_spec(write_campaign("[campaign]\nrepetitions = 2\nalternate = true\n"
                                 "[sweep]\nnprocs = [1, 2]\n"))


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


# --- giant sweeps: sized from the axes before anything is expanded -----------------------------

MILLION = ("[sweep]\nn = " + str(list(range(1000, 2000))) + "\niterations = "
           + str(list(range(1, 1001))) + "\n")


def test_sweep_size_comes_from_the_axes(write_campaign: Write) -> None:
    cf = load_campaign_file(write_campaign(
        "[campaign]\nrepetitions = 3\nzip = [['n', 'nprocs']]\n"
        "[sweep]\nksp = ['gmres', 'bcgs']\nn = [1000, 2000]\nnprocs = [1, 2]\npc = 'jacobi'\n"),
        BUILTIN)
    assert sweep_size(cf) == (2 * 2 * 3, "2 ksp x 2 n+nprocs x 3 repetitions")


def test_a_million_run_sweep_is_refused_at_once(write_campaign: Write) -> None:
    path = write_campaign(MILLION)
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(CampaignError) as err:
            load_spec(path, petsc=BUILTIN)
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(err.value) == (
        f"{path}: the sweep has 1,000,000 runs (1000 n x 1000 iterations), more than 100,000, "
        "the most ksptrace expands even with --allow-large; split it into several campaigns")
    assert seconds < 10.0  # refused before expanding (expanding takes minutes and GBs)
    assert peak < 20e6


def test_allow_large_expands(write_campaign: Write, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(expand, "MAX_RUNS", 5)
    path = write_campaign("[sweep]\nn = [1000, 2000, 3000]\nnprocs = [1, 2]\n")
    with pytest.raises(CampaignError, match="the sweep has 6 runs"):
        load_spec(path, petsc=BUILTIN)
    assert len(load_spec(path, allow_large=True, petsc=BUILTIN).runs) == 6


def test_cli_refuses_a_giant_sweep_in_one_line(
        write_campaign: Write, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SOURCE_ENV, "builtin")  # time the refusal, not petsc4py's start-up
    build_parser()  # nor the first import of every command's modules
    path = write_campaign(MILLION)
    for action in (["plan"], ["run", "--backend", "slurm", "--dry-run"]):
        start = time.perf_counter()
        assert main(["campaign", *action, str(path)]) == 7
        assert time.perf_counter() - start < 2.0
        captured = capsys.readouterr()
        assert captured.out == ""
        lines = captured.err.splitlines()
        assert len(lines) == 1
        assert lines[0].startswith("ksptrace: error: ")
        assert "1,000,000 runs" in lines[0]
        assert "--allow-large" in lines[0]
    assert not (path.parent / "runs").exists()


def test_allow_large_has_a_ceiling(
        write_campaign: Write, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 50: a 10^13-run sweep with --allow-large reached 3.67 GB in 60 s expanding."""
    monkeypatch.setenv(SOURCE_ENV, "builtin")
    build_parser()
    axis = str(list(range(1000, 2000)))
    path = write_campaign(f"[campaign]\nrepetitions = 10\n[sweep]\nn = {axis}\n"
                          f"iterations = {axis}\nrestart = {axis}\nwarmup = {axis}\n")
    for action in (["plan"], ["run", "--backend", "slurm", "--dry-run"]):
        tracemalloc.start()
        start = time.perf_counter()
        try:
            code = main(["campaign", *action, str(path), "--allow-large"])
            seconds = time.perf_counter() - start
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert code == 7
        assert seconds < 10.0  # refused before expanding (expanding took minutes and GBs)
        assert peak < 20e6
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.splitlines() == [
            f"ksptrace: error: {path}: the sweep has 10,000,000,000,000 runs (1000 n x 1000 "
            "iterations x 1000 restart x 1000 warmup x 10 repetitions), more than 100,000, "
            "the most ksptrace expands even with --allow-large; split it into several "
            "campaigns"]
    assert not (path.parent / "runs").exists()


def test_the_ceiling_is_a_sweep_a_campaign_run_can_afford(
        write_campaign: Write, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 66: at the former ceiling (10^6 runs) a Slurm dry run took 201 s and 5.47 GB;
    the ceiling is now 10^5 runs (39 s and 0.57 GB), counted before anything is expanded."""
    axis = str(list(range(1000, 1100)))
    path = write_campaign(f"[campaign]\nrepetitions = 11\n[sweep]\nn = {axis}\n"
                          f"iterations = {list(range(10, 1010, 10))}\n")
    start = time.perf_counter()
    assert main(["campaign", "run", str(path), "--backend", "slurm", "--dry-run",
                 "--allow-large"]) == 7
    assert time.perf_counter() - start < 10.0
    [line] = capsys.readouterr().err.splitlines()
    assert line == (f"ksptrace: error: {path}: the sweep has 110,000 runs (100 n x 100 iterations "
                    "x 11 repetitions), more than 100,000, the most ksptrace expands even with "
                    "--allow-large; split it into several campaigns")
    assert not (path.parent / "runs").exists()


def test_plan_warns_above_a_thousand_runs(
        write_campaign: Write, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_campaign("[sweep]\nn = " + str(list(range(1000, 2001))) + "\n")
    assert main(["campaign", "plan", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        "ksptrace: warning: campaign ksptrace has 1,001 runs (more than 1,000); on a scheduler "
        "that is at least 2 job arrays of at most 1000 tasks; check the sweep is what you mean"]
    assert "campaign ksptrace: 1001 runs" in captured.out
    small = write_campaign("[sweep]\nn = [1000, 2000]\n", "small.toml")
    assert main(["campaign", "plan", str(small)]) == 0
    assert capsys.readouterr().err == ""


def test_dry_run_warns_and_splits(write_campaign: Write, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SOURCE_ENV, "builtin")
    path = write_campaign("[sweep]\nn = " + str(list(range(1000, 2001))) + "\n")
    assert main(["campaign", "run", str(path), "--backend", "slurm", "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines()[0].startswith(
        "ksptrace: warning: campaign ksptrace has 1,001 runs (more than 1,000)")
    scripts = path.parent / "runs" / "scripts" / "slurm"
    assert sorted(p.name for p in scripts.iterdir()) == ["ksptrace-N1-1.sbatch",
                                                        "ksptrace-N1-2.sbatch"]
    assert "#SBATCH --array=0-999" in (scripts / "ksptrace-N1-1.sbatch").read_text()
    assert "#SBATCH --array=0-0" in (scripts / "ksptrace-N1-2.sbatch").read_text()
    assert "dry run: 1001 runs rendered" in captured.out


def test_noise_is_a_sweep_key_checked_at_load(write_campaign: Write) -> None:
    spec = load_spec(write_campaign(
        "[sweep]\nksp = 'gmres'\nnoise = ['none', 'exponential:scale=20us,p=0.1']\n"))
    noises = [r.param("noise") for r in spec.runs]
    assert noises == ["none", "exponential:scale=20us,p=0.1,per=rank,seed=0"]  # canonical
    assert "--noise" not in spec.runs[0].run_args()
    assert spec.runs[1].run_args()[spec.runs[1].run_args().index("--noise") + 1] == noises[1]
    # Runs without noise keep the id they had before the key existed.
    plain = load_spec(write_campaign("[sweep]\nksp = 'gmres'\n", name="plain.toml"))
    assert spec.runs[0].run_id == plain.runs[0].run_id
    with pytest.raises(CampaignError, match="unknown noise distribution 'gauss'"):
        load_spec(write_campaign("[sweep]\nnoise = 'gauss:scale=1us'\n", name="bad.toml"))
    with pytest.raises(CampaignError, match=r"p is a probability, must be in \[0, 1\]"):
        load_spec(write_campaign("[sweep]\nnoise = 'fixed:value=1us,p=-1'\n", name="bad2.toml"))


def test_noise_naming_a_rank_or_node_a_run_lacks_is_refused(write_campaign: Write) -> None:
    """Issue 50: ranks=5 at P = 2 detoured nowhere, and the campaign ran it as noisy."""
    with pytest.raises(CampaignError, match=r"campaign.toml:3: run \w+ \(.* P=2 .*\): noise "
                       r"'fixed.*' names rank 2-3, but the run has 2 ranks"):
        load_spec(write_campaign("[sweep]\nnprocs = [4, 2]\nnoise = 'fixed:value=1us,ranks=1-3'\n"))
    node = "[sweep]\nnprocs = 4\nnoise = 'fixed:value=1us,per=node,ranks=1'\n[scheduler]\n"
    assert len(load_spec(write_campaign(node + "nodes = 2\n", name="two.toml")).runs) == 1
    with pytest.raises(CampaignError, match="names node 1, but the run has 1 node"):
        load_spec(write_campaign(node + "ranks_per_node = 4\n", name="one.toml"))
    # p = 0 detours nowhere anyway: not refused
    assert load_spec(write_campaign("[sweep]\nnoise = 'fixed:value=1us,p=0,ranks=9'\n",
                                    name="idle.toml")).runs
