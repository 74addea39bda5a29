"""What MPICH's ``default`` allreduce ran (issue 54), found at run time by NaN-payload
fingerprints (``ksptrace.collectives.fingerprint``, ``mpich_default``) and checked here against
an independent probe: forced through the environment at launch, as ``test_mpich.py`` does,
with payloads laid out differently from the package's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest

from ksptrace.collectives import fallbacks, fingerprint
from ksptrace.collectives.algorithms import default_forcing, forcing_for
from ksptrace.collectives.bench import BenchSettings, probes_default
from tests.collectives.test_mpich import _env, _fingerprints, mpich_python


def test_the_payload_names_the_rank_and_survives_a_nan_sum() -> None:
    a, b = fingerprint.nan_payloads(3, 0), fingerprint.nan_payloads(3, 6)
    assert np.isnan(a).all()
    with np.errstate(invalid="ignore"):
        first = a + b
    assert fingerprint.digest(first) == fingerprint.digest(a) != fingerprint.digest(b)


FP_RD, FP_RSA = ("1", "2", "3"), ("4", "5", "6")


@pytest.mark.parametrize(("default", "forced", "device", "ran", "why"), [
    (FP_RSA, [("recursive_doubling", FP_RD), ("reduce_scatter_allgather", FP_RSA)], True,
     "reduce_scatter_allgather", ""),
    # a forced algorithm that fell back is named by what it ran: no false ambiguity
    (FP_RD, [("recursive_doubling", FP_RD), ("recursive_doubling", FP_RD)], True,
     "recursive_doubling", ""),
    (FP_RSA, [("smp", FP_RSA), ("reduce_scatter_allgather", FP_RSA)], True, None,
     "ambiguous between reduce_scatter_allgather and smp"),
    (("7", "8", "9"), [("recursive_doubling", FP_RD)], True, None, "ch4 device's own"),
    (("7", "8", "9"), [("recursive_doubling", FP_RD)], False, None, "no forced MPIR"),
    (None, [("recursive_doubling", FP_RD)], True, None, "sum of bytes"),
])
def test_the_verdict(default: tuple[str, ...] | None, forced: list[tuple[str, tuple[str, ...]]],
                     device: bool, ran: str | None, why: str) -> None:
    verdict = fingerprint.judge(64, default, forced, device)
    assert verdict.ran == ran
    assert why in verdict.why_not


def test_the_summary_keeps_told_sizes_and_groups_the_rest() -> None:
    ran, note = fingerprint.summarise([
        fingerprint.Verdict(4, None, "bytes"), fingerprint.Verdict(8, "recursive_doubling"),
        fingerprint.Verdict(4096, None, "ambiguous"), fingerprint.Verdict(8192, None,
                                                                          "ambiguous")])
    assert ran == {8: "recursive_doubling"}
    assert note.endswith("not known at 4 B: bytes; at 4096, 8192 B: ambiguous")
    assert fingerprint.summarise([fingerprint.Verdict(4, None, "bytes")])[0] is None
    assert fingerprint.summarise([fingerprint.Verdict(8, "smp")]) == ({8: "smp"}, "")


def test_only_mpichs_unforced_allreduce_is_probed() -> None:
    def settings(library: str, operation: str = "allreduce", forced: bool = False
                 ) -> BenchSettings:
        forcing = (forcing_for("mpich", operation, "smp", mpich_names=("auto", "nb", "smp"))
                   if forced else default_forcing(library, operation))
        return BenchSettings(operation, (8,), 1, 0, forcing, Path("unused.h5"))

    assert probes_default(settings("mpich"), 3)
    assert not probes_default(settings("mpich"), 1)
    assert not probes_default(settings("mpich", forced=True), 3)
    assert not probes_default(settings("mpich", "bcast"), 3)
    assert not probes_default(settings("openmpi"), 3)


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [3, 4])
def test_a_default_mpich_run_records_what_ran(tmp_path: Path, nprocs: int) -> None:
    python = mpich_python()
    out = tmp_path / "default.h5"
    proc = subprocess.run([python, "-m", "ksptrace", "collectives", "--np", str(nprocs),
                           "--mpiexec", "mpiexec.mpich", "--op", "allreduce", "--min-bytes",
                           "4", "--max-bytes", "8K", "--repetitions", "1", "--warmup", "0",
                           "--out", str(out)], env=_env(python), capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with h5py.File(out, "r") as f:
        run = f["run"].attrs
        ran = {int(k): v for k, v in json.loads(run["algorithm_ran"]).items()}
        note = str(run["algorithm_note"])
    assert 4 not in ran  # bytes: no order to see
    assert "at 4 B: a sum of bytes" in note
    assert {8, 16, 1024}.issubset(ran)  # recorded where float64 shows the order...
    assert len(set(ran.values())) >= 2  # ...and the default changes algorithm with the size
    counts = tuple(m // 8 for m in ran)
    default = _fingerprints(tmp_path, python, nprocs, None, counts)  # nothing set
    forced = {name: _fingerprints(tmp_path, python, nprocs, name, counts)
              for name in sorted(set(ran.values()))}
    for m, name in ran.items():
        assert default[str(m // 8)] == forced[name][str(m // 8)], (m, name)
    told = 0  # not vacuous: where another algorithm really runs, its fingerprint differs
    for m, name in ran.items():
        for other in forced:
            if fallbacks.mpich_allreduce(other, m // 8, nprocs) != name:
                assert forced[other][str(m // 8)] != default[str(m // 8)], (m, name, other)
                told += 1
    assert told >= 3
    if nprocs == 4:  # smp and reduce_scatter_allgather reduce alike there: said, not guessed
        assert 8192 not in ran
        assert "8192 B: ambiguous between reduce_scatter_allgather and smp" in note


@pytest.mark.mpi
def test_the_probe_restores_the_variables_it_wrote(tmp_path: Path) -> None:
    python = mpich_python()
    script = tmp_path / "restore.py"
    script.write_text(
        "from mpi4py import MPI\n"
        "from ksptrace.collectives import mpit\n"
        "from ksptrace.collectives.mpich_default import ALLREDUCE_DEVICE, DEVICE, "
        "default_allreduce_ran\n"
        "names = [DEVICE, ALLREDUCE_DEVICE, 'MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM']\n"
        "with mpit.held_open():\n"
        "    before = mpit.read_int_cvars(names)\n"
        "    ran, note = default_allreduce_ran(MPI.COMM_WORLD, (8, 64))\n"
        "    after = mpit.read_int_cvars(names)\n"
        "assert None not in before.values() and before == after, (before, after)\n"
        "assert ran == {8: 'recursive_doubling', 64: 'reduce_scatter_allgather'}, (ran, note)\n"
        "print('ok', before)\n")
    proc = subprocess.run(["mpiexec.mpich", "-n", "2", python, str(script)],
                          env=_env(python), capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("ok") == 2
