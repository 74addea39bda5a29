"""The campaign file: declared keys, clear errors with file, line and the nearest valid key."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ksptrace.errors import CampaignError
from ksptrace.harness.options import RUN_PARAMS
from ksptrace.jobs.schema import (
    CAMPAIGN_KEYS,
    SCHEDULER_KEYS,
    find_line,
    load_campaign_file,
    parse_walltime,
    sweep_keys,
)

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
    ("[scheduler]\nsbatch_directives = [\"a\\nb\"]\n", r":2: each of sbatch_directives"),
    ("campaign = 3\n", r"\[campaign\] must be a table"),
])
def test_bad_values_name_the_line(write_campaign: Write, text: str, pattern: str) -> None:
    with pytest.raises(CampaignError, match=pattern):
        load_campaign_file(write_campaign(text))


def test_missing_file() -> None:
    with pytest.raises(CampaignError, match="cannot read the campaign file"):
        load_campaign_file(Path("/nonexistent/campaign.toml"))


def test_find_line_handles_quoted_keys() -> None:
    text = "[a]\nx = 1\n[b]\n\"x\" = 2\n"
    assert find_line(text, "b", "x") == 4
    assert find_line(text, "a", "x") == 2
    assert find_line(text, "b") == 3
    assert find_line(text, "c", "x") is None
