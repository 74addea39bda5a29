"""How the hook reaches a command's processes: launcher flags, and the programs it cannot
reach (no process needed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ksptrace.errors import UsageError
from ksptrace.harness.hook import inject

ENV = {"LD_PRELOAD": "/c/hook.so", "KSPTRACE_HOOK_DIR": "/o/.k", "KSPTRACE_HOOK_SETUP": "0",
       "PATH": "/bin"}


@pytest.mark.parametrize(("launcher", "flags"), [
    ("openmpi", ["-x", "LD_PRELOAD", "-x", "KSPTRACE_HOOK_DIR", "-x", "KSPTRACE_HOOK_SETUP"]),
    ("mpich", ["-genv", "LD_PRELOAD", "/c/hook.so", "-genv", "KSPTRACE_HOOK_DIR", "/o/.k",
               "-genv", "KSPTRACE_HOOK_SETUP", "0"]),
    ("srun", ["--export=ALL,LD_PRELOAD=/c/hook.so,KSPTRACE_HOOK_DIR=/o/.k,"
              "KSPTRACE_HOOK_SETUP=0"]),
    ("none", []),
])
def test_the_launcher_passes_the_hooks_variables_on(launcher: str, flags: list[str]) -> None:
    got = inject.with_hook(["run", "-n", "2", "./app", "-ksp_monitor"], launcher, ENV)
    assert list(got.argv) == ["run", *flags, "-n", "2", "./app", "-ksp_monitor"]


def test_srun_with_its_own_export_is_one_error() -> None:
    with pytest.raises(UsageError, match="--export"):
        inject.with_hook(["srun", "--export=NONE", "./app"], "srun", ENV)


def test_a_comma_in_the_prefix_is_named_as_the_prefix_and_in_a_path_as_a_path() -> None:
    with pytest.raises(UsageError) as caught:
        inject.with_hook(["srun", "./app"], "srun", {**ENV, "KSPTRACE_HOOK_PREFIX": "a_,b_"})
    assert str(caught.value).startswith("--ksp-prefix 'a_,b_' contains a comma")
    assert "path" not in str(caught.value)
    with pytest.raises(UsageError, match=r"^a path of the hook contains a comma"):
        inject.with_hook(["srun", "./app"], "srun", {**ENV, "KSPTRACE_HOOK_DIR": "/o,p/.k"})


def test_the_program_is_the_script_after_an_interpreter(tmp_path: Path) -> None:
    script = tmp_path / "solve.py"
    script.write_text("")
    assert inject.program_of(["mpiexec", "-n", "2", "python3", str(script)], "openmpi") == script
    assert inject.program_of(["python3", "-c", "pass"], "none") is not None


def test_a_static_executable_is_found_before_anything_runs(tmp_path: Path) -> None:
    source = tmp_path / "s.c"
    source.write_text("int main(void) { return 0; }\n")
    subprocess.run(["cc", "-static", "-o", str(tmp_path / "s"), str(source)], check=True)
    subprocess.run(["cc", "-o", str(tmp_path / "d"), str(source)], check=True)
    assert inject.static_program(["mpiexec", "-n", "2", str(tmp_path / "s")], "openmpi") \
        == tmp_path / "s"
    assert inject.static_program([str(tmp_path / "d")], "none") is None
    assert inject.static_program(["mpiexec", str(source)], "openmpi") is None  # not ELF


def test_the_mpi_of_mpiexec_is_told_by_its_name_without_running_it(tmp_path: Path) -> None:
    for target, flavor in (("orterun", "openmpi"), ("mpiexec.hydra", "mpich")):
        real = tmp_path / target
        real.write_text("#!/bin/sh\nexit 99\n")  # would fail if it were run
        real.chmod(0o755)
        link = tmp_path / f"{flavor}-mpiexec"
        link.symlink_to(real)
        alias = tmp_path / "mpiexec"
        alias.unlink(missing_ok=True)
        alias.symlink_to(link)
        assert inject.launcher_of([str(alias), "-n", "2", "./app"]) == flavor


def test_a_leading_env_with_assignments_is_passed_over(tmp_path: Path) -> None:
    """PBS's job scripts run ``env OMPI_MCA_...=none mpiexec -n P -hostfile ...``: the flags
    go after mpiexec, not after env, and the launcher is mpiexec's."""
    real = tmp_path / "orterun"
    real.write_text("#!/bin/sh\nexit 99\n")
    real.chmod(0o755)
    argv = ["env", "OMPI_MCA_orte_set_default_slots=none", str(real), "-n", "2", "./app"]
    assert inject.launcher_of(argv) == "openmpi"
    got = inject.with_hook(argv, "openmpi", ENV)
    assert list(got.argv) == [*argv[:3], "-x", "LD_PRELOAD", "-x", "KSPTRACE_HOOK_DIR",
                              "-x", "KSPTRACE_HOOK_SETUP", *argv[3:]]
    script = tmp_path / "solve.py"
    script.write_text("")
    assert inject.program_of(["env", "A=1", str(real), "-n", "2", "python3", str(script)],
                             "openmpi") == script
    assert inject.launcher_of(["env", "A=1", "./app"]) == "none"


def test_the_pbs_node_file_is_never_taken_for_the_program(tmp_path: Path) -> None:
    """Issue 66: on PBS, traces were named after ``-hostfile $PBS_NODEFILE`` (``14[0]``), the
    first existing file after mpiexec, and analyze took each run for its own problem."""
    nodefile = tmp_path / "14[0].pbshead"
    nodefile.write_text("pbsnode1\n")
    program = tmp_path / "ex2"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    script = tmp_path / "solve.py"
    script.write_text("")
    pbs = ["env", "OMPI_MCA_orte_set_default_slots=none", "mpiexec", "-n", "2", "-hostfile",
           str(nodefile)]
    assert inject.program_of([*pbs, str(program), "-m", "10"], "openmpi") == program
    assert inject.program_of([*pbs, "python3", str(script)], "openmpi") == script
    assert inject.program_of(["mpiexec", "-n", "2", "-genv", "A", str(nodefile), "-f",
                              str(nodefile), str(program)], "mpich") == program
    # a file an option this list does not know names: not executable, so not the program
    assert inject.program_of(["mpiexec", "--odd", str(nodefile), str(program)],
                             "openmpi") == program
