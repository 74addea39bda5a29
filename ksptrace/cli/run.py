"""``ksptrace run``: one instrumented solve; launches mpiexec itself with ``--np``."""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

from ksptrace import escape
from ksptrace.cli.common import add_params, output_target
from ksptrace.cli.display import seconds, stop_reason
from ksptrace.errors import EnvironmentProblem, TraceError, UsageError
from ksptrace.harness.config.options import CHECK_PARAMS, RUN_PARAMS
from ksptrace.harness.launching.mpienv import launched_size, under_mpi_launcher
from ksptrace.noise.spec import parse as parse_noise
from ksptrace.params import nearest, resolve
from ksptrace.problems import registry
from ksptrace.trace import publish, temporaries

EXTRA_FLAGS = ("--np", "--out", "--overwrite", "--tag", "--mpiexec")
MAX_RANKS_PER_CORE = 16
"""``--np`` launches every rank here: more than this many per core is refused."""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        description="Run a problem for a forced number of Krylov iterations, stamping every "
        "iteration on every rank, and write the trace (HDF5). Unrecognised single-dash "
        "options are passed to PETSc as written, e.g. -ksp_gmres_restart 30.",
        allow_abbrev=False,
    )
    special: dict[str, list[str]] = {}
    for info in registry.registered():
        for name, value in info.run_defaults.items():
            special.setdefault(name, []).append(f"{value} for {info.name}")
    add_params(p, RUN_PARAMS, {k: "; ".join(v) for k, v in special.items()})
    add_params(p, CHECK_PARAMS)
    # Each problem's own flags under its name, so that --help tells which problem takes them.
    seen: set[str] = set()
    for info in registry.registered():
        own = [q for q in info.params if q.name not in seen]
        if own:
            add_params(p.add_argument_group(f"{info.name} only (--problem {info.name})"), own)
            seen.update(q.name for q in own)
    add_params(p, [q for q in registry.all_params() if q.name not in seen])
    p.add_argument("--np", type=int, default=None, help="launch mpiexec with this many ranks")
    p.add_argument("--out", default="traces", help="output folder, or a file name ending in .h5")
    p.add_argument("--overwrite", action="store_true", help="replace an existing trace file")
    p.add_argument("--tag", default="", help="suffix for the trace file name (e.g. a repetition)")
    p.add_argument("--mpiexec", default=None, help="mpiexec to use (default: from PATH)")
    p.set_defaults(func=main, accepts_extra=True)


def _petsc_options(extra: list[str], known: list[str]) -> tuple[str, ...]:
    for arg in extra:
        if arg.startswith("--"):
            flag = arg.split("=")[0]
            near = difflib.get_close_matches(flag, known, n=1)
            hint = f"; did you mean {near[0]}?" if near else ""
            raise UsageError(f"unknown option {flag}{hint}")
    if extra and not extra[0].startswith("-"):
        raise UsageError(
            f"unexpected argument '{extra[0]}'; PETSc options start with one dash (-ksp_...)"
        )
    return tuple(extra)


def _settings_values(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    declared = (*RUN_PARAMS, *CHECK_PARAMS)
    given = {p.name: getattr(args, p.name) for p in declared}
    run = resolve(declared, given)
    info = registry.get(run["problem"])
    unset = {k: v for k, v in info.run_defaults.items() if given.get(k) is None}
    if unset:  # the problem's own defaults where the user set nothing
        run = resolve(declared, {**given, **unset})
    own = {p.name for p in info.params}
    for p in registry.all_params():
        if p.name not in own and getattr(args, p.name) is not None:
            raise UsageError(f"{p.flag} does not apply to problem '{info.name}'")
    problem = resolve(info.params, {p.name: getattr(args, p.name) for p in info.params})
    return run, problem


def _check_type_names(ksp: str, pc: str) -> None:
    """Refuse a KSP or PC name PETSc does not have before starting mpiexec (the harness checks
    again against the PETSc it runs). The installed petsc4py is asked only when a name is not
    in ksptrace's built-in PETSc 3.18 lists, since a newer PETSc may have more types."""
    from ksptrace.harness.petsc import petsc_types

    if ksp in petsc_types.KSP_TYPES and pc in petsc_types.PC_TYPES:
        return
    types = petsc_types.current()
    for kind, name, valid in (("KSP", ksp, types.ksp), ("PC", pc, types.pc)):
        if name not in valid:
            near = nearest(name, valid)
            hint = f"did you mean '{near}'? " if near else ""
            raise UsageError(
                f"unknown {kind} type '{name}'; {hint}valid types: {', '.join(sorted(valid))}"
            )


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]", "_", text)


