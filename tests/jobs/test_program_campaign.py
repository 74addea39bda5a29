"""Campaigns of user programs (``kind = "program"``): the command template and its checks, the
scripts on every backend (hostile words inert), the staged publication of a run's traces, and
a real local campaign of PETSc's ex2 at P = 1 and 2, resumed."""

from __future__ import annotations

import dataclasses
import json
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ksptrace.cli.main import main
from ksptrace.errors import CampaignError
from ksptrace.jobs import state
from ksptrace.jobs.backends import alive_any, get_backend
from ksptrace.jobs.campaign_file import load_campaign_file
from ksptrace.jobs.expand import load_spec
from ksptrace.jobs.runner import run_campaign
from ksptrace.jobs.spec import CampaignSpec
from ksptrace.trace.read import read_trace
from tests.harness.hook import tutorials

Write = Callable[..., Path]

CAMPAIGN = """
[campaign]
name = "prog"
kind = "program"
output = "out"
{extra}
[program]
command = {command}

[sweep]
nprocs = [1, 2]
{sweep}
"""


def _file(write: Write, command: str = '["./app", "-ksp_type", "{ksp}"]',
          sweep: str = 'ksp = ["cg", "gmres"]', extra: str = "") -> Path:
    return write(CAMPAIGN.format(command=command, sweep=sweep, extra=extra))


def test_runs_fill_the_template(write_campaign: Write, tmp_path: Path) -> None:
    spec = load_spec(_file(write_campaign, '["./app", "-n", "{nprocs}", "{{x}}", "-ksp_type", '
                                           '"{ksp}"]'))
    app = str(tmp_path / "app")  # relative to the campaign file, like output
    assert [(r.nprocs, r.param("argv")) for r in spec.runs] == [
        (1, (app, "-n", "1", "{x}", "-ksp_type", "cg")),
        (1, (app, "-n", "1", "{x}", "-ksp_type", "gmres")),
        (2, (app, "-n", "2", "{x}", "-ksp_type", "cg")),
        (2, (app, "-n", "2", "{x}", "-ksp_type", "gmres"))]
    assert len({r.run_id for r in spec.runs}) == 4
    assert spec.runs[0].trace == f"traces/{spec.runs[0].run_id}"
    moved = load_spec(_file(write_campaign, '["./app", "-n", "{nprocs}", "{{x}}", "-ksp_type", '
                                            '"{ksp}"]'), output=tmp_path / "elsewhere")
    assert [r.run_id for r in moved.runs] == [r.run_id for r in spec.runs]  # stable ids


@pytest.mark.parametrize(("command", "sweep", "extra", "message"), [
    ('["./app", "{kps}"]', 'ksp = "cg"', "",
     r"placeholder \{kps\} names no sweep key \(keys in \[sweep\]: ksp, nprocs\)"),
    ('["./app", "{a b}"]', "", "", r"holds '\{a b\}', not a placeholder"),
    ('["./app", "x}"]', "", "", r"holds '\}', not a placeholder.*write \{\{ and \}\}"),
    ('"./app -ksp_type cg"', "", "", "command must be a list of strings.*not a shell line"),
    ('[]', "", "", "command must be a non-empty list of strings"),
    ('["./app"]', 'ksp = ["cg", "gmres"]', "", "sweep key 'ksp' is used by no placeholder"),
    ('["./app", "{argv}"]', 'argv = "x"', "", "not argv or trace_flags"),
    ('["./app", "{k}"]', "k = [true]", "", "values must be strings or numbers"),
    ('["./app"]', "", "[program]\ndepth = 0\n", "depth"),
    ('["./app"]', "", "[program]\ncomand = 1\n", "unknown key in \\[program\\] 'comand'; did you "
     "mean 'command'"),
    ('["./app", "{ksp}"]', 'ksp = "cg"', "", None),
    ('["./app", "{ksp}"]', 'ksp = "mine"', "", None),  # an axis of the user's, not a KSP type
])
def test_bad_commands_are_one_line_errors(write_campaign: Write, command: str, sweep: str,
                                          extra: str, message: str | None) -> None:
    text = CAMPAIGN.format(command=command, sweep=sweep, extra="")
    if extra:  # a second [program] table is bad TOML: add the key to the first one
        text = text.replace("[program]\n", extra, 1)
    path = write_campaign(text)
    if message is None:
        load_campaign_file(path)
        return
    with pytest.raises(CampaignError, match=message) as info:
        load_campaign_file(path)
    assert "\n" not in str(info.value)
    assert str(info.value).startswith(str(path) + ":")


