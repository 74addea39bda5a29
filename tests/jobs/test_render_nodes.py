"""Campaigns across nodes: the ``nodes`` key, golden Slurm and PBS scripts, oversubscription.

Regenerate the golden files after an intended change with
``KSPTRACE_UPDATE_GOLDEN=1 pytest tests/jobs/test_render_nodes.py`` and review the diff.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from ksptrace.cli.campaign import plan
from ksptrace.errors import CampaignError
from ksptrace.harness.petsc.petsc_types import BUILTIN
from ksptrace.jobs.backends import get_backend
from ksptrace.jobs.expand import load_spec

DATA = Path(__file__).resolve().parents[1] / "data" / "jobs"
GOLDEN = DATA / "golden-nodes"
UPDATE = os.environ.get("KSPTRACE_UPDATE_GOLDEN") == "1"


@pytest.mark.parametrize("backend", ["slurm", "pbs"])
def test_golden_scripts_across_nodes(backend: str) -> None:
    spec = load_spec(DATA / "golden_nodes.toml", petsc=BUILTIN)
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


def test_slurm_one_array_per_shape() -> None:
    """P = 2, 4, 8 on 2 nodes: three shapes (1, 2, 4 ranks per node), each its own array, so
    that srun and mpiexec put P / 2 ranks on each node."""
    spec = load_spec(DATA / "golden_nodes.toml", petsc=BUILTIN)
    scripts = get_backend("slurm").render(spec, spec.runs)
    assert [s.path for s in scripts] == [f"scripts/slurm/nodes-N2-R{r}.sbatch" for r in (1, 2, 4)]
    for script, (nprocs, per_node) in zip(scripts, [(2, 1), (4, 2), (8, 4)], strict=True):
        lines = script.text.splitlines()
        assert "#SBATCH --nodes=2" in lines
        assert f"#SBATCH --ntasks-per-node={per_node}" in lines
        assert f"srun --mpi=pmix --ntasks {nprocs} --nodes 2 " in script.text
        assert ("OVERSUBSCRIBED: 4 ranks on 2 cores per node" in script.text) == (nprocs == 8)


def test_pbs_select_per_shape() -> None:
    spec = load_spec(DATA / "golden_nodes.toml", petsc=BUILTIN)
    texts = [s.text.splitlines() for s in get_backend("pbs").render(spec, spec.runs)]
    assert [[ln for ln in t if ln.startswith("#PBS -l select")] for t in texts] == [
        [f"#PBS -l select=2:ncpus=2:mpiprocs={r}"] for r in (1, 2, 4)]
    # one chunk per host: without it PBS packed a select=2 onto one node that had room
    assert all("#PBS -l place=scatter" in t for t in texts)


def test_plan_flags_oversubscribed_runs() -> None:
    spec = load_spec(DATA / "golden_nodes.toml", petsc=BUILTIN)
    out = io.StringIO()
    plan(spec, out, io.StringIO())
    rows = [ln for ln in out.getvalue().splitlines() if ln.strip()[:1].isdigit()]
    assert [r.split()[6] for r in rows] == ["2", "4", "8"]       # P
    assert [r.split()[9] for r in rows] == ["2", "2", "2"]       # nodes
    assert ["oversubscribed" in r for r in rows] == [False, False, True]


@pytest.mark.parametrize(("change", "message"), [
    ("nprocs = [2, 4, 8]", "nprocs = [1, 2]"),
    ("cores_per_node = 2", "ranks_per_node = 2"),
    ("oversubscribe = true", "oversubscribe = false"),
])
def test_bad_node_layouts_are_refused(tmp_path: Path, change: str, message: str) -> None:
    text = (DATA / "golden_nodes.toml").read_text().replace(change, message)
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(CampaignError) as err:
        load_spec(path, petsc=BUILTIN)
    text = str(err.value)
    assert text.startswith(f"{path}:"), text
    expected = {"nprocs = [1, 2]": "a run with nprocs 1 cannot span nodes = 2",
                "ranks_per_node = 2": "nprocs 8 does not fit nodes = 2 x ranks_per_node = 2",
                "oversubscribe = false": "nprocs 8 on 2 nodes puts 4 ranks on a node of "
                                         "cores_per_node = 2"}[message]
    assert expected in text, text


def test_ranks_per_node_with_nodes_is_one_array(tmp_path: Path) -> None:
    """nodes = 2 and ranks_per_node = 2: P = 2 and 4 share one allocation shape, one array;
    srun --nodes 2 spreads P = 2 as one rank per node."""
    text = (DATA / "golden_nodes.toml").read_text().replace(
        "nprocs = [2, 4, 8]", "nprocs = [2, 4]").replace("cores_per_node = 2",
                                                       "ranks_per_node = 2")
    path = tmp_path / "c.toml"
    path.write_text(text)
    spec = load_spec(path, petsc=BUILTIN)
    (script,) = get_backend("slurm").render(spec, spec.runs)
    assert script.path == "scripts/slurm/nodes-N2-R2.sbatch"
    assert "#SBATCH --array=0-1" in script.text.splitlines()
    assert "#SBATCH --ntasks-per-node=2" in script.text.splitlines()
    assert "--ntasks 2 --nodes 2 " in script.text
    assert "--ntasks 4 --nodes 2 " in script.text
