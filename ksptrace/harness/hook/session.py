"""``ksptrace trace``: run a user's command with the solve hook and write its traces.

The hook library is built (or found verified) first; the command runs with it preloaded and
its settings in the environment, passed on by the launcher; each process writes its raw
records into a private folder (mode 0700) made inside the output folder, which a multi-node
run shares. After the command exits, the records are assembled into ordinary ksptrace traces
(:mod:`ksptrace.harness.hook.assemble`), every one is written to a temporary file, and only
when all are written are they published, each by an atomic rename. The private folder is
removed whatever happens: by ``trace`` itself, or, when ``trace`` is killed, by its guard
(:mod:`ksptrace.harness.hook.guard`), which also ends what is left of the command.

MPI wait accounting (:mod:`ksptrace.harness.monitoring.mpiwait`, ``KSPTRACE_MPI_WAITS``) is on as in
``ksptrace run``: the interposer is built (or found verified) here and its path handed to the
hook, which loads it into each process (``waits.c``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import platform
import re
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ksptrace.errors import EnvironmentProblem, OutputError, SolverError, TraceError, UsageError
from ksptrace.harness.config.provenance import PROVENANCE_ENV
from ksptrace.harness.hook import build, inject, records, safety, surroundings
from ksptrace.harness.hook.assemble import Assembled, assemble, wait_attributes
from ksptrace.harness.hook.guard import Guard
from ksptrace.harness.launching.lifeline import Supervised
from ksptrace.harness.monitoring import mpiwait
from ksptrace.trace import publish, write
from ksptrace.trace.model import AttrValue
from ksptrace.trace.temporaries import temp_path_for
from ksptrace.version import __version__


@dataclass(frozen=True)
class Selection:
    """Which solves are recorded (see ``solve_hook.c``)."""

    depth: int | None = None
    prefix: str | None = None
    with_setup: bool = False
    events: bool = False
    """Also time PETSc's MatMult, PCApply and vector reductions (``--events``)."""

    def env(self) -> dict[str, str]:
        env = {"KSPTRACE_HOOK_SETUP": "1" if self.with_setup else "0"}
        if self.events:
            env["KSPTRACE_HOOK_EVENTS"] = "1"
        if self.depth is not None:
            env["KSPTRACE_HOOK_DEPTH"] = str(self.depth)
        if self.prefix is not None:
            env["KSPTRACE_HOOK_PREFIX"] = self.prefix
        return env


@dataclass(frozen=True)
class Outcome:
    """What ``trace`` did: the traces written, what was left out, and the command's status."""

    paths: tuple[Path, ...]
    assembled: Assembled | None
    returncode: int
    prefixes: tuple[str, ...] = ()
    """The options prefixes of the KSPs the program solved with ('' for none)."""
    notes: tuple[str, ...] = ()
    """What to tell the user beside the hook's notes (the machine's load)."""


def nothing_traced(outcome: Outcome, prefix: str | None) -> str:
    """Why a run that exited cleanly left no trace, in one sentence: a ``--ksp-prefix`` that
    selects no KSP, else each kind of solve left out and why."""
    if prefix is not None and prefix not in outcome.prefixes:
        seen = ", ".join(repr(p) for p in outcome.prefixes) or "none"
        return (f"no KSP has the options prefix {prefix!r} (the program's KSPs have {seen}); "
                "give --ksp-prefix one of those")
    left = outcome.assembled.left_out if outcome.assembled is not None else ()
    return "no solve had an iteration to trace (" + ("; ".join(left) or "none was selected") + ")"


def _petsc_version(text: str) -> str:
    found = re.search(r"(\d+\.\d+\.\d+)", text)
    return found.group(1) if found else text.strip()


