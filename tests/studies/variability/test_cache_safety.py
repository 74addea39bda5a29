"""The analysis cache never unpickles what another user could have written (issue 50).

Each test plants entries under the names the cache would look up, holding a pickle whose
``__reduce__`` creates a marker file, and checks the marker is never created: the planted code
would have run as the user who runs ``analyze``.
"""

from __future__ import annotations

import os
import pickle
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ksptrace.cachedir import KEY_FILE, cache_dir
from ksptrace.cli.analyze import options_of
from ksptrace.cli.main import build_parser
from ksptrace.studies.variability.run import batch, sealed
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.trace.read import read_trace
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace
from tests.conftest import solver_env

FAST = AnalysisOptions(candidates=("norm",), fit_size=2000, mc_runs=2)
FLAGS = ["--no-figures", "--candidates", "norm", "--fit-size", "2000", "--mc-runs", "2",
         "--quiet"]
VICTIM = 4242
"""A uid that is neither root nor nobody (no account needed for setpriv)."""


class Planted:
    """Unpickling this creates ``marker``: what a hostile entry's code would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.marker, "w"))


def _worker(path: str, options: AnalysisOptions, with_figures: bool) -> object:
    return batch.FromFile("analysed", read_trace(path).source)


def _names(paths: list[Path]) -> list[str]:
    return [batch.entry_name(p, FAST, False) for p in paths]


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A sticky, world-writable folder like /tmp, which another user can reach."""
    folder = Path(tempfile.mkdtemp(prefix="ksptrace-shared-", dir="/tmp"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _trace(folder: Path) -> Path:
    return write_trace(synthetic_trace(4, 60, 2, "cg", seed=1), folder / "trace.h5")


def test_a_world_writable_cache_folder_is_not_used(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    marker = tmp_path / "marker"
    cache = tmp_path / "shared.cache"
    cache.mkdir()
    cache.chmod(0o777)
    for name in _names([path]):
        (cache / name).write_bytes(pickle.dumps(Planted(marker)))
    notes: list[str] = []
    done = list(batch.run([str(path)], _worker, FAST, False, cache=cache, note=notes.append))
    assert not marker.exists()
    assert [d.result for d in done] == ["analysed"]
    assert not done[0].cached
    assert len(notes) == 1
    assert "can be written by group or others (mode 777)" in notes[0]
    assert notes[0].startswith(f"ksptrace: note: the cache {cache} is not used: ")
    batch.prune(cache, set())  # and nothing in it is touched
    assert sorted(p.name for p in cache.iterdir()) == _names([path])


@pytest.mark.parametrize("planted", ["bare pickle", "sealed with another key"])
def test_an_entry_this_user_did_not_seal_is_never_unpickled(tmp_path: Path,
                                                           planted: str) -> None:
    """A private folder, and a file of this user: still, only this user's key makes an entry
    (a copied or extracted cache, or an entry planted before the folder was made private)."""
    path = _trace(tmp_path)
    marker = tmp_path / "marker"
    cache = tmp_path / "cache"
    list(batch.run([str(path)], _worker, FAST, False, cache=cache))
    [name] = _names([path])
    payload = pickle.dumps(Planted(marker))
    if planted == "bare pickle":
        (cache / name).write_bytes(payload)
    else:
        sealed.store(sealed.Cache(cache, os.urandom(32)), name, Planted(marker))
    done = list(batch.run([str(path)], _worker, FAST, False, cache=cache))
    assert not marker.exists()
    assert not done[0].cached
    again = list(batch.run([str(path)], _worker, FAST, False, cache=cache))  # stored anew
    assert again[0].cached
    assert again[0].result == "analysed"


def test_entries_and_the_key_are_this_users_alone(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    cache = tmp_path / "cache"
    list(batch.run([str(path)], _worker, FAST, False, cache=cache))
    [entry] = cache.iterdir()
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert stat.S_IMODE((cache_dir() / KEY_FILE).stat().st_mode) == 0o600
    assert entry.read_bytes().startswith(sealed.MAGIC)


def _as(uid: int, *argv: str, env: dict[str, str] | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                           *argv], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=300, check=False)


def test_a_cache_planted_by_nobody_never_runs_as_another_user(shared_tmp: Path) -> None:
    """Issue 50's reproduction: user nobody makes ``<shared>/report.cache`` (mode 777) and
    plants pickles under the names anyone learns by analysing the same trace once; another
    user then analyses that trace with ``--out <shared>/report``."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("running the attacker as user nobody and the victim as another uid needs "
                    "root and setpriv (util-linux); test_a_world_writable_cache_folder_is_not_"
                    "used covers the same path as one user")
    path = _trace(shared_tmp)
    path.chmod(0o644)
    ksptrace = [sys.executable, "-m", "ksptrace", "analyze"]
    argv = ["analyze", str(path), "--out", str(shared_tmp / "report"), *FLAGS]
    names = [batch.entry_name(path, options_of(build_parser("analyze").parse_args(argv)),
                              False)]  # what one analysis of the same trace shows anyone
    marker = shared_tmp / "marker"
    staging = shared_tmp / "staging"
    staging.mkdir(mode=0o755)
    for name in names:
        (staging / name).write_bytes(pickle.dumps(Planted(marker)))
        (staging / name).chmod(0o644)
    planted = _as(65534, "sh", "-c", f"mkdir -m 777 {shared_tmp}/report.cache && "
                                     f"cp {staging}/* {shared_tmp}/report.cache/")
    assert planted.returncode == 0, planted.stderr
    home = shared_tmp / "victim"
    home.mkdir(mode=0o700)
    os.chown(home, VICTIM, VICTIM)
    env = solver_env(HOME=str(home), MPLCONFIGDIR=str(home / "mpl"),
                     KSPTRACE_CACHE_DIR=str(home / "cache"))
    victim = _as(VICTIM, *ksptrace, str(path), "--out", str(shared_tmp / "report"), *FLAGS,
                 env=env, cwd=shared_tmp)
    if "No module named" in victim.stderr:
        pytest.skip(f"another uid cannot import ksptrace here: {victim.stderr[-200:]}")
    assert not marker.exists(), "the planted cache entry ran as the victim"
    assert victim.returncode == 0, victim.stderr
    assert "wrote " in victim.stdout
    assert "per-trace results" not in victim.stdout
    notes = [line for line in victim.stderr.splitlines() if "cache" in line]
    assert notes == [f"ksptrace: note: the cache {shared_tmp}/report.cache is not used: "
                     f"{shared_tmp}/report.cache is owned by uid 65534, not by this user "
                     f"(uid {VICTIM}); give a folder only you can write"], victim.stderr


@pytest.mark.parametrize("swap", ["renamed over it", "written in place"])
def test_a_trace_swapped_between_hash_and_read_stores_nothing_under_its_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swap: str) -> None:
    """Issue 66: a trace swapped between hashing and reading stored the other trace's results
    under its name, and a pristine cg trace was later reported as "bcgs P=1"."""
    from ksptrace.studies.variability.pages import runs

    pristine = write_trace(synthetic_trace(4, 60, 2, "cg", seed=1), tmp_path / "trace.h5")
    other = write_trace(synthetic_trace(1, 60, 1, "bcgs", seed=2), tmp_path / "other.h5")
    original, planted = pristine.read_bytes(), other.read_bytes()
    cache = tmp_path / "cache"
    real = sealed.fingerprint

    def hashed_then_swapped(path: str | os.PathLike[str]) -> tuple[str, object]:
        answer = real(path)
        if swap == "renamed over it":
            os.replace(other, pristine)
        else:
            with open(pristine, "r+b") as f:
                f.truncate(0)
                f.write(planted)
        return answer

    monkeypatch.setattr(sealed, "fingerprint", hashed_then_swapped)
    [first] = batch.run([str(pristine)], runs.analyse_read, FAST, False, cache=cache)
    assert first.result.analysis.ksp == "bcgs"  # what was read
    assert list(cache.glob(f"*{sealed.SUFFIX}")) == []  # stored under no name
    monkeypatch.setattr(sealed, "fingerprint", real)
    pristine.write_bytes(original)
    [again] = batch.run([str(pristine)], runs.analyse_read, FAST, False, cache=cache)
    assert not again.cached
    assert (again.result.analysis.ksp, again.result.analysis.nprocs) == ("cg", 4)
    [third] = batch.run([str(pristine)], runs.analyse_read, FAST, False, cache=cache)
    assert third.cached  # an untouched trace is still cached
    assert third.result.analysis.ksp == "cg"
