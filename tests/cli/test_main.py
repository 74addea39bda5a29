"""The command itself: --version and --help load none of the heavy libraries."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ksptrace.cli.main import SUBCOMMANDS, build_parser, main

HEAVY = ("numpy", "scipy", "pandas", "matplotlib", "h5py", "mpi4py", "petsc4py", "sklearn")


@pytest.mark.parametrize("argv", [["--version"], ["--help"], []])
def test_version_and_help_import_nothing_heavy(argv: list[str]) -> None:
    code = ("import sys\nfrom ksptrace.cli.main import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip().splitlines()[-1] == "[]", r.stdout + r.stderr


def test_help_lists_every_subcommand_with_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for name, (_, text) in SUBCOMMANDS.items():
        assert name in out
        assert text.split()[0] in out


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_each_subcommand_registers_with_its_help(name: str) -> None:
    parser = build_parser(name)
    sub = next(a for a in parser._actions if a.dest == "command")
    assert name in sub.choices  # type: ignore[operator]
    assert sub.choices[name].description is not None or sub.choices[name].format_help()  # type: ignore[index]


def test_an_unknown_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bogus"])
    assert exc.value.code == 2
    assert "invalid choice: 'bogus'" in capsys.readouterr().err