def _attrs(argv: list[str], cmd: inject.Launch, files: list[records.RankFile], program: str,
           start: str, load: float | None) -> dict[str, AttrValue]:
    head = files[0]
    attrs: dict[str, AttrValue | None] = {
        "problem": program, "recorded": True, "generator": "ksptrace trace",
        "monitor": "c-hook", "noise": "none", "warmup": False, "restart": 0,
        "problem_config": "{}", "petsc_options": os.environ.get("PETSC_OPTIONS", ""),
        "solve_time_source": "the hook's MPI_Wtime around KSPSolve, less the KSPSetUp and "
                             "PCSetUp before its first iteration",
        "command_line": shlex.join(argv), "argv": shlex.join(sys.argv),
        "launcher": cmd.launcher,
        "launcher_flags": shlex.join(cmd.argv[1:len(cmd.argv) - len(argv) + 1]),
        "petsc_version": _petsc_version(head.petsc_version),
        "petsc_library": head.petsc_library,
        "petsc_dir": surroundings.petsc_dir_of(head.petsc_library, os.environ.get("PETSC_DIR")),
        "petsc_int_bytes": head.int_bytes, "petsc_real_bytes": head.real_bytes,
        "mpi_library": "Open MPI" if head.open_mpi else "MPICH (or an MPICH ABI library)",
        "cpu_count": os.cpu_count() or 0, "start_utc": start, "loadavg_before": load,
        "ksptrace_version": __version__, "python_version": platform.python_version(),
        "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS", ""),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS", ""),
    }
    for env, key in PROVENANCE_ENV.items():  # a campaign's run: its campaign, run id, job
        if os.environ.get(env):
            attrs[key] = os.environ[env]
    return {k: v for k, v in attrs.items() if v is not None}


def _wait_library(events: bool) -> tuple[dict[str, str], str | None]:
    """The hook's environment for MPI wait accounting, and why there is none (None: asked)."""
    wanted = mpiwait.mode()
    if wanted == "off":
        if events:
            raise EnvironmentProblem(f"--events needs the MPI interposer, which "
                                     f"{mpiwait.WAITS_ENV}=off turns off; unset "
                                     f"{mpiwait.WAITS_ENV} or drop --events")
        return {}, f"{mpiwait.WAITS_ENV}=off"
    found = mpiwait.load()
    if isinstance(found, str):
        if wanted == "on" or events:
            raise EnvironmentProblem(f"{mpiwait.WAITS_ENV}=on but MPI waits cannot be timed: "
                                     f"{found}; unset {mpiwait.WAITS_ENV} to trace without them")
        return {}, found
    return {"KSPTRACE_HOOK_WAITS": str(found[1])}, None


def _waits_refused(files: list[records.RankFile], events: bool) -> None:
    """With ``KSPTRACE_MPI_WAITS=on``, an EnvironmentProblem unless every process timed them;
    with ``--events``, unless every process timed PETSc's events."""
    for f in files:
        if events and f.spans is None:
            why = "no record" if f.waits is None else f.waits.why_not()
            raise EnvironmentProblem(f"--events but rank {f.rank} timed no PETSc event ({why});"
                                     " no trace written; trace without --events")
    if mpiwait.mode() != "on":
        return
    for f in files:
        if f.waits is None or not f.waits.installed:
            why = "no record" if f.waits is None else f.waits.why_not()
            raise EnvironmentProblem(f"{mpiwait.WAITS_ENV}=on but rank {f.rank} timed no MPI "
                                     f"wait ({why}); no trace written; unset "
                                     f"{mpiwait.WAITS_ENV} to trace without them")


def _names(out: Path, program: str, start: str, assembled: Assembled) -> list[Path]:
    """A fresh file name for each trace: program, start time, and which KSP."""
    stamp = start.replace(":", "").replace("-", "").split("+")[0]
    for attempt in range(1, 1000):
        suffix = "" if attempt == 1 else f"-{attempt}"
        paths = [out / "-".join(p for p in (program, stamp + suffix, name) if p) for name, _ in
                 assembled.traces]
        paths = [p.with_name(p.name + ".h5") for p in paths]
        if not any(p.exists() for p in paths):
            return paths
    raise OutputError(f"{out} already holds traces of {program} started at {start}; use "
                      "another --out folder")


