"""A full disk while the trace is written: every rank fails together, fast, with one line and no
temporary file, through MPI-IO and through gather (issue 9: MPI-IO used to deadlock both ranks
at 100 % CPU with 16 to 20 KiB free).

Runs on a real 1 MiB tmpfs filled to leave a few KiB, so it needs root and ``mount``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ksptrace.errors import OutputError
from ksptrace.trace import write
from ksptrace.trace.read import read_trace
from tests.conftest import ROOT, solver_env

N = 2_000
K = 300
"""About 22 KiB of trace on two ranks: more than 8 to 20 KiB free, less than 64."""

TIMEOUT = 60.0


def _mount_small_tmpfs(where: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (CI runs the tests as root)")
    if shutil.which("mount") is None:
        pytest.skip("no mount command")
    where.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """An empty 1 MiB tmpfs, unmounted afterwards."""
    where = tmp_path / "tmpfs"
    _mount_small_tmpfs(where)
    try:
        yield where
    finally:
        if subprocess.run(["umount", str(where)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(where)], check=False)


def leave_free(fs: Path, kib: int) -> None:
    """Fill ``fs`` with one file so that exactly ``kib`` KiB stay free."""
    st = os.statvfs(fs)
    fill = st.f_bavail * st.f_frsize - kib * 1024
    with open(fs / "filler", "wb") as f:
        f.write(b"\0" * fill)
    st = os.statvfs(fs)
    assert st.f_bavail * st.f_frsize == kib * 1024


def temporaries(fs: Path) -> list[str]:
    return sorted(p.name for p in fs.iterdir() if ".tmp-" in p.name)


def run_bounded(args: list[str], timeout: float = TIMEOUT, **env: str) -> tuple[int, str, float]:
    """Run ksptrace in its own session; on timeout kill mpiexec and every rank with it."""
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "ksptrace", *args], env=solver_env(**env),
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"ksptrace {' '.join(args)} hung for {timeout:.0f} s (killed)")
    return proc.returncode, err, time.monotonic() - start


def one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    errors = [ln for ln in stderr.splitlines() if ln.startswith("ksptrace: error:")]
    assert len(errors) == 1, stderr
    return errors[0]


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["mpio", "gather"])
@pytest.mark.parametrize("free_kib", [8, 16, 20, 24, 64])
def test_full_disk_fails_cleanly(require_petsc: None, tmpfs: Path, mode: str,
                                 free_kib: int) -> None:
    leave_free(tmpfs, free_kib)
    out = tmpfs / "t.h5"
    code, err, seconds = run_bounded(["run", "--np", "2", "--n", str(N), "--iterations", str(K),
                                      "--hdf5-path", mode, "--out", str(out)])
    print(f"{mode} with {free_kib} KiB free: exit {code} in {seconds:.1f} s")
    assert temporaries(tmpfs) == []
    if code == 0:
        trace = read_trace(out)
        assert trace.stamps.shape == (2, K + 1)
        assert trace.attrs["hdf5_path"] == mode
        assert np.isfinite(trace.stamps).all()
        assert all(trace.hostnames)
        assert free_kib * 1024 >= out.stat().st_size
    else:
        line = one_error_line(err)
        assert f"no space left on {tmpfs} for the trace (needs " in line, err
        assert f", {free_kib} KiB free)" in line, err
        assert code == OutputError.exit_code
        assert not out.exists()
    if free_kib <= 20:  # the trace cannot fit
        assert code != 0
    if free_kib >= 64:  # it fits with room to spare
        assert code == 0, err


@pytest.mark.parametrize("free_kib", [8, 16, 20])
def test_disk_filled_after_the_space_check(tmpfs: Path, monkeypatch: pytest.MonkeyPatch,
                                           free_kib: int) -> None:
    """The disk fills between the space check and the write (the check is fooled here): the
    write itself fails with one OutputError that says so, and leaves no file. HDF5 never sees
    the failed write (it would lose the error or crash the interpreter at exit)."""
    from tests.trace.test_io import make_trace

    leave_free(tmpfs, free_kib)
    monkeypatch.setattr(write, "check_space", lambda folder, needed: None)
    with pytest.raises(OutputError, match=f"no space left on {tmpfs} for the trace"):
        write.write_trace(make_trace(nprocs=4, k=K), tmpfs / "t.h5")
    assert sorted(p.name for p in tmpfs.iterdir()) == ["filler"]


def test_space_check_comes_first(tmpfs: Path) -> None:
    """A trace that cannot fit is refused before a byte is written, naming need and room."""
    from tests.trace.test_io import make_trace

    leave_free(tmpfs, 16)
    image = write.trace_image(make_trace(nprocs=4, k=K))
    kib = -(-len(image) // 1024)
    with pytest.raises(OutputError, match=rf"\(needs {kib} KiB, 16 KiB free\)"):
        write.write_image(tmpfs / ".t.h5.tmp-x", image)
    assert sorted(p.name for p in tmpfs.iterdir()) == ["filler"]


@pytest.mark.mpi
def test_failed_row_write_on_one_rank_fails_all(require_petsc: None, tmp_path: Path) -> None:
    """An MPI-IO row write failing on rank 1 only: every rank learns of it, the job ends with
    one line, and neither the trace nor its temporary file is left."""
    out = tmp_path / "t.h5"
    code, err, _ = run_bounded(["run", "--np", "2", "--n", "2000", "--iterations", "20",
                                "--hdf5-path", "mpio", "--out", str(out)],
                               KSPTRACE_FAULT="write-error-on-rank-1")
    assert "rank 1: no space left on" in one_error_line(err), err
    assert code == OutputError.exit_code
    assert sorted(p.name for p in tmp_path.iterdir()) == []


FILL_ROWS = """
import errno
import os
import sys
from pathlib import Path
import numpy as np
from mpi4py import MPI
from ksptrace.harness.runner import writer

