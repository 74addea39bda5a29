"""A FIFO, a link to ``/dev/zero`` and a huge sparse file named ``*.h5``: every command that
reads traces ends at once and names each in one line, with the analysis cache on and off
(issue 50: the cache key hashed the whole file before the regular-file and size probe, so
``analyze`` blocked on the FIFO, read ``/dev/zero`` forever and read a sparse file in full).

Each command runs in a forked child of this process (modules already imported, so a run costs
a fraction of a second), killed after :data:`LIMIT` seconds: a regression fails, never hangs.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace

LIMIT = 30.0
SPARSE_BYTES = 1 << 40
"""1 TiB of hole: read in full, it takes far longer than :data:`LIMIT`."""


def _run(argv: list[str], logs: Path) -> tuple[int | None, str]:
    """``ksptrace argv`` in a forked child: its exit code (None if it had to be killed after
    LIMIT s) and its stderr."""
    err = logs / "stderr"
    pid = os.fork()
    if pid == 0:  # the child: the command's output into files, then leave at once
        code = 70
        try:
            out_fd = os.open(logs / "stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            err_fd = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(out_fd, 1)
            os.dup2(err_fd, 2)
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            from ksptrace.cli.main import main

            code = main(argv)
        except BaseException as exc:
            print(f"child raised {exc!r}", file=sys.stderr)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    deadline = time.monotonic() + LIMIT
    status = None
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return None, err.read_text()
    assert status is not None
    return os.waitstatus_to_exitcode(status), err.read_text()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A good trace and the three files that are no trace, in one folder."""
    root = tmp_path_factory.mktemp("special")
    write_trace(synthetic_trace(4, 40, 2, "cg", seed=2), root / "good.h5")
    os.mkfifo(root / "fifo.h5")
    (root / "zero.h5").symlink_to("/dev/zero")
    with open(root / "sparse.h5", "wb") as f:
        f.truncate(SPARSE_BYTES)
    for name in ("ksptrace.cli.show", "ksptrace.cli.analyze", "ksptrace.cli.segment",
                 "ksptrace.cli.decide", "ksptrace.cli.reductions", "ksptrace.report.compose",
                 "ksptrace.report.segmentation", "ksptrace.report.decisions",
                 "ksptrace.report.collectives", "ksptrace.studies.collectives.reductions",
                 "ksptrace.studies.collectives.report", "ksptrace.studies.decisions.files",
                 "ksptrace.studies.segmentation.segment", "ksptrace.trace.frame",
                 "ksptrace.trace.read", "scipy.integrate"):
        importlib.import_module(name)  # once here, not in every child
    return root


BAD = ("fifo.h5", "zero.h5", "sparse.h5")


def _commands(folder: Path, out: Path) -> dict[str, list[str]]:
    files = [str(folder / name) for name in (*BAD, "good.h5")]
    fast = ["--no-figures", "--quiet", "--candidates", "norm", "--fit-size", "2000",
            "--mc-runs", "2"]
    return {
        "show": ["show", *files],
        "analyze": ["analyze", *files, "--out", str(out / "a"), *fast],
        "analyze --no-cache": ["analyze", *files, "--out", str(out / "n"), "--no-cache", *fast],
        "segment": ["segment", *files, "--out", str(out / "s"), "--no-plots"],
        "decide": ["decide", str(folder), "--out", str(out / "d"), "--quiet"],
        **{f"reductions {bad}": ["reductions", str(folder / bad), str(folder / bad)]
           for bad in BAD},
    }


@pytest.mark.parametrize("command", ["show", "analyze", "analyze --no-cache", "segment",
                                     "decide", "reductions fifo.h5", "reductions zero.h5",
                                     "reductions sparse.h5"])
def test_a_fifo_dev_zero_or_sparse_file_ends_every_reading_command_at_once(
        folder: Path, tmp_path: Path, command: str) -> None:
    argv = _commands(folder, tmp_path)[command]
    code, err = _run(argv, tmp_path)
    assert code is not None, f"{command} did not end within {LIMIT:.0f} s: {err[-300:]}"
    assert "Traceback" not in err
    assert "child raised" not in err, err
    named = {bad: [line for line in err.splitlines() if str(folder / bad) in line]
             for bad in BAD}
    for bad, lines in named.items():
        assert len(lines) <= 1, (bad, lines)
    if command.startswith("reductions"):
        assert code != 0
        assert len(named[command.split()[1]]) == 1, err
        return
    if command != "decide":  # decide's folder walk passes over what is not a regular file
        assert all(len(lines) == 1 for lines in named.values()), err
    if command.startswith("analyze"):
        assert code == 0, err
        out = tmp_path / ("n" if "no-cache" in command else "a")
        assert (out / "report.html").is_file()
        cached = list(Path(f"{out}.cache").glob("*.pkl"))
        assert len(cached) == (0 if "no-cache" in command else 1)  # the good trace's
