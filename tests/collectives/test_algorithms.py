"""Forcing collective algorithms: Open MPI's tuned variables and MPICH's CVARs, as data."""

from __future__ import annotations

from pathlib import Path

import pytest

from ksptrace.cachedir import CACHE_ENV
from ksptrace.collectives import algorithms as alg
from ksptrace.errors import UsageError

OMPI_INFO = (Path(__file__).parents[1] / "data" / "collectives" /
             "ompi_info_tuned_4.1.4.txt").read_text()


def test_catalogue_from_ompi_info() -> None:
    assert alg.ompi_catalogue("allreduce", OMPI_INFO) == {
        0: "ignore", 1: "basic_linear", 2: "nonoverlapping", 3: "recursive_doubling",
        4: "ring", 5: "segmented_ring", 6: "rabenseifner"}
    assert alg.ompi_catalogue("bcast", OMPI_INFO)[9] == "scatter_allgather_ring"
    assert alg.ompi_catalogue("barrier", OMPI_INFO)[6] == "tree"
    assert alg.ompi_catalogue("iallreduce", OMPI_INFO) == {0: "default"}


def test_openmpi_forcing_by_number_and_name() -> None:
    cat = alg.ompi_catalogue("reduce", OMPI_INFO)
    by_name = alg.forcing_for("openmpi", "reduce", "pipeline", cat, segment_bytes=8192)
    by_number = alg.forcing_for("openmpi", "reduce", "3", cat, segment_bytes=8192)
    assert by_name == by_number
    assert dict(by_name.env) == {
        "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
        "OMPI_MCA_coll_tuned_reduce_algorithm": "3",
        "OMPI_MCA_coll_tuned_reduce_algorithm_segmentsize": "8192"}
    default = alg.forcing_for("openmpi", "reduce", None, cat)
    assert not default.forced
    assert default.name == "default"


def test_mpich_cvars_rendered() -> None:
    f = alg.forcing_for("mpich", "allreduce", "ring")
    assert dict(f.env) == {"MPIR_CVAR_DEVICE_COLLECTIVES": "none",
                           "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring"}
    assert f.algorithm == alg.MPICH_ALGORITHMS["allreduce"].index("ring")
    overlap = alg.forcing_for("mpich", "iallreduce_overlap", "gentran_ring")
    assert dict(overlap.env)["MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM"] == "gentran_ring"
    assert dict(alg.forcing_for("mpich", "bcast", 1).env)[
        "MPIR_CVAR_BCAST_INTRA_ALGORITHM"] == "binomial"
    assert not alg.forcing_for("mpich", "barrier", "auto").forced


def test_unknown_library_runs_defaults_and_says_so() -> None:
    f = alg.forcing_for("unknown", "allreduce", None)
    assert not f.forced
    assert "neither Open MPI nor MPICH" in f.note
    with pytest.raises(UsageError, match="cannot force an algorithm with MPI library"):
        alg.forcing_for("unknown", "allreduce", "ring")


@pytest.mark.parametrize(("library", "op", "algorithm", "segment", "message"), [
    ("openmpi", "allreduce", "7", 0, "unknown Open MPI allreduce algorithm '7'"),
    ("openmpi", "allreduce", "ring", 64, "takes no segment size; segmented ones: "
     "segmented_ring"),
    ("openmpi", "bcast", "0", 64, "--segment-bytes needs a forced algorithm"),
    # without a segment size Open MPI runs segmented_ring as a plain ring (issue 32)
    ("openmpi", "allreduce", "segmented_ring", 0, "segmented_ring needs --segment-bytes: "
     "without a segment size it runs as a plain ring"),
    ("mpich", "allreduce", "rabenseifner", 0, "unknown MPICH allreduce algorithm"),
    ("mpich", "allreduce", "ring", 64, "--segment-bytes is Open MPI's"),
    ("openmpi", "alltoall", "1", 0, "unknown operation 'alltoall'"),
])
def test_bad_forcing(library: str, op: str, algorithm: str, segment: int, message: str) -> None:
    cat = alg.ompi_catalogue(op, OMPI_INFO) if op in alg.OMPI_COLLECTIVE else None
    with pytest.raises(UsageError, match=message):
        alg.forcing_for(library, op, algorithm, cat, segment)


def test_library_detection() -> None:
    assert alg.library_of("Open MPI v4.1.4, package: Debian OpenMPI") == "openmpi"
    assert alg.library_of("MPICH Version: 4.0.2") == "mpich"
    assert alg.library_of("Intel(R) MPI Library 2021.6") == "mpich"
    assert alg.library_of("Spectrum something") == "unknown"


def _fake_ompi_info(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An ``ompi_info`` first on PATH that prints the recorded listing and counts its calls."""
    folder.mkdir()
    calls = folder / "calls"
    script = folder / "ompi_info"
    listing = Path(__file__).parents[1] / "data" / "collectives" / "ompi_info_tuned_4.1.4.txt"
    script.write_text(f"#!/bin/sh\necho x >> {calls}\ncat {listing}\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")
    return calls


def test_ompi_info_is_asked_once_per_installation(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_ompi_info(tmp_path / "bin", monkeypatch)
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    for _ in range(2):
        alg._ompi_info_text.cache_clear()
        assert alg.ompi_catalogue("allreduce")[4] == "ring"
    assert calls.read_text() == "x\n"  # the second process-wide ask read the sealed copy
    (kept,) = cache.glob("ompi_info-tuned-*.sealed")
    assert kept.stat().st_mode & 0o777 == 0o600
    alg._ompi_info_text.cache_clear()


@pytest.mark.parametrize("where", ["a folder others can write", "edited in the private folder"])
def test_a_planted_ompi_info_answer_is_never_believed(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      where: str) -> None:
    """Issue 66: a planted copy in a non-private cache folder made ``--algorithm ring``
    record "ring" while recursive doubling ran."""
    calls = _fake_ompi_info(tmp_path / "bin", monkeypatch)
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    alg._ompi_info_text.cache_clear()
    alg.ompi_catalogue("allreduce")
    (kept,) = cache.glob("ompi_info-tuned-*.sealed")
    if where == "a folder others can write":  # anyone may have written it, seal and key too
        cache.chmod(0o777)
    else:
        swapped = kept.read_bytes().replace(b'3:"recursive_doubling"', b'3:"ring"')
        assert swapped != kept.read_bytes()
        kept.write_bytes(swapped)
    alg._ompi_info_text.cache_clear()
    try:
        assert alg.ompi_catalogue("allreduce")[3] == "recursive_doubling"
        assert calls.read_text() == "x\nx\n"  # asked again
    finally:
        cache.chmod(0o700)
        alg._ompi_info_text.cache_clear()