def options_digest(petsc_options: tuple[str, ...]) -> str:
    """8 hex digits of sha256 over the passed-through PETSc options, as written (order kept:
    for PETSc the last of two values wins)."""
    return hashlib.sha256("\0".join(petsc_options).encode()).hexdigest()[:8]


def as_named(run: dict[str, Any], problem: dict[str, Any]) -> dict[str, Any]:
    """``run`` with ``n`` the problem's unknowns, as the file name says it: iceflow's grid, which
    its flags (--mx, --mz) decide whatever --n says, not the --n it was chosen from."""
    unknowns = registry.get(run["problem"]).unknowns
    return run if unknowns is None else {**run, "n": unknowns(run["n"], problem)}


def output_path(
    out: str, run: dict[str, Any], nprocs: int, tag: str, petsc_options: tuple[str, ...] = ()
) -> Path:
    """The trace file: ``out`` itself when it ends in .h5, else a name from the parameters
    (and a digest of the PETSc options, when there are any); ``run`` as :func:`as_named`
    gives it."""
    target = output_target(out)
    if target.suffix == ".h5":
        return target
    parts = [run["problem"], run["ksp"], run["pc"], f"n{run['n']}", f"P{nprocs}",
             f"K{run['iterations']}"]
    if run["restart"]:
        parts.append(f"r{run['restart']}")
    if petsc_options:
        parts.append(f"o{options_digest(petsc_options)}")
    if run.get("noise", "none") != "none":  # a different experiment: its own name
        parts.append(f"noise-{str(run['noise']).split(':')[0]}-"
                     f"{hashlib.sha256(str(run['noise']).encode()).hexdigest()[:6]}")
    if tag:
        parts.append(tag)
    return target / (escape.bounded_stem("_".join(_safe(p) for p in parts)) + ".h5")


def main(args: argparse.Namespace) -> int:
    known = [p.flag for p in (*RUN_PARAMS, *CHECK_PARAMS, *registry.all_params())]
    petsc_options = _petsc_options(args.extra, [*known, *EXTRA_FLAGS])
    run, problem = _settings_values(args)
    if args.np is not None and args.np < 1:
        raise UsageError(f"--np must be >= 1, got {args.np}")
    most = MAX_RANKS_PER_CORE * (os.cpu_count() or 1)
    if args.np is not None and args.np > most:
        raise UsageError(f"--np {args.np} would start {args.np} ranks on this machine's "
                         f"{os.cpu_count()} cores (at most {most}: {MAX_RANKS_PER_CORE} per core); "
                         "run larger P as a campaign on a cluster (ksptrace campaign)")
    launched = under_mpi_launcher()
    if not launched:  # under mpiexec every rank would print it: the harness checks, agreed
        _check_type_names(run["ksp"], run["pc"])
    if launched:
        size = launched_size()
        if args.np is not None and size is not None and size != args.np:
            raise UsageError(
                f"started under a launcher with {size} ranks but --np {args.np}; drop --np"
            )
        nprocs = size or 1
    else:
        nprocs = args.np or 1
    reach = parse_noise(run["noise"]).reach_problem(nprocs)  # nodes: checked once launched
    if reach is not None:
        raise UsageError(reach)
    path = output_path(args.out, as_named(run, problem), nprocs, args.tag, petsc_options)
    if not args.overwrite:
        _refuse_other_experiment(path, run, problem, petsc_options, nprocs)
    publish.check_destination(path, args.overwrite)
    _sweep(path.parent, launched)
    if args.np is not None and not launched:
        return _launch(args, run, problem, petsc_options, path)
    return _run_here(run, problem, petsc_options, path, args.overwrite)


