"""The campaign file: declared keys, clear errors with file, line and the nearest valid key."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ksptrace.cli.main import main
from ksptrace.errors import CampaignError
from ksptrace.harness.config.options import RUN_PARAMS
from ksptrace.harness.petsc.petsc_types import BUILTIN, KSP_TYPES, PC_TYPES, SOURCE_ENV, PetscTypes
from ksptrace.jobs.campaign_file import load_campaign_file
from ksptrace.jobs.schema import (
    CAMPAIGN_KEYS,
    KEY_ALIASES,
    SCHEDULER_KEYS,
    find_line,
    parse_walltime,
    sweep_keys,
)
from ksptrace.params import nearest

Write = Callable[..., Path]


def test_every_key_is_declared_once_with_help() -> None:
    for keys in (CAMPAIGN_KEYS, SCHEDULER_KEYS, sweep_keys()):
        names = [p.name for p in keys]
        assert len(names) == len(set(names))
        assert all(p.help for p in keys)


def test_sweep_keys_come_from_the_run_declarations() -> None:
    names = {p.name for p in sweep_keys()}
    assert {p.name for p in RUN_PARAMS} <= names
    assert "nprocs" in names


def test_defaults_fill_a_minimal_file(write_campaign: Write) -> None:
    cf = load_campaign_file(write_campaign("[sweep]\nksp = 'cg'\n"))
    assert cf.campaign["repetitions"] == 1
    assert cf.scheduler["walltime_seconds"] == 3600
    assert cf.sweep == {"ksp": ("cg",)}


def test_malformed_toml_names_file_and_line(write_campaign: Write) -> None:
    path = write_campaign("[sweep]\nksp = ['gmres'\n")
    with pytest.raises(CampaignError, match=rf"{path}:2: malformed TOML: Unclosed array"):
        load_campaign_file(path)
    path = write_campaign("[sweep]\nksp = 'gmres'\nn = = 3\n")
    with pytest.raises(CampaignError, match=rf"{path}:3: malformed TOML: .*\(column 5\)"):
        load_campaign_file(path)


def test_unknown_key_suggests_the_nearest(write_campaign: Write) -> None:
    path = write_campaign("[scheduler]\nwalltime = '01:00:00'\n\nranks_per_nod = 4\n")
    with pytest.raises(CampaignError) as err:
        load_campaign_file(path)
    msg = str(err.value)
    assert f"{path}:4:" in msg
    assert "'ranks_per_nod'" in msg
    assert "did you mean 'ranks_per_node'?" in msg


def test_unknown_sweep_key_and_table(write_campaign: Write) -> None:
    with pytest.raises(CampaignError, match=r":3: unknown key in \[sweep\] 'itertions'.*"
                                            r"did you mean 'iterations'"):
        load_campaign_file(write_campaign("[sweep]\nksp = 'cg'\nitertions = 3\n"))
    with pytest.raises(CampaignError, match=r":1: unknown table 'schedular'.*'scheduler'"):
        load_campaign_file(write_campaign("[schedular]\n"))


@pytest.mark.parametrize("value", ["25:99:00", "0:00:00", "1:2:3", "-1:00:00", "forever",
                                   "9999-00:00:00"])
def test_impossible_walltime(write_campaign: Write, value: str) -> None:
    path = write_campaign(f"[scheduler]\nwalltime = '{value}'\n")
    with pytest.raises(CampaignError, match=rf"{path}:2: walltime"):
        load_campaign_file(path)


def test_walltime_forms() -> None:
    assert parse_walltime("1-02:03:04", "x") == 93784
    assert parse_walltime("100:00:00", "x") == 360000


@pytest.mark.parametrize(("text", "pattern"), [
    ("[sweep]\nn = 'big'\n", r":2: 'n' must be int"),
    ("[sweep]\nn = [1000, 0]\n", r":2: 'n' must be >= 1"),
    ("[sweep]\nnprocs = []\n", r":2: 'nprocs' is an empty list"),
    ("[sweep]\nproblem = 'laplace2d'\n", r":2: unknown problem 'laplace2d'; valid problems"),
    ("[sweep]\niterations = true\n", r"'iterations' must be int"),
    ("[campaign]\nname = 'a b'\n", r":2: name 'a b' may hold only"),
    ("[scheduler]\npartition = 'x;y'\n", r":2: partition 'x;y' may hold only"),
    ("[campaign]\nzip = [['n', 'nprocs']]\n[sweep]\nn = [1, 2]\nnprocs = [1, 2, 3]\n",
     r":2: zipped keys need lists of one length \(n: 2, nprocs: 3\)"),
    ("[campaign]\nzip = [['n', 'nprocz']]\n[sweep]\nn = [1, 2]\nnprocs = [1, 2]\n",
     r"unknown sweep key in zip 'nprocz'; did you mean 'nprocs'"),
    ("[petsc_options]\n'-bad name' = 1\n", r":2: '-bad name' is not a PETSc option name"),
    ("[scheduler]\nsbatch_directives = [\"a\\nb\"]\n",
     r":2: 'sbatch_directives' holds a control character '\\n'"),
    ("campaign = 3\n", r"\[campaign\] must be a table"),
])
def test_bad_values_name_the_line(write_campaign: Write, text: str, pattern: str) -> None:
    with pytest.raises(CampaignError, match=pattern):
        load_campaign_file(write_campaign(text))


def test_missing_file() -> None:
    with pytest.raises(CampaignError, match=r"cannot read campaign file .*: No such file"):
        load_campaign_file(Path("/nonexistent/campaign.toml"))


def test_find_line_handles_quoted_keys() -> None:
    text = "[a]\nx = 1\n[b]\n\"x\" = 2\n"
    assert find_line(text, "b", "x") == 4
    assert find_line(text, "a", "x") == 2
    assert find_line(text, "b") == 3
    assert find_line(text, "c", "x") is None


# --- values checked when the file is loaded, not after queueing -------------------------------

def test_unknown_ksp_type_is_refused_with_the_nearest(write_campaign: Write) -> None:
    path = write_campaign("[sweep]\nn = 1000\nksp = ['cg', 'gmers']\n")
    with pytest.raises(CampaignError) as err:
        load_campaign_file(path, BUILTIN)
    msg = str(err.value)
    assert msg.startswith(f"{path}:3: unknown KSP type 'gmers'; did you mean 'gmres'?")
    assert "PETSc 3.18" in msg
    assert "\n" not in msg


def test_unknown_pc_type_is_refused_with_the_nearest(write_campaign: Write) -> None:
    path = write_campaign("[sweep]\npc = 'jacobbi'\n")
    with pytest.raises(CampaignError, match=r":2: unknown PC type 'jacobbi'; did you mean "
                                            r"'jacobi'\?"):
        load_campaign_file(path, BUILTIN)


def test_a_newer_petsc_list_is_preferred(write_campaign: Write) -> None:
    newer = PetscTypes("PETSc 9.9 (installed petsc4py)", KSP_TYPES | {"newkrylov"}, PC_TYPES)
    path = write_campaign("[sweep]\nksp = 'newkrylov'\n")
    assert load_campaign_file(path, newer).sweep["ksp"] == ("newkrylov",)
    with pytest.raises(CampaignError, match="unknown KSP type 'newkrylov'"):
        load_campaign_file(path, BUILTIN)


def test_np_suggests_nprocs(write_campaign: Write) -> None:
    path = write_campaign("[sweep]\nnp = [1, 2]\n")
    with pytest.raises(CampaignError, match="unknown key in \\[sweep\\] 'np'; did you mean "
                                            "'nprocs'\\?"):
        load_campaign_file(path)


@pytest.mark.parametrize(("word", "meant"), [
    ("np", "nprocs"), ("nprcs", "nprocs"), ("iter", "iterations"), ("ksp_type", "ksp"),
    ("N", "n"), ("restrat", "restart"), ("warmpu", "warmup"), ("P", "nprocs"),
])
def test_nearest_sweep_key(word: str, meant: str) -> None:
    assert nearest(word, [p.name for p in sweep_keys()], KEY_ALIASES) == meant


@pytest.mark.parametrize(("word", "valid", "meant"), [
    ("gmers", KSP_TYPES, "gmres"), ("bcg", KSP_TYPES, "bcgs"), ("pipcg", KSP_TYPES, "pipecg"),
    ("hypr", PC_TYPES, "hypre"), ("ilu0", PC_TYPES, "ilu"), ("xyzzy", KSP_TYPES, None),
])
def test_nearest_type(word: str, valid: frozenset[str], meant: str | None) -> None:
    assert nearest(word, valid) == meant


# --- names and strings that reach scripts and file names --------------------------------------

def test_a_300_character_name_is_refused(write_campaign: Write) -> None:
    path = write_campaign(f"[campaign]\nname = '{'a' * 300}'\n")
    with pytest.raises(CampaignError, match=r":2: name is 300 characters long; use at most 200"):
        load_campaign_file(path)
    assert load_campaign_file(write_campaign(f"[campaign]\nname = '{'a' * 200}'\n"))


def test_a_too_long_output_folder_is_refused(write_campaign: Write) -> None:
    path = write_campaign(f"[campaign]\noutput = 'runs/{'o' * 256}'\n")
    with pytest.raises(CampaignError, match=r":2: output folder name 'o+'\.\.\. is 256 bytes"):
        load_campaign_file(path)


@pytest.mark.parametrize(("text", "pattern"), [
    ('[sweep]\nhdf5_path = "au\\u0000to"\n', r":2: 'hdf5_path' holds a control character "
                                               r"'\\x00' \(U\+0000\)"),
    ('[sweep]\nquadrature = ["gauss", "lo\\u0000bat"]\n', r":2: 'quadrature' holds a control"),
    ('[sweep]\nksp = "gm\\u0000res"\n', r":2: 'ksp' holds a control character '\\x00'"),
    ('[petsc_options]\nksp_monitor = "a\\u001bb"\n', r":2: 'ksp_monitor' holds a control"),
    ('[petsc_options]\n"ksp\\u0000x" = "1"\n', r"the name 'ksp\\x00x' holds a control"),
    ('[campaign]\nname = "ok\\n"\n', r":2: 'name' holds a control character '\\n'"),
    ('[campaign]\ncommand = "ksptrace\\u0000 x"\n', r":2: 'command' holds a control"),
    ('[campaign]\nsetup = ["module load\\u0000 x"]\n', r":2: 'setup' holds a control"),
    ('[campaign]\noutput = "r\\u007funs"\n', r":2: 'output' holds a control character"),
    ('[scheduler]\npbs_directives = ["-l x\\u0085"]\n', r":2: 'pbs_directives' holds a"),
])
def test_control_characters_are_refused(write_campaign: Write, text: str, pattern: str) -> None:
    with pytest.raises(CampaignError, match=pattern) as err:
        load_campaign_file(write_campaign(text))
    assert "\n" not in str(err.value).rstrip("\n")


def test_a_tab_in_a_setup_line_is_shell(write_campaign: Write) -> None:
    cf = load_campaign_file(write_campaign('[campaign]\nsetup = ["export A=1\\tB=2"]\n'))
    assert cf.campaign["setup"] == ("export A=1\tB=2",)


# --- the same checks through the command line: plan and --dry-run, before anything is written --

@pytest.mark.parametrize(("text", "expected"), [
    ("[sweep]\nksp = 'gmers'\n", "unknown KSP type 'gmers'; did you mean 'gmres'?"),
    ("[sweep]\nnp = 2\n", "unknown key in [sweep] 'np'; did you mean 'nprocs'?"),
    (f"[campaign]\nname = '{'x' * 300}'\n", "name is 300 characters long; use at most 200"),
    ('[sweep]\nksp = "gm\\u0000res"\n', "'ksp' holds a control character '\\x00'"),
])
@pytest.mark.parametrize("action", [["plan"], ["run", "--backend", "slurm", "--dry-run"],
                                    ["run", "--backend", "pbs", "--dry-run"]])
def test_plan_and_dry_run_refuse_in_one_line(
        write_campaign: Write, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, text: str, expected: str, action: list[str]) -> None:
    monkeypatch.setenv(SOURCE_ENV, "builtin")
    path = write_campaign(text)
    assert main(["campaign", *action, str(path)]) == 7
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"ksptrace: error: {path}:2: ")
    assert expected in lines[0]
    assert sorted(p.name for p in path.parent.iterdir()) == ["campaign.toml"]
