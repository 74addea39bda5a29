"""The command leaves without the interpreter's teardown only when nothing needs it: atexit
functions still run, output is flushed, and live threads or MPI keep the ordinary exit."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

from ksptrace.cli import leave


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)


def test_atexit_functions_run_and_output_is_flushed(tmp_path: Path) -> None:
    mark = tmp_path / "ran"
    done = _run(
        "import atexit, sys\n"
        f"atexit.register(lambda: open({str(mark)!r}, 'w').write('atexit'))\n"
        "from ksptrace.cli.leave import leave\n"
        "sys.stdout.write('out'); sys.stderr.write('err')\n"
        "leave(3)\n")
    assert done.returncode == 3
    assert (done.stdout, done.stderr) == ("out", "err")
    assert mark.read_text() == "atexit"


def test_a_live_thread_is_waited_for(tmp_path: Path) -> None:
    mark = tmp_path / "thread"
    done = _run(
        "import threading, time\n"
        "def late():\n"
        "    time.sleep(0.5)\n"
        f"    open({str(mark)!r}, 'w').write('finished')\n"
        "threading.Thread(target=late).start()\n"
        "from ksptrace.cli.leave import leave\n"
        "leave(0)\n")
    assert done.returncode == 0
    assert mark.read_text() == "finished"  # os._exit would have cut the thread short


def test_mpi_and_petsc_keep_the_ordinary_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in leave.NEEDS_TEARDOWN:
        with monkeypatch.context() as m:
            m.setitem(sys.modules, name, types.ModuleType(name))
            assert leave.teardown_needed()


def test_the_command_leaves_with_its_exit_code(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "ksptrace", "show", str(tmp_path / "none.h5")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode != 0
    assert done.stderr.startswith("ksptrace: error:")
    assert "Traceback" not in done.stderr



def test_a_profiled_command_keeps_the_ordinary_exit(tmp_path: Path) -> None:
    """``python -m cProfile -o F -m ksptrace ...`` writes F after the command has returned."""
    out = tmp_path / "profile"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "ksptrace",
                           "show", str(tmp_path / "none.h5")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.stderr.startswith("ksptrace: error:")
    assert out.exists()  # os._exit would have ended the process before cProfile wrote it


def test_a_tracer_keeps_the_ordinary_exit() -> None:
    def tracer(*_: object) -> None:
        return None

    before = sys.gettrace()
    sys.settrace(tracer)
    try:
        assert leave.teardown_needed()
    finally:
        sys.settrace(before)


def _ksptrace(args: list[str], stdout: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``python -m ksptrace ARGS`` with standard output at /dev/full or closed (``>&-``)."""
    redirect = ">/dev/full" if stdout == "full" else ">&-"
    command = " ".join(f"'{a}'" for a in [sys.executable, "-m", "ksptrace", *args])
    return subprocess.run(["sh", "-c", f"exec {command} {redirect}"], capture_output=True,
                          text=True, timeout=120, check=False, cwd=tmp_path)


@pytest.mark.parametrize("stdout", ["full", "closed"])
@pytest.mark.parametrize("args", [["show", "t.h5"], ["--version"], ["show", "--help"]])
def test_standard_output_that_refuses_is_one_line_and_exit_8(
        tmp_path: Path, args: list[str], stdout: str) -> None:
    """Issue 50: ``show trace.h5 > /dev/full`` (or ``>&-``) ended in a traceback, exit 1."""
    from ksptrace.trace.io import write_trace
    from ksptrace.trace.synthetic import synthetic_trace

    if args[-1] == "t.h5":
        write_trace(synthetic_trace(nprocs=2, iterations=2000, seed=1), tmp_path / "t.h5")
    done = _ksptrace(args, stdout, tmp_path)
    assert done.returncode == 8, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0] == ("ksptrace: error: cannot write to standard output (No space left on "
                        "device); the output is lost: send it to a file on a disk with room, or "
                        "to a pipe" if stdout == "full" else
                        "ksptrace: error: standard output is closed (>&-); send it to a file "
                        "or to /dev/null")