def _sweep(folder: Path, launched: bool) -> None:
    """Remove what killed writers left in the output folder, and say so (once, not per rank)."""
    removed = temporaries.sweep(folder)
    if removed and not launched:
        print(f"ksptrace: removed {len(removed)} temporary file(s) left in {folder} by killed "
              "runs", file=sys.stderr)


def _experiment(
    run: dict[str, Any], problem: dict[str, Any], petsc_options: tuple[str, ...], nprocs: int
) -> dict[str, Any]:
    """The trace attributes that say which experiment a run is (not how it was written)."""
    found = {k: run[k] for k in ("problem", "n", "ksp", "pc", "iterations", "warmup")}
    if run["restart"] is not None:
        found["restart"] = run["restart"]
    found["nprocs"] = nprocs
    found["petsc_options"] = shlex.join(petsc_options)
    found["problem_config"] = json.dumps(
        {k: v for k, v in problem.items() if v is not None}, sort_keys=True
    )
    return found


def _refuse_other_experiment(
    path: Path, run: dict[str, Any], problem: dict[str, Any], petsc_options: tuple[str, ...],
    nprocs: int,
) -> None:
    """An existing trace of a different experiment is not a rerun: say so, and what differs."""
    if not path.is_file():
        return
    try:
        from ksptrace.trace.read import attrs_of  # h5py: only when a trace is there

        stored: dict[str, Any] = attrs_of(path)  # either schema's layout, flat
    except TraceError:
        return  # not a readable trace: check_destination says it exists
    differ = []
    for key, wanted in _experiment(run, problem, petsc_options, nprocs).items():
        have: Any = stored.get(key)
        have = have.decode(errors="replace") if isinstance(have, bytes) else have
        have = have.item() if getattr(have, "size", 0) == 1 and hasattr(have, "item") else have
        if key == "restart" and have == 0:
            continue  # a type without restart: the trace records 0
        try:
            same = have is not None and type(wanted)(have) == wanted
        except (TypeError, ValueError):
            same = False
        if not same:
            differ.append(f"{key} {have!r} there, {wanted!r} here")
    if differ:
        raise UsageError(
            f"{path} holds a different experiment ({'; '.join(differ)}); this run is not a "
            "rerun of it: pick another --out or add a --tag"
        )


def _run_here(
    run: dict[str, Any],
    problem: dict[str, Any],
    petsc_options: tuple[str, ...],
    path: Path,
    overwrite: bool,
) -> int:
    from ksptrace.harness.config.settings import RunSettings
    from ksptrace.harness.runner.run import execute

    settings = RunSettings(
        out=path, overwrite=overwrite, problem_options=problem, petsc_options=petsc_options, **run
    )
    outcome = execute(settings)
    if outcome.rank == 0:
        stop = stop_reason(outcome.converged_reason, {"iterations": outcome.iterations_done})
        if stop == outcome.converged_reason:  # not the forced K: say PETSc's reason
            stop = f"{outcome.iterations_done} iterations, {stop}"
        print(f"wrote {outcome.path} ({run['ksp']}, {stop}, KSPSolve "
              f"{seconds(outcome.solve_max)})")
        if outcome.monitor_note is not None:
            print(f"ksptrace: note: {outcome.monitor_note}", file=sys.stderr)
        if outcome.events_note is not None:
            print(f"ksptrace: {outcome.events_note}")
        if outcome.foreign is not None and outcome.foreign.loaded:
            print(f"ksptrace: warning: {outcome.foreign.warning()}", file=sys.stderr)
    return 0


