"""``ksptrace problems``: a parameter's default is printed when it has one (issue 67: not
"default: chosen from --n (default: None)")."""

from __future__ import annotations

import pytest

from ksptrace.cli.main import main


def test_a_parameter_without_a_default_says_what_stands_in(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["problems"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert not [line for line in lines if "None" in line]
    (mx,) = [line.split() for line in lines if line.split()[:1] == ["--mx"]]
    assert mx[-4:] == ["default:", "chosen", "from", "--n"]
    (refine,) = [line for line in lines if line.split()[:1] == ["--refine"]]
    assert refine.endswith("(default: 0)")
