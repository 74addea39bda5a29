"""The C monitor context's lifetime under ``ksptrace.record`` (issue 27), under ``mpiexec -n 1``
and ``-n 2``, and with the monitor built with AddressSanitizer: record / cancel the monitors /
record / collect garbage (a use-after-free before), a KSP destroyed inside a block (a
segmentation fault before), eight blocks, two threads, and a nested block (which silently lost
the outer block's later solves before)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, solver_env

pytestmark = [pytest.mark.mpi, pytest.mark.usefixtures("require_petsc")]
SCRIPT = Path(__file__).with_name("record_lifetime.py")
SCENARIOS = ("cancel", "destroy", "blocks8", "threads", "nested")


def _libasan() -> str | None:
    cc = shutil.which("gcc")
    if cc is None:
        return None
    path = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True,
                          check=False).stdout.strip()
    return path if Path(path).is_file() else None


def run(tmp: Path, scenario: str, nprocs: int, asan: bool = False) -> dict[str, object]:
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("mpiexec not found")
    env = solver_env(PYTHONPATH=str(ROOT), KSPTRACE_MONITOR="c",
                     KSPTRACE_CACHE_DIR=str(tmp / "cache"))
    argv = [mpiexec, "-n", str(nprocs)]
    if asan:
        lib = _libasan()
        if lib is None:
            pytest.skip("AddressSanitizer needs gcc's libasan (Debian: libasan8)")
        env.update(KSPTRACE_MONITOR_CFLAGS="-fsanitize=address -fno-omit-frame-pointer -g",
                   LD_PRELOAD=lib, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0")
        argv += ["-x", "LD_PRELOAD", "-x", "ASAN_OPTIONS", "-x", "KSPTRACE_MONITOR_CFLAGS"]
    out = tmp / scenario
    out.mkdir()
    proc = subprocess.run([*argv, sys.executable, str(SCRIPT), str(out), scenario], env=env,
                          capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)
    text = proc.stdout + proc.stderr
    assert "AddressSanitizer" not in text, text[-3000:]
    assert proc.returncode == 0, text[-3000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 1, text[-2000:]
    return rows[0]


def check(row: dict[str, object], scenario: str) -> None:
    if scenario == "cancel":
        assert row["inside"] == 2
    elif scenario == "destroy":
        assert "destroyed inside the ksptrace.record block" in str(row["error"])
    elif scenario == "blocks8":
        assert row["counts"] == [1, 2, 3, 1, 2, 3, 1, 2]
    elif scenario == "threads":
        assert row["counts"] == [3, 3]
    else:
        assert "cannot nest" in str(row["error"])


@pytest.mark.parametrize("nprocs", [1, 2])
@pytest.mark.parametrize("scenario", ["cancel", "destroy", "nested"])
def test_lifetimes(tmp_path: Path, scenario: str, nprocs: int) -> None:
    check(run(tmp_path, scenario, nprocs), scenario)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_no_address_sanitizer_report(tmp_path: Path, scenario: str) -> None:
    check(run(tmp_path, scenario, 1, asan=True), scenario)


@pytest.mark.slow
def test_no_address_sanitizer_report_on_two_ranks(tmp_path: Path) -> None:
    check(run(tmp_path, "cancel", 2, asan=True), "cancel")