def child_arguments(
    run: dict[str, Any], problem: dict[str, Any], petsc_options: tuple[str, ...], path: Path,
    overwrite: bool,
) -> list[str]:
    """The ``ksptrace run`` arguments that reproduce these settings inside mpiexec."""
    out: list[str] = []
    declared = ((RUN_PARAMS, run), (CHECK_PARAMS, run),
                (registry.get(run["problem"]).params, problem))
    for params, values in declared:
        for p in params:
            value = values[p.name]
            if value is None:
                continue
            if p.type is bool:
                out.append(p.flag if value else "--no-" + p.flag[2:])
            else:
                out += [p.flag, str(value)]
    out += ["--out", str(path)]
    if overwrite:
        out.append("--overwrite")
    return [*out, *petsc_options]


def _launch(
    args: argparse.Namespace,
    run: dict[str, Any],
    problem: dict[str, Any],
    petsc_options: tuple[str, ...],
    path: Path,
) -> int:
    from ksptrace.harness.config.provenance import LAUNCH_ENV
    from ksptrace.harness.launching.launch import find_mpiexec, is_root
    from ksptrace.harness.launching.lifeline import Supervised
    from ksptrace.harness.petsc.petscenv import force_solver_env, locate_petsc4py

    env = dict(os.environ)
    locate_petsc4py(env)
    force_solver_env(env)
    mpi = find_mpiexec(args.mpiexec)
    flags = mpi.flags(args.np, os.cpu_count() or 1, is_root())
    program = [sys.executable, "-m", "ksptrace", "run",
               *child_arguments(run, problem, petsc_options, path, args.overwrite)]
    cmd = mpi.command(args.np, flags, program)
    env[LAUNCH_ENV] = json.dumps(
        {"launcher": f"mpiexec ({mpi.flavor})", "flags": flags,
         "command_line": shlex.join(["ksptrace", *sys.argv[1:]])}
    )
    supervised = Supervised()
    try:
        code, err = supervised.run(cmd, env, capture_stderr=True)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot start {mpi.path}: {exc.strerror}") from None
    if supervised.interrupted:
        print("ksptrace: interrupted; the solve was stopped and no trace was written",
              file=sys.stderr)
        return 130
    if code == 0:
        sys.stderr.write(err)
        return 0
    return _report_failure(code, err)


def _report_failure(code: int, stderr: str) -> int:
    """Print the one ksptrace error line of a failed MPI job (not the MPI library's banner)."""
    lines = [ln for ln in stderr.splitlines() if ln.startswith("ksptrace: error:")]
    if lines:
        print(re.sub(r" \[rank \d+\]$", "", lines[0]), file=sys.stderr)
    else:
        print(f"ksptrace: error: {failure_reason(code, stderr)}; no trace was written",
              file=sys.stderr)
    return code if 0 < code < 256 else 1


_NOTICED = re.compile(r"process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+)"
                      r"(?: \(([^)]*)\))?")
_BANNER = re.compile(r"^[-=*\s]*$")


def failure_reason(code: int, stderr: str) -> str:
    """Why an MPI job without a ksptrace error line failed: a rank killed by a signal (Open
    MPI's notice, or an exit code above 128), else the last line that is not a banner."""
    found = _NOTICED.search(stderr)
    if found:
        rank, node, number, name = found.groups()
        return (f"rank {rank} on {node} was killed by signal {number}"
                f"{f' ({name})' if name else ''}{_signal_hint(int(number))}")
    number = -code if code < 0 else code - 128 if code > 128 else 0
    if number:
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"mpiexec ended with exit {code}: a rank was killed by {name}" \
               f"{_signal_hint(number)}"
    tail = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not _BANNER.match(ln)]
    return f"mpiexec failed (exit {code}): {tail[-1] if tail else 'no output'}"


def _signal_hint(number: int) -> str:
    if number == signal.SIGKILL:
        return ": out of memory (the kernel's OOM killer) or stopped by another process"
    if number == signal.SIGSEGV:
        return ": a crash in the solver process"
    return ""
