"""``ksptrace COMMAND --help`` answers at once: building a subcommand's parser imports none of
the analysis libraries (issue 31: analyze, decide and demo took 2-4 s, importing matplotlib,
scipy and pandas before parsing). bench/help_speed.py times it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ksptrace.cli.main import SUBCOMMANDS
from tests.conftest import ROOT

HEAVY = ("numpy", "matplotlib", "scipy", "pandas", "h5py", "petsc4py", "mpi4py", "sklearn")


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_a_subcommand_parser_imports_no_heavy_library(command: str) -> None:
    code = ("import sys\nfrom ksptrace.cli.main import build_parser\n"
            f"build_parser({command!r})\n"
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"{command} --help imports {proc.stdout.strip()}"


@pytest.mark.parametrize("command", ["analyze", "decide", "demo", "segment", "show"])
def test_help_still_describes_the_command(command: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "ksptrace", command, "--help"], cwd=ROOT,
                          capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: ksptrace {command}")


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_every_help_has_a_plain_description_and_no_empty_default(command: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "ksptrace", command, "--help"], cwd=ROOT,
                          capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    paragraphs = proc.stdout.split("\n\n")
    assert len(paragraphs) > 2, proc.stdout  # usage, a description, the arguments
    assert not paragraphs[1].lstrip().startswith(("positional", "options")), proc.stdout
    assert "``" not in proc.stdout
    assert ":func:" not in proc.stdout
    assert "(default: None)" not in proc.stdout


def test_run_help_puts_each_problems_flags_under_its_name() -> None:
    """Issue 31: run --help listed every iceflow flag among the general ones."""
    proc = subprocess.run([sys.executable, "-m", "ksptrace", "run", "--help"], cwd=ROOT,
                          capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    options = proc.stdout[proc.stdout.index("\noptions:\n"):]  # after the usage line
    general, _, iceflow = options.partition("\niceflow only (--problem iceflow):\n")
    assert iceflow, proc.stdout
    assert "--hom" not in general
    assert "--mx" not in general
    assert "--hom HOM" in iceflow
    assert "--iterations" in general
