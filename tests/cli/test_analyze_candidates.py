"""``analyze --candidates`` with a family the fitting engine does not know is one line that lists
the ones it does, exit 2, nothing written (issue 51)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ksptrace.cli.main import main
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace


def test_an_unknown_family_is_a_one_line_error(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.h5"
    write_trace(synthetic_trace(2, 40, 1, "gmres", seed=0), path)
    out = tmp_path / "report"
    code = main(["analyze", str(path), "--out", str(out), "--candidates", "norm,weibull_min",
                 "--no-figures", "--quiet"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ksptrace: error: --candidates: no family weibull_min; use some of ")
    assert "johnsonsu" in err
    assert "\n" not in err
    assert not out.exists()
