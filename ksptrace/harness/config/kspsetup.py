"""The solver of one run, set and checked before the timed solve: the KSP and PC types (typos
get the nearest names), forced K iterations (no convergence test, divergence tolerance out of
reach), the GMRES restart, and PETSc options nobody used.
"""

from __future__ import annotations

import difflib
from typing import Any

import numpy as np

from ksptrace.errors import KsptraceError, SolverError, UsageError
from ksptrace.harness.config.settings import RunSettings
from ksptrace.harness.launching.mpienv import agree_on_error
from ksptrace.harness.monitoring.monitor import StampMonitor
from ksptrace.harness.petsc.petscenv import (
    file_option_problem,
    finalize_value_problem,
    known_option_names,
    petsc_error_text,
    unused_options,
)
from ksptrace.params import nearest
from ksptrace.trace import publish

GMRES_FAMILY = frozenset({"gmres", "pgmres", "fgmres", "lgmres", "dgmres", "pipefgmres"})


PETSC_DEFAULT_RESTART = 30


DIVTOL_FORCED = 1e300
"""Divergence tolerance for forced runs: never stop because the residual grew."""


UNTRACEABLE_KSP: dict[str, str] = {
    "preonly": "applies the preconditioner once and has no Krylov iterations to force",
    "none": "applies the preconditioner once and has no Krylov iterations to force",
    "python": "runs a Python KSP implementation (-ksp_python_type) that ksptrace cannot supply",
    "fetidp": "needs a MATIS operator (FETI-DP substructuring); ksptrace's problems assemble AIJ",
    "tsirm": "needs -pc_type ksp: its iterations are inner KSP solves, not Krylov iterations",
}
"""KSP types that can never be forced to K timed iterations, and why."""


EXTRA_ITERATIONS: dict[str, int] = {"qcg": 1}
"""Types that run max_it + n iterations (qcg: ``for (i = 0; i <= maxit; i++)`` in PETSc 3.18);
ksptrace asks them for K - n so that they run K."""


TRACE_HINTS: dict[str, str] = {
    "bcgsl": "or -ksp_bcgsl_ell 1, with which bcgsl (BiCGStab(1)) reports every iteration",
}
"""What makes a type that the monitor cannot follow traceable after all."""


def _type_names(cls: Any) -> set[str]:
    return {v for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, str)}


def reason_name(cls: Any, value: int) -> str:
    names = [k for k, v in vars(cls).items() if not k.startswith("_") and v == value]
    names.sort(key=lambda k: (k in ("ITERATING",), len(k)))
    return names[0] if names else str(value)


def _unknown_type(kind: str, name: str, valid: set[str]) -> UsageError:
    near = nearest(name, valid)
    hint = f"did you mean '{near}'? " if near else ""
    listed = ", ".join(sorted(valid))
    return UsageError(f"unknown {kind} type '{name}'; {hint}valid types: {listed}")


def validate(settings: RunSettings, petsc: Any, nprocs: int, rank: int) -> None:
    ksp_types = _type_names(petsc.KSP.Type)
    if settings.ksp not in ksp_types:
        raise _unknown_type("KSP", settings.ksp, ksp_types)
    pc_types = _type_names(petsc.PC.Type)
    if settings.pc not in pc_types:
        raise _unknown_type("PC", settings.pc, pc_types)
    if settings.ksp in UNTRACEABLE_KSP:
        raise UsageError(
            f"KSP type '{settings.ksp}' cannot be traced: it {UNTRACEABLE_KSP[settings.ksp]}; "
            "use a Krylov method such as gmres, cg or bcgs"
        )
    if settings.n < nprocs:
        raise UsageError(f"n = {settings.n} is smaller than P = {nprocs}; use n >= P")
    options = petsc.Options()
    for name, value in options.getAll().items():
        problem = file_option_problem(name, value) or finalize_value_problem(petsc, name)
        if problem is not None:
            options.delValue(f"-{name}")  # or PetscFinalize fails on it once more
            raise UsageError(f"{problem} (PETSc uses it at exit, after the trace is written)")
    if rank == 0:
        publish.check_destination(settings.out, settings.overwrite)


def effective_restart(settings: RunSettings, petsc: Any, ksp: Any) -> int:
    if ksp.getType() not in GMRES_FAMILY:
        return 0
    prefix = ksp.getOptionsPrefix() or ""
    default = settings.restart or PETSC_DEFAULT_RESTART
    return int(petsc.Options().getInt(f"{prefix}ksp_gmres_restart", default))


