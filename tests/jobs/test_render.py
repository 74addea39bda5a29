"""Rendered scripts: golden Slurm and PBS files, and hostile strings that must stay inert.

Regenerate the golden files after an intended change with
``KSPTRACE_UPDATE_GOLDEN=1 pytest tests/jobs/test_render.py`` and review the diff.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ksptrace.errors import CampaignError
from ksptrace.harness.petsc.petsc_types import BUILTIN, KSP_TYPES, PC_TYPES, PetscTypes
from ksptrace.jobs.backends import BACKENDS, get_backend
from ksptrace.jobs.expand import load_spec
from ksptrace.jobs.runner import write_scripts
from ksptrace.jobs.spec import CampaignSpec

DATA = Path(__file__).resolve().parents[1] / "data" / "jobs"

GOLDEN = DATA / "golden"
UPDATE = os.environ.get("KSPTRACE_UPDATE_GOLDEN") == "1"


def golden_spec() -> CampaignSpec:
    return load_spec(DATA / "golden.toml")


@pytest.mark.parametrize("backend", ["slurm", "pbs", "local"])
def test_golden_scripts(backend: str) -> None:
    spec = golden_spec()
    if backend == "local":  # the default local launcher depends on this machine's mpiexec
        spec = dataclasses.replace(
            spec, scheduler=dataclasses.replace(spec.scheduler, launcher="harness"))
    scripts = get_backend(backend).render(spec, spec.runs)
    for script in scripts:
        golden = GOLDEN / script.path
        if UPDATE:
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_text(script.text)
        assert golden.exists(), f"no golden file {golden}; run with KSPTRACE_UPDATE_GOLDEN=1"
        assert script.text == golden.read_text(), f"{script.path} differs from {golden}"
    assert sorted(p.relative_to(GOLDEN).as_posix() for p in (GOLDEN / "scripts" / backend).rglob(
        "*") if p.is_file()) == sorted(s.path for s in scripts)


def test_slurm_directives_and_grouping() -> None:
    spec = golden_spec()
    scripts = get_backend("slurm").render(spec, spec.runs)
    assert [s.path for s in scripts] == ["scripts/slurm/golden-N1.sbatch",
                                         "scripts/slurm/golden-N2.sbatch"]
    one = scripts[0].text
    for line in ("#SBATCH --job-name=golden", "#SBATCH --nodes=1",
                 "#SBATCH --ntasks-per-node=64", "#SBATCH --time=00:45:00",
                 "#SBATCH --output=logs/%x-%A_%a.out", "#SBATCH --array=0-3%4",
                 "#SBATCH --exclusive", "#SBATCH --partition=compute",
                 "#SBATCH --account=proj-123", "#SBATCH --constraint=cache-quad"):
        assert line in one.splitlines()
    assert "srun --mpi=pmix --ntasks 64 --nodes 1 ksptrace run" in one
    assert "srun --mpi=pmix --ntasks 128 --nodes 2 ksptrace run" in scripts[1].text
    assert all(len(s.runs) == 4 for s in scripts)


def test_pbs_directives() -> None:
    spec = golden_spec()
    text = get_backend("pbs").render(spec, spec.runs)[1].text.splitlines()
    for line in ("#PBS -N golden", "#PBS -l select=2:ncpus=64:mpiprocs=64",
                 "#PBS -l walltime=00:45:00", "#PBS -J 0-3", "#PBS -j oe",
                 "#PBS -V",  # issue 66: a script resubmitted by hand keeps the environment
                 "#PBS -l place=scatter:excl", "#PBS -q compute", "#PBS -A proj-123",
                 "#PBS -l filesystems=home:grand",
                 'cd "$PBS_O_WORKDIR" || exit 1'):
        assert line in text
    # Debian's Open MPI has no PBS (tm) support: the allocation is passed by hand
    assert any(ln.strip().startswith(
        'cmd=(env OMPI_MCA_orte_set_default_slots=none mpiexec -n 128 -hostfile "$PBS_NODEFILE" '
        "ksptrace run") for ln in text)


def test_pbs_single_run_is_not_an_array(tmp_path: Path) -> None:
    path = tmp_path / "one.toml"
    path.write_text("[sweep]\nksp = 'cg'\n")
    spec = load_spec(path)
    text = get_backend("pbs").render(spec, spec.runs)[0].text
    assert "#PBS -J" not in text
    assert "task=${PBS_ARRAY_INDEX:-0}" in text


def test_rendering_is_pure() -> None:
    spec = golden_spec()
    for name in BACKENDS:
        a = get_backend(name).render(spec, spec.runs)
        b = get_backend(name).render(spec, spec.runs)
        assert a == b


FAKE_LAUNCHER = """#!/bin/bash
while [ $# -gt 0 ]; do
  case "$1" in
    --mpi=*) shift ;;
    --ntasks|--nodes|-n) shift 2 ;;
    -hostfile) [ -r "$2" ] || { echo "fake launcher: no host file '$2'" >&2; exit 9; }; shift 2 ;;
    *) break ;;
  esac
