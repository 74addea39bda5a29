"""The C stamping monitor (ksptrace/harness/monitoring/stamp_monitor.c) called as PETSc calls it,
its build and cache, and the choice between it and the Python monitor."""

from __future__ import annotations

import ctypes
import itertools
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ksptrace.errors import EnvironmentProblem
from ksptrace.harness.monitoring import native

CLOCK = ctypes.CFUNCTYPE(ctypes.c_double)
MONITOR = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_double,
                           ctypes.c_void_p)
DESTROY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))

needs_cc = pytest.mark.skipif(native._compiler() is None, reason="no C compiler on this machine")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache folder, and an empty temporary folder behind it."""
    monkeypatch.setenv("KSPTRACE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(native.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    monkeypatch.delenv("CC", raising=False)
    return tmp_path / "cache"


class Harness:
    """The C monitor of a 4-byte-int, 8-byte-real PETSc, with a clock that ticks 0.5 s."""

    def __init__(self, capacity: int) -> None:
        loaded = native.load_library(4, 8)
        assert not isinstance(loaded, str), loaded
        self.lib, self.path = loaded
        ticks = itertools.count(100.0, 0.5)
        self.clock = CLOCK(lambda: next(ticks))  # kept alive: C holds its address
        self.call = MONITOR(native._address(self.lib.ksptrace_stamp))
        self.destroy = DESTROY(native._address(self.lib.ksptrace_stamp_destroy))
        self.ctx = self.lib.ksptrace_stamp_new(native._address(self.clock), 0.0,
                                               None, None, None, None, None)
        self.stamps, self.norms, self.beyond = self.arrays(capacity)
        self.target(7)

    @staticmethod
    def arrays(capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (np.full(capacity, np.nan), np.full(capacity, np.nan),
                np.zeros(1, dtype=np.int64))

    def target(self, owner: int, arrays: Any = None) -> None:
        if arrays is not None:
            self.stamps, self.norms, self.beyond = arrays
        self.lib.ksptrace_stamp_target(self.ctx, self.stamps.ctypes.data,
                                       self.norms.ctypes.data, self.beyond.ctypes.data,
                                       self.stamps.shape[0], owner)

    def __call__(self, its: int, rnorm: float) -> int:
        return int(self.call(None, its, rnorm, self.ctx))


@needs_cc
def test_stamps_and_norms_land_at_their_iteration(cache: Path) -> None:
    mon = Harness(4)
    for its, norm in enumerate((1.0, 0.5, 0.25, 0.125)):
        assert mon(its, norm) == 0
    np.testing.assert_array_equal(mon.stamps, [100.0, 100.5, 101.0, 101.5])
    np.testing.assert_array_equal(mon.norms, [1.0, 0.5, 0.25, 0.125])
    mon(2, 9.0)  # a method that reports one number twice keeps the later report
    assert mon.stamps[2] == 102.0
    assert mon.norms[2] == 9.0
    assert mon.beyond[0] == 0


@needs_cc
def test_calls_beyond_the_capacity_are_counted_not_written(cache: Path) -> None:
    mon = Harness(2)
    for its in (0, 1, 5, 3):
        mon(its, 1.0)
    assert mon.beyond[0] == 5
    assert np.isfinite(mon.stamps).all()
    assert mon.stamps.shape == (2,)


@needs_cc
def test_a_disabled_context_writes_nothing_and_only_its_owner_disables_it(cache: Path) -> None:
    mon = Harness(3)
    mon.lib.ksptrace_stamp_disable(mon.ctx, 8)  # another monitor's owner: still on
    mon(0, 1.0)
    assert mon.stamps[0] == 100.0
    mon.lib.ksptrace_stamp_disable(mon.ctx, 7)
    mon(1, 1.0)
    assert np.isnan(mon.stamps[1])
    fresh = Harness.arrays(5)
    mon.target(9, fresh)  # a resize points it at new arrays and enables it again
    mon(4, 2.0)
    assert fresh[0][4] == 100.5
    assert fresh[1][4] == 2.0


@needs_cc
def test_petsc_and_python_each_hold_a_reference(cache: Path) -> None:
    mon = Harness(2)
    ksp = ctypes.c_void_p(0x1234)
    mon.lib.ksptrace_stamp_bind(mon.ctx, ksp)
    assert mon.lib.ksptrace_stamp_serves(mon.ctx, ksp) == 1
    assert mon.lib.ksptrace_stamp_serves(mon.ctx, ctypes.c_void_p(0x5678)) == 0
    slot = ctypes.c_void_p(mon.ctx)
    assert mon.destroy(ctypes.byref(slot)) == 0  # KSPDestroy
    assert slot.value is None
    assert mon.lib.ksptrace_stamp_serves(mon.ctx, ksp) == 0  # Python's reference keeps it
    mon(0, 1.0)
    assert np.isnan(mon.stamps[0])  # PETSc let go: nothing is written any more
    mon.lib.ksptrace_stamp_release(mon.ctx)


@needs_cc
def test_the_library_is_built_once_and_then_reused(cache: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    first = native.load_library(4, 8)
    assert not isinstance(first, str)
    assert first[1].parent == cache

    def no_compiling(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("compiled again")

    monkeypatch.setattr(native.subprocess, "run", no_compiling)
    again = native.load_library(4, 8)
    assert not isinstance(again, str)
    assert again[1] == first[1]
    monkeypatch.undo()
    monkeypatch.setenv("KSPTRACE_CACHE_DIR", str(cache))
    monkeypatch.setattr(native.tempfile, "gettempdir", lambda: str(cache.parent / "tmp"))
    monkeypatch.setenv("CC", "false")  # a compiler that fails: no library, nothing left behind
    failed = native.load_library(8, 4)  # 64-bit indices, single precision: another build
    assert failed == "false failed on stamp_monitor.c: no message"
    assert [p.name for p in cache.iterdir()] == [first[1].name]


@needs_cc
def test_a_cached_library_serves_a_machine_without_compiler(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Built once where a compiler is (a login node, the same home), loaded where none is."""
    built = native.load_library(4, 8)
    assert not isinstance(built, str)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert native._compiler() is None
    again = native.load_library(4, 8)
    assert not isinstance(again, str)
    assert again[1] == built[1]
    assert native.load_library(8, 8) == "no C compiler found ($CC, cc, gcc or clang)"


