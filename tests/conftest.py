"""Shared fixtures: running the ksptrace command (and so mpiexec) from the tests."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def solver_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
    )
    env.update(extra)
    return env


def petsc_available() -> bool:
    from ksptrace.errors import EnvironmentProblem
    from ksptrace.harness.petsc.petscenv import locate_petsc4py

    try:
        locate_petsc4py({})
    except EnvironmentProblem:
        return False
    return True


@pytest.fixture(scope="session")
def require_petsc() -> None:
    if not petsc_available():
        if os.environ.get("KSPTRACE_REQUIRE_PETSC"):
            pytest.fail("petsc4py is required here (KSPTRACE_REQUIRE_PETSC is set) but not found")
        pytest.skip("petsc4py not available: solver tests need Debian's python3-petsc4py")


def ctrl_c_able() -> None:
    """A ``preexec_fn`` for a child the test will send SIGINT: the default disposition, so its
    Python turns SIGINT into KeyboardInterrupt even when the suite itself was started with
    SIGINT ignored (a background job of a non-interactive shell, as CI may start it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def dies_with_the_suite() -> None:
    """A ``preexec_fn`` for a helper process that must not outlive the test run (a CPU hog):
    the kernel kills it when its parent, pytest, ends, even by SIGTERM or SIGKILL, where a
    ``finally`` never runs (Linux's PR_SET_PDEATHSIG; elsewhere nothing is done)."""
    if sys.platform == "linux":
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1


def sigint_ignored() -> None:
    """A ``preexec_fn``: start the child as a script's background job is started."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


Runner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="session")
def ksptrace_cli(require_petsc: None) -> Runner:
    """Run ``python -m ksptrace ARGS`` in a subprocess; returns the completed process."""

    def run(*args: str, timeout: float = 240, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ksptrace", *args],
            env=solver_env(**env),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
            check=False,
        )

    return run


@pytest.fixture
def mount_tmpfs(tmp_path: Path) -> Iterator[Callable[[str, str], Path]]:
    """Mount a small tmpfs (root only) under tmp_path, e.g. ``mount_tmpfs("full", "size=64k")``;
    skips with the reason where that is impossible; unmounted afterwards, last first."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root (CI runs the tests as root)")
    mounted: list[Path] = []

    def mount(name: str, options: str) -> Path:
        where = tmp_path / name
        where.mkdir()
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        subprocess.run(["umount", str(where)], check=False)
