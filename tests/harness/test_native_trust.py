"""The C monitor's library is code: it is loaded only from a folder no one else can write, only
as a regular file of this user whose content is what was built, and never through a link.

Each test plants a library whose constructor writes a marker file, and checks the marker is
never written (issue 27: a library planted in ``<tmp>/ksptrace-<uid>`` used to run as root).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ksptrace.harness.monitoring import native, private_files
from tests.conftest import Runner

needs_cc = pytest.mark.skipif(native._compiler() is None, reason="no C compiler on this machine")

PLANTED = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen("%s", "w");
    if (f) { fputs("planted code ran\n", f); fclose(f); }
}
void ksptrace_stamp(void) {}
"""


def _stem() -> str:
    spec = native._spec(4, 8)
    assert not isinstance(spec, str), spec
    return spec[1]


def plant(where: Path, marker: Path, name: str | None = None) -> Path:
    """A library with a constructor that writes ``marker``, under the name the C monitor's
    library of a 4-byte-int, 8-byte-real PETSc would have, digest included."""
    src = where / "planted.c"
    src.write_text(PLANTED % marker)
    lib = where / "planted.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    fd = private_files.open_private(lib)
    try:
        digest = private_files.digest_of(fd)
    finally:
        os.close(fd)
    target = where / (name or f"{_stem()}-{digest[:native.DIGEST_CHARS]}.so")
    lib.rename(target)
    src.unlink()
    return target


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A sticky, world-writable folder like /tmp (outside pytest's private tmp_path, so that
    another user can reach it)."""
    folder = Path(tempfile.mkdtemp(prefix="ksptrace-shared-", dir="/tmp"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _as_nobody(*argv: str) -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("running the attacker as user nobody needs root and setpriv (util-linux)")
    subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *argv],
                   check=True)


@needs_cc
def test_a_library_planted_by_another_user_in_the_shared_tmp_never_runs(
        shared_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = shared_tmp / "marker"
    staging = shared_tmp / "staging"
    staging.mkdir()
    staging.chmod(0o755)
    planted = plant(staging, marker)
    planted.chmod(0o755)
    attacker_dir = shared_tmp / f"ksptrace-{os.geteuid()}"
    _as_nobody("sh", "-c", f"mkdir -m 777 {attacker_dir} && cp {planted} {attacker_dir}/")
    monkeypatch.setattr(native.tempfile, "gettempdir", lambda: str(shared_tmp))
    monkeypatch.setenv("KSPTRACE_CACHE_DIR", "/proc/ksptrace-cannot-exist")  # unusable cache
    got = native.load_library(4, 8)
    assert isinstance(got, str), got
    assert "no private folder" in got
    assert "owned by uid" in got
    assert not marker.exists()
    # nothing of ours was compiled into the attacker's folder for them to swap later
    assert sorted(p.name for p in attacker_dir.iterdir()) == [planted.name]


@needs_cc
def test_a_world_writable_folder_is_not_trusted_even_when_owned(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same path without a second user: a 0777 cache folder of this user."""
    marker = tmp_path / "marker"
    cache = tmp_path / "cache"
    cache.mkdir()
    plant(cache, marker)
    cache.chmod(0o777)
    monkeypatch.setenv("KSPTRACE_CACHE_DIR", str(cache))
    monkeypatch.setattr(native.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    got = native.load_library(4, 8)
    assert not isinstance(got, str), got
    assert got[1].parent == tmp_path / "tmp" / f"ksptrace-{os.geteuid()}"  # the private one
    assert not marker.exists()


@needs_cc
@pytest.mark.parametrize("mode", [0o770, 0o775])
def test_a_group_writable_cache_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            mode: int) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(mode)
    monkeypatch.setenv("KSPTRACE_CACHE_DIR", str(cache))
    monkeypatch.setattr(native.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    got = native.load_library(4, 8)
    assert not isinstance(got, str), got
    assert got[1].parent != cache
    assert list(cache.iterdir()) == []


@needs_cc
def test_a_link_in_the_cache_is_not_followed(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "marker"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted = plant(elsewhere, marker)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    (cache / planted.name).symlink_to(planted)
    monkeypatch.setenv("KSPTRACE_CACHE_DIR", str(cache))
    got = native.load_library(4, 8)
    assert not isinstance(got, str), got
    assert not got[1].is_symlink()
    assert not marker.exists()
    assert not (cache / planted.name).exists()  # the link was removed


@needs_cc
def test_a_library_whose_content_is_not_its_digest_is_not_loaded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "marker"
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    plant(cache, marker, name=f"{_stem()}-{'0' * native.DIGEST_CHARS}.so")
    monkeypatch.setenv("KSPTRACE_CACHE_DIR", str(cache))
    got = native.load_library(4, 8)
    assert not isinstance(got, str), got
    assert not marker.exists()


@needs_cc
def test_a_corrupt_cached_library_is_rebuilt_once_and_said(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("KSPTRACE_CACHE_DIR", str(cache))
    monkeypatch.setattr(native, "_notes", [])
    first = native.load_library(4, 8)
    assert not isinstance(first, str), first
    data = bytearray(first[1].read_bytes())
    data[len(data) // 2] ^= 0xFF
    broken = first[1].with_suffix(".broken")  # a new file: the loaded one stays mapped intact
    broken.write_bytes(bytes(data))
    broken.chmod(0o644)
    os.replace(broken, first[1])
    again = native.load_library(4, 8)
    assert not isinstance(again, str), again
    assert again[1].read_bytes() != bytes(data)
    assert len(native.build_notes()) == 1
    assert "was rebuilt" in native.build_notes()[0]
    assert "corrupt" in native.build_notes()[0]


def test_a_hanging_compiler_is_stopped_and_the_python_monitor_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pids = tmp_path / "pid"
    cc = tmp_path / "hang-cc"
    cc.write_text(f"#!/bin/sh\necho $$ > {pids}\nexec sleep 1000\n")
    cc.chmod(0o755)
    monkeypatch.setenv("CC", str(cc))
    monkeypatch.setenv("KSPTRACE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(native.COMPILE_TIMEOUT_ENV, "5")
    started = time.monotonic()
    got = native.load_library(4, 8)
    assert isinstance(got, str)
    assert "took more than 5 s" in got
    assert time.monotonic() - started < 120  # not the 1000 s of the compiler
    written = pids.read_text().strip() if pids.exists() else ""
    if not written:
        return  # stopped before it wrote its pid: nothing of it can be left
    pid = int(written)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the hanging compiler {pid} was left running")


@needs_cc
@pytest.mark.mpi
@pytest.mark.slow
def test_run_with_a_planted_tmp_and_no_cache_uses_python_and_says_why(
        ksptrace_cli: Runner, shared_tmp: Path, tmp_path: Path) -> None:
    """The issue's reproduction end to end: ``ksptrace run --np 2`` with TMPDIR shared and a
    cache folder that cannot be made."""
    marker = shared_tmp / "marker"
    attacker_dir = shared_tmp / f"ksptrace-{os.geteuid()}"
    attacker_dir.mkdir()
    plant(attacker_dir, marker)
    attacker_dir.chmod(0o777)
    out = tmp_path / "traces"
    proc = ksptrace_cli("run", "--n", "1000", "--iterations", "50", "--np", "2",
                        "--out", str(out), TMPDIR=str(shared_tmp),
                        KSPTRACE_CACHE_DIR="/proc/ksptrace-cannot-exist")
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    assert "no private folder" in proc.stderr
    show = subprocess.run([sys.executable, "-m", "ksptrace", "show", *map(str, out.glob("*.h5"))],
                          capture_output=True, text=True, check=False)
    assert "monitor" in show.stdout
    assert "python" in show.stdout