def test_program_table_and_kind_go_together(write_campaign: Write) -> None:
    path = write_campaign('[program]\ncommand = ["./app"]\n[sweep]\nnprocs = 1\n')
    with pytest.raises(CampaignError, match=r'\[program\] needs kind = "program"'):
        load_campaign_file(path)
    path = write_campaign('[campaign]\nkind = "program"\n[sweep]\nnprocs = 1\n')
    with pytest.raises(CampaignError, match=r"needs a \[program\] table"):
        load_campaign_file(path)


HOSTILE = ["$(touch pwned)", "`touch pwned`", "a b; touch pwned", "it's \"quoted\"", "*", "~"]


def _task_argv(script: str, task: int) -> list[str]:
    """The ``cmd`` array of one task of a rendered script, as bash reads it."""
    rows = script.split('case "$task" in\n')[1].split("\n")
    row = rows[2 * task + 1].strip().removesuffix(";;")
    out = subprocess.run(["bash", "-c", f'{row}\nprintf "%s\\0" "${{cmd[@]}}"'],
                         capture_output=True, text=True, check=True, timeout=30)
    return out.stdout.split("\0")[:-1]


@pytest.mark.parametrize("backend", ["slurm", "pbs"])
def test_scripts_launch_the_program_under_trace(write_campaign: Write, tmp_path: Path,
                                                backend: str) -> None:
    sweep = "word = [" + ", ".join(json.dumps(w) for w in HOSTILE) + "]"
    text = CAMPAIGN.format(command='["/opt/app dir/app", "-opt", "{word}", "-n={nprocs}"]',
                           sweep=sweep, extra="")
    text = text.replace("[program]\n", '[program]\ndepth = 2\nksp_prefix = "a b"\n')
    path = write_campaign(text + '[petsc_options]\nksp_monitor = ""\n'
                          "[scheduler]\nnodes = 1\nranks_per_node = 2\n")
    spec = load_spec(path)
    (script,) = get_backend(backend).render(spec, spec.runs)
    for task, run in enumerate(script.runs):
        word, p = run.param("word"), str(run.nprocs)
        launch = (["srun", "--mpi=pmix", "--ntasks", p, "--nodes", "1"] if backend == "slurm"
                  else ["env", "OMPI_MCA_orte_set_default_slots=none", "mpiexec", "-n", p,
                        "-hostfile", ""])  # "$PBS_NODEFILE", unset outside a PBS job
        assert _task_argv(script.text, task) == [
            "ksptrace", "trace", "--out", f"traces/.{run.run_id}.partial", "--depth", "2",
            "--ksp-prefix", "a b", "--", *launch,
            "/opt/app dir/app", "-opt", word, f"-n={run.nprocs}", "-ksp_monitor"]
    assert not (tmp_path / "pwned").exists()
    assert 'mv "$stage" "$published"' in script.text
    assert script.text.count("published=traces/") == len(spec.runs)


