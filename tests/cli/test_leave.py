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