def _write_all(paths: list[Path], assembled: Assembled) -> None:
    """Every trace to a temporary file, then each published: none on a failure."""
    temps: list[Path] = []
    try:
        for path, (_, trace) in zip(paths, assembled.traces, strict=True):
            tmp = temp_path_for(path)
            temps.append(tmp)
            write.write_file(tmp, trace)
        for tmp, path in zip(temps, paths, strict=True):
            publish.publish(tmp, path, False)
    except BaseException:
        for tmp in temps:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        raise


def run(argv: list[str], out: Path, selection: Selection) -> Outcome:
    """Run ``argv`` with the hook and write its traces into ``out``."""
    if not argv:
        raise UsageError("no command to trace; give it after --, e.g. ksptrace trace -- "
                         "mpiexec -n 2 ./ex2")
    launcher = inject.launcher_of(argv)
    static = inject.static_program(argv, launcher)
    if static is not None:
        raise UsageError(f"{static} is statically linked, so LD_PRELOAD cannot reach it; "
                         "link it against a shared libpetsc to trace it")
    lib = build.library()
    waits_env, waits_off = _wait_library(selection.events)
    made = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        safety.trust_out(out, made)
        raw = Path(tempfile.mkdtemp(prefix=".ksptrace-hook-", dir=out))
        raw_id = safety.folder_id(raw)
    except OSError as exc:
        raise OutputError(f"cannot make a folder in {out}: {exc.strerror or exc}; give "
                          "--out a folder you can write") from None
    guard = Guard(raw, out, made)
    copy = None
    try:
        env = dict(os.environ, **guard.env)
        for name in ("KSPTRACE_HOOK_WAITS", "KSPTRACE_HOOK_EVENTS"):
            env.pop(name, None)  # only the interposer built here, and events when asked
        copy = safety.preload_path(lib, raw)
        preload = " ".join(p for p in (str(copy), env.get("LD_PRELOAD", "")) if p)
        env.update(LD_PRELOAD=preload, KSPTRACE_HOOK_DIR=str(raw), **selection.env(),
                   **waits_env)
        cmd = inject.with_hook(argv, launcher, env)
        start = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        window = surroundings.LoadWindow.begin()
        supervised = Supervised()
        try:
            code, _ = supervised.run(list(cmd.argv), env)
        except OSError as exc:
            raise UsageError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
        foreign = window.end()
        if supervised.interrupted:
            return Outcome((), None, 130)
        safety.check_raw(raw, raw_id)
        if code != 0:
            return Outcome((), None, code)
        files = records.read_folder(raw)
        if not files:
            raise SolverError("the command ran no KSPSolve that the hook could see: it uses no "
                              "PETSc, or links PETSc statically (into the program or a static "
                              "libpetsc.a); link a shared libpetsc to trace it")
        broken = [f.path for f in files if not f.complete]
        if broken:
            raise TraceError(f"{len(broken)} processes did not finish their records "
                             f"({', '.join(broken[:3])}): killed or crashed; no trace written")
        program = inject.program_of(argv, launcher)
        name = inject.file_name_part(program.stem if program is not None else Path(argv[0]).stem)
        contamination, said = surroundings.load_attrs(foreign, cmd.launcher,
                                                      tuple(f.hostname for f in files))
        notes = () if said is None else (said,)
        _waits_refused(files, selection.events)
        attrs = _attrs(argv, cmd, files, name, start, load)
        assembled = assemble(files, {**attrs, **contamination,
                                     **wait_attributes(files, waits_off)})
        prefixes = tuple(sorted({k.prefix for f in files for k in f.ksps}
                                | {s.prefix for f in files for s in f.solves}))
        if not assembled.traces:
            return Outcome((), assembled, 0, prefixes, notes)
        paths = _names(out, name, start, assembled)
        try:
            _write_all(paths, assembled)
        except OSError as exc:
            raise OutputError(publish.describe_write_error(exc, out, 0)) from None
        return Outcome(tuple(paths), assembled, 0, prefixes, notes)
    finally:
        guard.release()
        shutil.rmtree(raw, ignore_errors=True)
        if copy is not None and copy.parent != raw and copy != lib:
            shutil.rmtree(copy.parent, ignore_errors=True)
        if made:
            with contextlib.suppress(OSError):
                out.rmdir()  # only when empty: a folder made here that holds no trace