def test_plan_lists_each_runs_command(write_campaign: Write, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(write_campaign, '["./my app", "-ksp_type", "{ksp}"]')
    assert main(["campaign", "plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "4 program runs (ksptrace trace)" in out
    assert f"{shlex.quote(str(tmp_path / 'my app'))} -ksp_type gmres" in out
    assert "no time estimate" in out


def test_harness_launcher_is_refused(write_campaign: Write) -> None:
    path = _file(write_campaign, extra="")
    path.write_text(path.read_text() + '\n[scheduler]\nlauncher = "harness"\n')
    spec = load_spec(path)
    with pytest.raises(CampaignError, match="launcher 'harness' starts only ksptrace run"):
        run_campaign(spec, get_backend("local"), dry_run=True)
    assert not spec.output.exists()


def test_failed_run_publishes_nothing(write_campaign: Write, tmp_path: Path) -> None:
    """A command that wrote into its stage and failed leaves no traces/<id>/, only a marker;
    a rerun that succeeds publishes only what it wrote."""
    fake = tmp_path / "fake-ksptrace"
    fake.write_text('#!/bin/bash\nmkdir -p "$3" && echo half > "$3/x.h5"\nexit 3\n')
    fake.chmod(0o755)
    spec = load_spec(_file(write_campaign, sweep='ksp = "cg"'))
    spec = dataclasses.replace(spec, command=(str(fake),))
    (script,) = get_backend("slurm").render(spec, spec.runs)
    spec.output.mkdir()
    (spec.output / "job.sh").write_text(script.text)
    proc = subprocess.run(["bash", "job.sh"], cwd=spec.output, capture_output=True, text=True,
                          env={"SLURM_ARRAY_TASK_ID": "0", "PATH": "/usr/bin:/bin"},
                          timeout=60, check=False)
    rid = spec.runs[0].run_id
    assert proc.returncode == 3, proc.stderr
    assert not (spec.output / "traces" / rid).exists()
    assert (spec.output / "state" / f"{rid}.failed").exists()
    assert state.check_trace(spec.output, rid, 1, None, "program") == "no trace"

    # The rerun starts from an empty stage (a killed run's leftovers are not published).
    (spec.output / spec.runs[0].stage / "old.h5").write_text("killed half-way")
    fake.write_text('#!/bin/bash\nmkdir -p "$3" && echo whole > "$3/new.h5"\n')
    proc = subprocess.run(["bash", "job.sh"], cwd=spec.output, capture_output=True, text=True,
                          env={"SLURM_ARRAY_TASK_ID": "0", "PATH": "/usr/bin:/bin"},
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (spec.output / "traces" / rid).iterdir()) == ["new.h5"]
    assert not (spec.output / spec.runs[0].stage).exists()
    assert not (spec.output / "state" / f"{rid}.failed").exists()


@pytest.fixture(scope="module")
def ex2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    why = tutorials.missing()
    if why is not None:
        pytest.fail(why)
    return tutorials.build("ex2", tmp_path_factory.mktemp("ex2"))


def _states(spec: CampaignSpec) -> dict[str, str]:
    return {s.run_id: s.state for s in state.statuses(spec.output, state.run_dicts(spec),
                                                      alive_any)}


def test_local_campaign_of_ex2_is_traced_then_skipped(
        require_petsc: None, write_campaign: Write, ex2: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("OMPI_ALLOW_RUN_AS_ROOT", "1"), ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
                        ("OPENBLAS_NUM_THREADS", "1"), ("OMP_NUM_THREADS", "1")):
        monkeypatch.setenv(name, value)
    path = _file(write_campaign, f'["{ex2}", "-m", "{{m}}", "-n", "{{m}}", "-ksp_type", "cg"]',
                 "m = 12", extra="oversubscribe = true")
    spec = load_spec(path)
    outcome = run_campaign(spec, get_backend("local"))
    assert len(outcome.pending) == 2
    assert set(_states(spec).values()) == {"done"}
    for run in spec.runs:
        (trace_path,) = (spec.output / run.trace).glob("*.h5")
        trace = read_trace(trace_path)
        assert trace.nprocs == run.nprocs
        assert trace.attrs["run_id"] == run.run_id
        assert trace.attrs["campaign"] == "prog"
        assert trace.attrs["campaign_hash"] == spec.campaign_hash
        assert trace.attrs["ksp"] == "cg"
        assert trace.solves is not None
        assert trace.solves.iterations[0] > 0
    assert not list((spec.output / "traces").glob(".*"))  # no stage left behind
    stamps = {p: p.stat().st_mtime_ns for p in (spec.output / "traces").rglob("*.h5")}

    again = run_campaign(spec, get_backend("local"))
    assert again.pending == ()
    assert again.skipped == 2
    assert {p: p.stat().st_mtime_ns for p in (spec.output / "traces").rglob("*.h5")} == stamps