def test_no_compiler_and_odd_types_say_why(cache: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    monkeypatch.setenv("CC", "/nonexistent/cc")
    why = native.load_library(4, 8)
    assert isinstance(why, str)
    assert why.startswith("/nonexistent/cc did not run")
    quad = native.load_library(4, 16)
    assert isinstance(quad, str)
    assert "16-byte reals" in quad
    monkeypatch.delenv("CC")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert native.load_library(4, 8) == "no C compiler found ($CC, cc, gcc or clang)"


def test_the_monitor_mode_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(native.MONITOR_ENV, raising=False)
    assert native.mode() == "auto"
    monkeypatch.setenv(native.MONITOR_ENV, "Python")
    assert native.mode() == "python"
    assert native.native(lambda: 0.0) == f"{native.MONITOR_ENV}=python"
    monkeypatch.setenv(native.MONITOR_ENV, "fortran")
    with pytest.raises(EnvironmentProblem, match="'fortran' is not a monitor; use auto, c"):
        native.mode()


INTERRUPTED = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # a suite started in the background
from ksptrace.harness.petsc.petscenv import init_petsc
petsc = init_petsc([])
from mpi4py import MPI
from ksptrace.harness.monitoring.monitor import StampMonitor
from ksptrace.harness.petsc.petsc_compat import python_errors_as_raised
from ksptrace.problems import registry
inst = registry.get("laplace1d").build(petsc.COMM_WORLD, 2000, {})
ksp = inst.ksp
ksp.setType("gmres")
ksp.setTolerances(rtol=0.0, atol=0.0, divtol=1e300, max_it=10_000_000)
monitor = StampMonitor(10_000_001, MPI.Wtime)
print(monitor.attach(ksp), flush=True)
t0 = time.monotonic()
try:
    with python_errors_as_raised():  # petsc4py 3.26 wraps it in PETSc.Error
        ksp.solve(inst.rhs, inst.solution)
except KeyboardInterrupt:
    done = int((monitor.stamps == monitor.stamps).sum())
    print(f"interrupted {time.monotonic() - t0:.2f} {done}", flush=True)
    sys.exit(0)
print("finished", flush=True)
"""


@pytest.mark.usefixtures("require_petsc")
@needs_cc
def test_ctrl_c_interrupts_a_solve_stamped_in_c(tmp_path: Path) -> None:
    """The C monitor runs Python's signal handlers every POLL_SECONDS: a SIGINT raises
    KeyboardInterrupt out of KSPSolve, as it does with a Python monitor."""
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT, solver_env

    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTED], cwd=ROOT, text=True,
                            env=solver_env(KSPTRACE_MONITOR="c",
                                           KSPTRACE_CACHE_DIR=str(tmp_path)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "c"
        time.sleep(1.0)  # solving: 10^7 iterations would take minutes
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        out, err = proc.communicate(timeout=60)
        waited = time.monotonic() - sent
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    word, seconds, stamped = out.split()
    assert word == "interrupted"
    # minutes of solve were left: stopping within 30 s (50 ms polls, on a loaded machine) is
    # the monitor letting Python in, not the solve's end
    assert waited < 30.0
    assert 0.5 < float(seconds) < 60.0
    assert int(stamped) > 1000  # the C monitor was stamping until the signal


@needs_cc
def test_an_unusable_cache_folder_falls_back_to_the_temporary_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("KSPTRACE_CACHE_DIR", str(blocker / "cache"))  # cannot be created
    monkeypatch.setattr(native.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    monkeypatch.delenv("CC", raising=False)
    loaded = native.load_library(4, 8)
    assert not isinstance(loaded, str), loaded
    assert loaded[1].parent.parent == tmp_path / "tmp"
    assert loaded[1].parent.name.startswith("ksptrace-")
