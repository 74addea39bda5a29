"""PLogP measured for real (issue 32): ``ksptrace collectives --op plogp`` between two ranks
under Open MPI (and MPICH where its stack is built), its trace, and its report table."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ksptrace.collectives.params import message_sizes
from ksptrace.studies.collectives.p2p_table import model_of
from ksptrace.trace import collectives as ctrace
from tests.collectives.test_mpich import mpich_python
from tests.conftest import ROOT, solver_env

pytestmark = pytest.mark.mpi


def _run(python: str, *args: str, mpiexec: tuple[str, ...] = (),
         **extra: str) -> subprocess.CompletedProcess[str]:
    env = solver_env(PYTHONPATH=str(ROOT), **extra)
    return subprocess.run([python, "-m", "ksptrace", "collectives", *mpiexec, *args], env=env,
                          capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)


def _measured(tmp: Path, python: str = sys.executable, *mpiexec: str,
              **env: str) -> ctrace.CollectiveTrace:
    out = tmp / "p.h5"
    proc = _run(python, "--np", "2", "--op", "plogp", "--min-bytes", "1", "--max-bytes", "256K",
                "--repetitions", "5", "--out", str(out), mpiexec=mpiexec, **env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return ctrace.read(out)


def _check(t: ctrace.CollectiveTrace) -> None:
    assert t.operation == "plogp"
    assert t.parts is not None
    # 4 sizes per doubling by default: the transport's steps lie between powers of two
    sizes = message_sizes("plogp", 1, 256 * 1024, 4)
    assert len(sizes) == 68
    assert t.seconds.shape == (2, len(sizes), 5)
    assert t.message_bytes.tolist() == list(sizes)
    for name, values in t.parts.items():
        assert values.shape == t.seconds.shape, name
    med = {k: np.median(v, axis=(0, 2)) for k, v in t.parts.items()}
    assert (med["send_overhead_seconds"] > 0).all()
    assert (med["recv_overhead_seconds"] > 0).all()
    # a 256 KiB message costs more than a 1-byte one, on every measure
    for values in (np.median(t.seconds, axis=(0, 2)), *med.values()):
        assert values[-1] > 3 * values[0]
    model = model_of(t)
    assert model.L >= 0
    # within a piece the gap does not fall (a break may start lower: g bends at the eager limit)
    assert all(b >= 0 for b in model.gap.slopes)
    assert (model.gap(t.message_bytes) > 0).all()


def test_plogp_under_open_mpi_and_its_report(tmp_path: Path) -> None:
    t = _measured(tmp_path)
    _check(t)
    if shutil.which("cc") is not None:  # timed in C, and the trace says so
        assert t.attrs["plogp_timing"] == "c"
        assert "plogp_timing_note" not in t.attrs
    report = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "ksptrace", "analyze", str(tmp_path / "p.h5"),
                           "--out", str(report), "--no-figures"], env=solver_env(),
                          capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    md = (report / "collectives.md").read_text()
    assert "### PLogP between two ranks (Open MPI" in md
    assert "o_s(m) = " in md
    assert "LogP at 1 B: L = " in md
    assert (report / "collectives_plogp.csv").read_text().startswith("bytes,rtt_half_us,")


def test_plogp_through_mpi4py_says_so(tmp_path: Path) -> None:
    t = _measured(tmp_path, KSPTRACE_PLOGP_TIMING="python")
    _check(t)
    assert t.attrs["plogp_timing"] == "python"
    assert t.attrs["plogp_timing_note"] == "KSPTRACE_PLOGP_TIMING=python"


def test_plogp_under_mpich(tmp_path: Path) -> None:
    python = mpich_python()
    t = _measured(tmp_path, python, "--mpiexec", "mpiexec.mpich")
    _check(t)
    if shutil.which("cc") is not None:  # MPICH's handles are ints: the same source serves
        assert t.attrs["plogp_timing"] == "c", t.attrs.get("plogp_timing_note")


@pytest.mark.parametrize(("args", "said"), [
    (("--np", "1"), "run it with --np 2 (got 1 ranks)"),
    (("--np", "3"), "run it with --np 2 (got 3 ranks)"),
    (("--np", "2", "--algorithm", "ring"), "there is no collective algorithm to force"),
])
def test_plogp_refuses_what_it_cannot_do(tmp_path: Path, args: tuple[str, ...],
                                         said: str) -> None:
    proc = _run(sys.executable, "--op", "plogp", *args, "--out", str(tmp_path))
    assert proc.returncode == 2
    assert said in proc.stderr
    assert proc.stderr.count("\n") == 1
    assert not list(tmp_path.iterdir())
