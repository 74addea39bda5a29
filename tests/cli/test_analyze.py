"""``ksptrace analyze``: report from files, bad files named and skipped, nothing left fails."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from ksptrace.cli.main import main
from ksptrace.trace.io import write_trace
from ksptrace.trace.model import Trace
from ksptrace.trace.synthetic import synthetic_trace

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
    assert "no trace could be analysed" in capsys.readouterr().err