def configure(settings: RunSettings, petsc: Any, instance: Any, mpicomm: Any) -> Any:
    """Code defaults on the problem's KSP, then the user's PETSc options; refuse options that
    contradict --ksp or --pc (the trace and its file name must say what ran)."""
    ksp = instance.ksp
    try:
        ksp.setType(settings.ksp)
        ksp.getPC().setType(settings.pc)
    except petsc.Error as exc:
        raise UsageError(
            f"KSP '{settings.ksp}' with PC '{settings.pc}' is not available in this PETSc "
            f"build ({petsc_error_text(exc)}); pick another type"
        ) from None
    max_it = max(settings.iterations - EXTRA_ITERATIONS.get(settings.ksp, 0), 0)
    ksp.setTolerances(rtol=0.0, atol=0.0, divtol=DIVTOL_FORCED, max_it=max_it)
    if settings.restart is not None:
        ksp.setGMRESRestart(settings.restart)
    instance.set_from_options()
    error: KsptraceError | None = None
    prefix = ksp.getOptionsPrefix() or ""
    for kind, wanted, got, flag in (("KSP", settings.ksp, ksp.getType(), "--ksp"),
                                    ("PC", settings.pc, ksp.getPC().getType(), "--pc")):
        if got != wanted:
            option = f"-{prefix}{kind.lower()}_type"
            error = UsageError(
                f"the PETSc options make the {kind} {got} but {flag} is {wanted}; "
                f"give the type once, with {flag} {got}, and drop {option}"
            )
            break
    agree_on_error(mpicomm, error)
    return ksp


def check_iterations(settings: RunSettings, petsc: Any, ksp: Any, monitor: StampMonitor) -> str:
    """Raise a SolverError unless the monitor saw exactly iterations 0..K; returns the reason.

    Pipelined CG-type methods (pipecg, pipecr, pipecgrr, pipeprcg, ibcgs) count one more
    iteration than they report: their last pass reports iteration K, then updates the solution
    once more. The trace holds what the monitor reported, as PETSc's -ksp_monitor numbers it.
    """
    done = int(ksp.getIterationNumber())
    code = int(ksp.getConvergedReason())
    reason = reason_name(petsc.KSP.ConvergedReason, code)
    stopped = SolverError(
        f"{settings.ksp} stopped after {done} of {settings.iterations} iterations "
        f"({reason}); {_why_stopped(settings, code, reason, monitor)}"
    )
    try:
        monitor.check(settings.ksp, min(done, settings.iterations))
    except SolverError as exc:
        # a stop before K whose only gap is the last iteration (a breakdown is not monitored)
        # is the cause; a method that skips iterations all along is the monitor's problem
        if done < settings.iterations and np.isfinite(monitor.stamps[:done]).all():
            raise stopped from None
        hint = TRACE_HINTS.get(settings.ksp)
        if hint is None:
            raise
        raise SolverError(f"{exc}, {hint}") from None
    if done < settings.iterations:
        raise stopped
    return reason


def _why_stopped(settings: RunSettings, code: int, reason: str, monitor: StampMonitor) -> str:
    """What to do about a forced run that stopped early, from PETSc's reason and how far the
    residual fell (the monitor's norms)."""
    if code > 0:
        return "a forced run must not converge: use a larger n or fewer iterations"
    if reason in ("DIVERGED_ITS", "DIVERGED_MAX_IT"):
        return "its iteration limit was lower: remove -ksp_max_it from the PETSc options"
    norms = monitor.norms[np.isfinite(monitor.norms)]
    seen = int(np.flatnonzero(np.isfinite(monitor.norms))[-1]) if norms.size else 0
    if norms.size >= 2 and norms[0] > 0 and norms[-1] / norms[0] < 1e-10:
        fell = norms[-1] / norms[0]
        return (f"the residual fell to {fell:.0e} of its start by iteration {seen} (the solve "
                f"was done to machine precision), then {settings.ksp} broke down: use "
                f"--iterations {max(1, seen // 2)} or fewer, or a larger --n")
    return (f"{settings.ksp} broke down on this problem and cannot be forced to "
            f"{settings.iterations} iterations: use fewer iterations or another KSP or PC")


def check_unused(
    settings: RunSettings, petsc: Any, mpicomm: Any, ksp_types: tuple[str, str, str]
) -> list[str]:
    """Collective: the options no rank used; refuses them unless --allow-unused-options."""
    found = mpicomm.allgather(unused_options(petsc))
    unused = sorted(set(found[0]).intersection(*found[1:]))
    error: KsptraceError | None = None
    if unused and not settings.allow_unused_options and mpicomm.Get_rank() == 0:
        known = [n for n in known_option_names(petsc, *ksp_types) if n not in unused]
        named = []
        for name in unused:
            near = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
            named.append(f"-{name}" + (f" (did you mean -{near[0]}?)" if near else ""))
        error = UsageError(
            f"PETSc never used {', '.join(named)}; no trace written: correct or remove "
            f"{'it' if len(unused) == 1 else 'them'}, or pass --allow-unused-options to record "
            "unused options in the trace"
        )
    agree_on_error(mpicomm, error)
    return unused