comm = MPI.COMM_WORLD
rank, nprocs = comm.Get_rank(), comm.Get_size()
tmp, k, copy = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
attrs = {"problem": "laplace1d", "n": 100, "command_line": "ksptrace run " + "x" * 300}
writer.create_on_root(comm, tmp, nprocs, k + 1, attrs)
if rank == 0:
    copy.write_bytes(tmp.read_bytes())
    fd = os.open(tmp.parent / "filler", os.O_WRONLY | os.O_CREAT)
    try:  # the disk fills up before the rows are written
        while os.write(fd, bytes(4096)):
            pass
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            comm.Abort(1)
    os.close(fd)
    if os.statvfs(tmp.parent).f_bavail != 0:
        comm.Abort(2)
comm.Barrier()
stamps = np.cumsum(np.full(k + 1, 1e-3)) + rank
local = writer.LocalRecord(stamps, np.geomspace(1, 1e-3, k + 1), 0, f"host{rank}", 0.5)
writer.fill_rows(comm, tmp, local)
"""


@pytest.mark.mpi
def test_mpio_rows_need_no_space_and_change_no_metadata(require_petsc: None, tmp_path: Path,
                                                        tmpfs: Path) -> None:
    """What makes the MPI-IO path safe: once rank 0 created the file, the ranks fill in their
    rows through MPI-IO even on a disk that is now completely full, keeping the file's size and
    changing no byte outside the datasets' data (so HDF5's collective close never writes)."""
    import h5py

    script = tmp_path / "fill_rows.py"
    script.write_text(FILL_ROWS)
    tmp, copy = tmpfs / "t.h5", tmp_path / "before.h5"
    subprocess.run(["mpiexec", "-n", "2", sys.executable, "-m", "mpi4py", str(script), str(tmp),
                    str(K), str(copy)], env=solver_env(PYTHONPATH=str(ROOT)), cwd=ROOT,
                   check=True, timeout=TIMEOUT)
    before = np.frombuffer(copy.read_bytes(), np.uint8)
    after = np.frombuffer(tmp.read_bytes(), np.uint8)
    assert after.size == before.size
    data = np.zeros(after.size, bool)
    with h5py.File(tmp) as f:
        for ds in f.values():
            if isinstance(ds, h5py.Dataset):  # not the attribute groups (schema 2)
                data[ds.id.get_offset():ds.id.get_offset() + ds.id.get_storage_size()] = True
        assert f.attrs["schema_version"] == 2
        assert f["run"].attrs["problem"] == "laplace1d"
    assert (after[~data] == before[~data]).all()
    assert (after[data] != before[data]).any()
    trace = read_trace(tmp)
    assert trace.hostnames == ("host0", "host1")
    np.testing.assert_array_equal(trace.stamps[1], np.cumsum(np.full(K + 1, 1e-3)) + 1)
