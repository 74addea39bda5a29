"""``ksptrace analyze``: report from files, bad files named and skipped, nothing left fails."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest

from ksptrace.cli.main import main
from ksptrace.trace.model import Trace
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace

FAST = ["--candidates", "johnsonsu,norm", "--fit-size", "2000", "--mc-runs", "2"]


def test_analyze_writes_report_and_skips_bad_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.h5"
    write_trace(synthetic_trace(32, 96, 8, "pipebcgs", seed=3), good)
    corrupt = tmp_path / "corrupt.h5"
    corrupt.write_bytes(b"not an hdf5 file at all")
    truncated = tmp_path / "truncated.h5"
    truncated.write_bytes(good.read_bytes()[:2000])
    newer = tmp_path / "newer.h5"
    write_trace(synthetic_trace(8, 20, 4, seed=4), newer)
    with h5py.File(newer, "a") as f:
        f.attrs["schema_version"] = 999
    src = synthetic_trace(8, 20, 4, seed=5)
    stamps = np.array(src.stamps)
    stamps[2, 3:] = np.inf
    nan = tmp_path / "inf.h5"
    write_trace(
        Trace(
            stamps,
            src.residual_norms,
            src.node_ids,
            src.hostnames,
            src.solve_seconds,
            dict(src.attrs),
        ),
        nan,
    )
    out = tmp_path / "report"
    files = [str(p) for p in (good, corrupt, truncated, newer, nan)]
    rc = main(["analyze", *files, "--out", str(out), *FAST])
    assert rc == 0
    err = capsys.readouterr().err
    skip_lines = [ln for ln in err.splitlines() if "skipped" in ln]
    assert len(skip_lines) == 4
    for name, line in zip(("corrupt", "truncated", "newer", "inf"), skip_lines, strict=True):
        assert f"{name}.h5" in line
    assert (out / "report.html").is_file()
    assert (out / "summary.json").is_file()
    assert (out / "table1_models.csv").is_file()


def test_analyze_with_nothing_readable_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"junk")
    rc = main(["analyze", str(bad), "--out", str(tmp_path / "r"), "--quiet"])
    assert rc != 0
    err = capsys.readouterr().err
    assert "no trace could be analysed" in err
    # --quiet still names each skipped trace, with its file name, once.
    skipped = [ln for ln in err.splitlines() if ln.startswith("ksptrace: skipped")]
    assert len(skipped) == 1
    assert skipped[0].startswith(f"ksptrace: skipped {bad}: ")


def test_analyze_logs_one_timestamped_line_per_trace_and_names_a_bad_one_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.h5"
    write_trace(synthetic_trace(8, 40, 4, "gmres", seed=1), good)
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"junk")
    rc = main(["analyze", str(good), str(bad), "--out", str(tmp_path / "r"), "--no-figures",
               *FAST])
    assert rc == 0
    lines = capsys.readouterr().err.splitlines()
    stamp = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d trace "
    assert re.match(stamp + r"1 of 2 .*good\.h5 ok \(elapsed .*, ETA .*\)$", lines[0]), lines
    assert re.match(stamp + r"2 of 2 .*bad\.h5 skipped: ", lines[1]), lines
    assert lines[1].count("bad.h5") == 1
    assert sum("bad.h5" in ln for ln in lines) == 1


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("ksptrace: error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []




def _trace_file(tmp_path: Path) -> str:
    path = tmp_path / "t.h5"
    write_trace(synthetic_trace(8, 40, 4, "gmres", seed=1), path)
    return str(path)


def test_a_full_disk_gives_one_error_line_and_no_partial_report(
    tmp_path: Path, mount_tmpfs: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _trace_file(tmp_path)
    full = mount_tmpfs("full", "size=96k")
    rc = main(["analyze", trace, "--out", str(full / "report"), *FAST])
    assert rc == 8
    line = _one_error_line(capsys.readouterr().err)
    assert "no space left" in line
    assert str(full / "report") in line
    assert _leftovers(full) == []


def test_a_read_only_out_gives_one_error_line(
    tmp_path: Path, mount_tmpfs: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _trace_file(tmp_path)
    ro = mount_tmpfs("ro", "ro,size=1m")
    rc = main(["analyze", trace, "--out", str(ro / "report"), "--no-figures", *FAST])
    assert rc == 8
    assert "read-only file system" in _one_error_line(capsys.readouterr().err)
    assert _leftovers(ro) == []


def test_an_out_under_a_file_fails_before_the_analysis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _trace_file(tmp_path)
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")
    rc = main(["analyze", trace, "--out", str(blocker / "report"), *FAST])
    assert rc == 8
    err = capsys.readouterr().err
    assert "is a file, not a folder" in _one_error_line(err)
    assert "trace 1 of 1" not in err  # refused before any trace was analysed
    assert blocker.read_text() == "not a folder"


def test_an_earlier_report_survives_a_failed_rewrite(
    tmp_path: Path, mount_tmpfs: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _trace_file(tmp_path)
    disk = mount_tmpfs("disk", "size=1m")
    out = disk / "report"
    assert main(["analyze", trace, "--out", str(out), "--no-figures", *FAST]) == 0
    before = (out / "report.html").read_text()
    filler = disk / "filler"
    with filler.open("wb") as f, contextlib.suppress(OSError):  # fill the rest of the 1 MiB
        f.write(b"\0" * (1 << 20))
    rc = main(["analyze", trace, "--out", str(out), *FAST])
    assert rc == 8
    assert "no space left" in _one_error_line(capsys.readouterr().err)
    assert (out / "report.html").read_text() == before
    # the cache of the first, successful run stays; the failed run left no entry or temp file
    assert sorted(_leftovers(disk)) == ["filler", "report", "report.cache"]
    assert len(list((disk / "report.cache").iterdir())) == 1


def test_out_naming_the_traces_folder_is_refused_and_the_traces_stay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report replaces its folder whole: never a folder of something else."""
    trace = _trace_file(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    rc = main(["analyze", trace, "--out", str(tmp_path), "--no-figures", *FAST])
    assert rc == 2
    err = capsys.readouterr().err
    assert "holding other files" in _one_error_line(err)
    assert "trace 1 of 1" not in err  # refused before the analysis
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_jobs_and_the_cache_beside_the_report(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    paths = []
    for k in range(3):
        p = tmp_path / f"t{k}.h5"
        write_trace(synthetic_trace(4, 40, 2, "gmres", seed=k), p)
        paths.append(str(p))
    out = tmp_path / "report"
    fast = ["--candidates", "norm", "--mc-runs", "1", "--no-figures", "--quiet"]
    assert main(["analyze", *paths, "--out", str(out), "--jobs", "2", *fast]) == 0
    assert f"per-trace results in {out}.cache" in capsys.readouterr().out
    assert len(list(Path(f"{out}.cache").glob("*.pkl"))) == 3
    assert main(["analyze", *paths, "--out", str(tmp_path / "r2"), "--no-cache", *fast]) == 0
    assert not Path(f"{tmp_path / 'r2'}.cache").exists()
    capsys.readouterr()
    assert main(["analyze", *paths, "--out", str(out), "--jobs", "0", *fast]) == 2
    assert capsys.readouterr().err.strip() == "ksptrace: error: --jobs must be at least 1, got 0"