done
exec "$@"
"""
DUMP = ("import json, os, sys; "
        "open(os.environ['ARGV_OUT'], 'a').write(json.dumps(sys.argv[1:]) + '\\n')")


HOSTILE_KSP = ("gmres; touch PWNED", "it's \"quoted\" $(touch PWNED) `touch PWNED`")
HOSTILE_PC = "a b\nc"


def test_hostile_file_is_refused_at_load() -> None:
    """Unknown KSP names and a newline never get as far as a script."""
    with pytest.raises(CampaignError, match=r"hostile.toml:10: 'pc' holds a control character"):
        load_spec(DATA / "hostile.toml", petsc=BUILTIN)
    text = (DATA / "hostile.toml").read_text().replace('pc = "a b\\nc"', 'pc = "jacobi"')
    with pytest.raises(CampaignError, match=r":9: unknown KSP type 'gmres; touch PWNED'; did "
                                            r"you mean 'gmres'\?"):
        load_campaign_file_text(text)


def load_campaign_file_text(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c.toml"
        path.write_text(text)
        load_spec(path, petsc=BUILTIN)


def hostile_spec(tmp_path: Path, output: Path) -> CampaignSpec:
    """hostile.toml as the renderer would see it if the file checks let it through: a PETSc
    that knows the hostile KSP names, and the newline put back into the PC name afterwards."""
    text = (DATA / "hostile.toml").read_text()
    path = tmp_path / "hostile.toml"
    path.write_text(text.replace('pc = "a b\\nc"', 'pc = "jacobi"'))
    lenient = PetscTypes("a test PETSc", KSP_TYPES | set(HOSTILE_KSP), PC_TYPES)
    spec = load_spec(path, output=output, petsc=lenient)
    runs = tuple(dataclasses.replace(r, params=tuple(
        (k, HOSTILE_PC if k == "pc" else v) for k, v in r.params)) for r in spec.runs)
    return dataclasses.replace(spec, runs=runs)


@pytest.mark.parametrize("backend", ["slurm", "pbs", "local"])
def test_hostile_strings_reach_the_run_verbatim(tmp_path: Path, backend: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    spec = hostile_spec(tmp_path, work / "out dir 'x' $(touch PWNED)")
    spec = dataclasses.replace(spec, command=(sys.executable, "-c", DUMP))
    if backend == "local":  # the default launcher runs this machine's mpiexec by its full path
        spec = dataclasses.replace(
            spec, scheduler=dataclasses.replace(spec.scheduler, launcher="harness"))
    assert len(spec.runs) == 2
    scripts = get_backend(backend).render(spec, spec.runs)
    write_scripts(spec, scripts)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("srun", "mpiexec"):
        (bindir / name).write_text(FAKE_LAUNCHER)
        (bindir / name).chmod(stat.S_IRWXU)
    argv_out = tmp_path / "argv.jsonl"
    nodefile = tmp_path / "node file $(touch PWNED)"  # PBS's host file, one word however named
    nodefile.write_text("node1\n")
    for script in scripts:
        for index, run in enumerate(script.runs):
            env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}",
                   "ARGV_OUT": str(argv_out), "SLURM_ARRAY_TASK_ID": str(index),
                   "SLURM_SUBMIT_DIR": str(spec.output), "SLURM_ARRAY_JOB_ID": "77",
                   "PBS_ARRAY_INDEX": str(index), "PBS_O_WORKDIR": str(spec.output),
                   "PBS_JOBID": "77[1].server", "PBS_NODEFILE": str(nodefile)}
            proc = subprocess.run(["bash", str(spec.output / script.path), str(index)], env=env,
                                  cwd=work, capture_output=True, text=True, check=False)
            assert proc.returncode == 0, proc.stderr
            got = json.loads(argv_out.read_text().splitlines()[-1])
            expected = run.run_args(get_backend(backend).launcher(spec).run_flags(run.nprocs))
            assert got == expected
            assert "setup-ran" in proc.stdout
    calls = [json.loads(x) for x in argv_out.read_text().splitlines()]
    assert {c[c.index("--ksp") + 1] for c in calls} == set(HOSTILE_KSP)
    assert {c[c.index("--pc") + 1] for c in calls} == {HOSTILE_PC}
    assert not list(tmp_path.rglob("PWNED")), "a hostile string was executed"


@pytest.mark.parametrize("backend", ["slurm", "pbs"])
def test_committed_paper_theta_scripts_are_current(backend: str) -> None:
    example = DATA.parents[2] / "examples" / "paper-theta.toml"
    spec = load_spec(example)
    scripts = get_backend(backend).render(spec, spec.runs)
    assert len(spec.runs) == 2 * 4 * 4 * 3
    assert len(scripts) == 4  # 16, 32, 64 and 128 nodes
    rendered = example.parent / "rendered" / "paper-theta"  # the committed copy
    for script in scripts:
        committed = rendered / script.path
        assert committed.read_text() == script.text, (
            f"{committed} is stale; rerun: python scripts/render_examples.py")


# --- arrays split to fit max_array_size --------------------------------------------------------

SPLIT = """
[campaign]
name = "split"
[sweep]
ksp = ["gmres", "cg"]
n = [1000, 2000, 3000, 4000, 5000]
nprocs = 4
[scheduler]
ranks_per_node = 4
max_parallel = 2
max_array_size = 4
"""


def split_spec(tmp_path: Path) -> CampaignSpec:
    path = tmp_path / "split.toml"
    path.write_text(SPLIT)
    return load_spec(path, petsc=BUILTIN)


def directives(text: str, prefix: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(prefix)]


def test_slurm_arrays_are_split(tmp_path: Path) -> None:
    spec = split_spec(tmp_path)
    scripts = get_backend("slurm").render(spec, spec.runs)
    assert [s.path for s in scripts] == [f"scripts/slurm/split-N1-{i}.sbatch" for i in (1, 2, 3)]
    assert [r for s in scripts for r in s.runs] == list(spec.runs)
    assert [len(s.runs) for s in scripts] == [4, 4, 2]
    for script, array, offset in zip(scripts, ("0-3%2", "0-3%2", "0-1%2"), (0, 4, 8),
                                     strict=True):
        assert directives(script.text, "#SBATCH") == [
            "#SBATCH --job-name=split", "#SBATCH --nodes=1", "#SBATCH --ntasks-per-node=4",
            "#SBATCH --time=01:00:00", "#SBATCH --output=logs/%x-%A_%a.out",
            f"#SBATCH --array={array}", "#SBATCH --exclusive"]
        number = offset // 4 + 1
        assert (f"# Array {number} of 3: task i runs run {offset} + i of this group "
                f"(task-index offset {offset}).") in script.text.splitlines()
        labels = [line.split(")")[0].strip() for line in script.text.splitlines()
                  if "run_id=" in line and line.strip()[0].isdigit()]
        assert labels == [str(i) for i in range(len(script.runs))]
        for i, run in enumerate(script.runs):
            assert f"  {i}) run_id={run.run_id} repetition={run.repetition}  #" in script.text


def test_pbs_arrays_are_split(tmp_path: Path) -> None:
    spec = split_spec(tmp_path)
    scripts = get_backend("pbs").render(spec, spec.runs)
    assert [s.path for s in scripts] == [f"scripts/pbs/split-N1-{i}.pbs" for i in (1, 2, 3)]
    assert [directives(s.text, "#PBS -J") for s in scripts] == [
        ["#PBS -J 0-3"], ["#PBS -J 0-3"], ["#PBS -J 0-1"]]
    assert directives(scripts[2].text, "#PBS") == [
        "#PBS -N split", "#PBS -l select=1:ncpus=4:mpiprocs=4", "#PBS -l walltime=01:00:00",
        "#PBS -J 0-1", "#PBS -V", "#PBS -j oe", "#PBS -o logs/", "#PBS -l place=scatter:excl"]


def test_a_group_that_fits_keeps_one_array(tmp_path: Path) -> None:
    path = tmp_path / "fits.toml"
    path.write_text(SPLIT.replace("max_array_size = 4", "max_array_size = 10"))
    spec = load_spec(path, petsc=BUILTIN)
    scripts = get_backend("slurm").render(spec, spec.runs)
    assert [s.path for s in scripts] == ["scripts/slurm/split-N1.sbatch"]
    assert "#SBATCH --array=0-9%2" in scripts[0].text.splitlines()
    assert "task-index offset" not in scripts[0].text


def test_default_max_array_size_is_1000(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    path.write_text("[sweep]\nn = " + str(list(range(1000, 3501))) + "\n")
    spec = load_spec(path, petsc=BUILTIN)
    assert spec.scheduler.max_array_size == 1000
    scripts = get_backend("slurm").render(spec, spec.runs)
    assert [len(s.runs) for s in scripts] == [1000, 1000, 501]
    assert [directives(s.text, "#SBATCH --array") for s in scripts] == [
        ["#SBATCH --array=0-999"], ["#SBATCH --array=0-999"], ["#SBATCH --array=0-500"]]
