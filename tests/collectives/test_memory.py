"""The memory check before a run (issue 66): what this node (and its control group) can give,
the ranks on this node, and the one line that refuses a size too large and says what fits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ksptrace.cli import collectives as cli
from ksptrace.collectives import memory, operations
from ksptrace.errors import UsageError
from tests.conftest import ROOT, solver_env

GiB, MiB = 1 << 30, 1 << 20


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


MEMINFO = f"MemTotal: {32 * GiB // 1024} kB\nMemAvailable: {20 * GiB // 1024} kB\n"


def test_a_cgroup_v2_limit_of_an_ancestor_bounds_what_is_available(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "proc/meminfo": MEMINFO, "proc/self/cgroup": "0::/job/step\n",
        "sys/fs/cgroup/job/memory.max": f"{8 * GiB}\n",
        "sys/fs/cgroup/job/memory.current": f"{1 * GiB}\n",
        "sys/fs/cgroup/job/step/memory.max": "max\n",  # no limit of its own
        "sys/fs/cgroup/job/step/memory.current": f"{GiB // 2}\n"})
    assert memory.meminfo_available(root) == 20 * GiB
    assert memory.cgroup_headroom(root) == 7 * GiB
    assert memory.available_bytes(root) == 7 * GiB


def test_a_cgroup_v1_limit_counts_too(tmp_path: Path) -> None:
    folder = "sys/fs/cgroup/memory/slurm/uid_0/job_7"
    root = _tree(tmp_path, {
        "proc/meminfo": MEMINFO,
        "proc/self/cgroup": "5:cpu,cpuacct:/slurm/uid_0/job_7\n4:memory:/slurm/uid_0/job_7\n",
        f"{folder}/memory.limit_in_bytes": f"{4 * GiB}\n",
        f"{folder}/memory.usage_in_bytes": f"{3 * GiB}\n",
        "sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
        "sys/fs/cgroup/memory/memory.usage_in_bytes": f"{5 * GiB}\n"})
    assert memory.available_bytes(root) == 1 * GiB


def test_without_a_cgroup_limit_the_node_s_memory(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"proc/meminfo": MEMINFO, "proc/self/cgroup": "0::/\n"})
    assert memory.cgroup_headroom(root) is None
    assert memory.available_bytes(root) == 20 * GiB
    assert memory.available_bytes(tmp_path / "nothing") is None  # unknown: not refused


def test_the_ranks_on_this_node() -> None:
    assert memory.local_ranks(8, {"OMPI_COMM_WORLD_LOCAL_SIZE": "2"}) == 2
    assert memory.local_ranks(8, {"MPI_LOCALNRANKS": "4"}) == 4
    assert memory.local_ranks(8, {"OMPI_COMM_WORLD_LOCAL_SIZE": "x"}) == 8  # all of them
    assert memory.local_ranks(8, {}) == 8


def test_the_refusal_says_what_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    # 2 ranks of plogp at 1 GiB need 2 x (3 GiB + 5 MiB); half of 4 GiB fits 256 MiB
    monkeypatch.setattr(cli, "available_bytes", lambda: 4 * GiB)
    with pytest.raises(UsageError) as refused:
        cli.check_memory("plogp", GiB, 2, 2)
    assert str(refused.value) == (
        "--max-bytes 1073741824 needs 6154 MiB of buffers for plogp on 2 ranks here, more than "
        "half of the 4096 MiB available; lower --max-bytes (--max-bytes 256M or less fits)")
    assert operations.buffer_bytes("plogp", 256 * MiB, 2) * 2 <= 2 * GiB
    assert operations.buffer_bytes("plogp", 512 * MiB, 2) * 2 > 2 * GiB
    cli.check_memory("plogp", 256 * MiB, 2, 2)  # and it does
    monkeypatch.setattr(cli, "available_bytes", lambda: 2 * MiB)  # not even 1 B's check
    with pytest.raises(UsageError, match=r"lower --max-bytes \(run fewer ranks on this node\)"):
        cli.check_memory("allreduce", 1 << 20, 2, 2)


@pytest.mark.mpi
@pytest.mark.parametrize("launcher", [(), ("mpiexec", "--oversubscribe", "-n", "2")])
def test_a_size_too_large_is_one_line_before_anything_runs(
        tmp_path: Path, launcher: tuple[str, ...]) -> None:
    np = () if launcher else ("--np", "2")
    proc = subprocess.run(
        [*launcher, sys.executable, "-m", "ksptrace", "collectives", *np, "--op", "plogp",
         "--max-bytes", "64G", "--out", str(tmp_path)],
        env=solver_env(PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=300,
        cwd=ROOT, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()  # (an external mpiexec adds its own box after the line)
    (line,) = lines if not launcher else [ln for ln in lines if "ksptrace" in ln]  # rank 0's
    assert line.startswith("ksptrace: error: --max-bytes 68719476736 needs 393226 MiB of "
                           "buffers for plogp on 2 ranks here, more than half of the ")
    assert line.endswith(" or less fits)")
    assert not any(tmp_path.iterdir())
