"""Finding and starting petsc4py, the environment solver processes need, and what PETSc says.

Debian's petsc4py is found only when PETSC_DIR names its PETSc (there is no alternatives link),
so we look in the usual places before giving up with a message that says what to install.
petsc4py 3.18 wraps neither PETSc's list of unused options nor its error text in a message, so
:func:`unused_options` calls ``PetscOptionsLeftGet`` through ctypes and
:func:`petsc_error_text` reads the traceback petsc4py keeps on ``PETSc.Error``.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import re
import sys
import tempfile
from types import ModuleType

from ksptrace.errors import EnvironmentProblem, UsageError
from ksptrace.harness.launching.mpienv import without_mpi_runtime
from ksptrace.harness.petsc import petsc_compat

SOLVER_ENV: dict[str, str] = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
"""Forced for every solver process: threaded BLAS changes timings and even rounding."""

DEBIAN_PETSC_GLOB = "/usr/lib/petscdir/petsc3.*/x86_64-linux-gnu-real"


def force_solver_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """Set the single-thread variables in ``env`` (default: this process's environment)."""
    target = os.environ if env is None else env
    target.update(SOLVER_ENV)
    return dict(target)


def solver_job_env(**extra: str) -> dict[str, str]:
    """The environment for a new solver job from this process: no inherited MPI runtime
    identity, one thread, PETSC_DIR where petsc4py needs it, then ``extra``."""
    env = without_mpi_runtime()
    force_solver_env(env)
    locate_petsc4py(env)
    env.update(extra)
    return env


def petsc_dir_candidates() -> list[str]:
    found = []
    if os.environ.get("PETSC_DIR"):
        found.append(os.environ["PETSC_DIR"])
    found.extend(sorted(glob.glob(DEBIAN_PETSC_GLOB), reverse=True))
    return found


def locate_petsc4py(env: dict[str, str] | None = None) -> None:
    """Make ``import petsc4py`` work in this process, and set PETSC_DIR in ``env`` for children."""
    target = os.environ if env is None else env
    try:
        import petsc4py  # noqa: F401
    except ImportError:
        pass
    else:
        return
    for petsc_dir in petsc_dir_candidates():
        site = os.path.join(petsc_dir, "lib", "python3", "dist-packages")
        if os.path.isdir(os.path.join(site, "petsc4py")):
            if site not in sys.path:
                sys.path.append(site)
            target.setdefault("PETSC_DIR", petsc_dir)
            os.environ.setdefault("PETSC_DIR", petsc_dir)
            return
    raise EnvironmentProblem(
        "petsc4py is not importable; on Debian run 'make setup' (apt-get install python3-petsc4py "
        "python3-mpi4py python3-h5py-mpi openmpi-bin), elsewhere set PETSC_DIR or "
        "'pip install petsc petsc4py' (see docs/install.md)"
    )


def init_petsc(argv: list[str]) -> ModuleType:
    """Initialise petsc4py with the given PETSc options and return the PETSc module."""
    locate_petsc4py()
    import petsc4py

    program = sys.argv[0] if sys.argv and sys.argv[0][:1] not in ("", "-") else sys.executable
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)  # PETSc prints an initialisation error there, in C
        try:
            petsc4py.init([program, *argv])  # a program name such as '-c' would be an option
            from petsc4py import PETSc
        except Exception as exc:
            failed: BaseException | None = exc
        else:
            failed = None
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        printed = capture.read().decode(errors="replace")
    if failed is not None:
        if "PETSC ERROR:" not in printed and not petsc_compat.is_petsc_error(failed):
            # petsc4py itself could not be loaded: say what Python said, not "the options"
            reason = (str(failed).splitlines() or [""])[0] or type(failed).__name__
            raise EnvironmentProblem(
                f"petsc4py could not be loaded ({type(failed).__name__}: {reason}); it was "
                "built for another numpy or PETSc than this Python has: use the venv 'make "
                "setup' makes (Debian's numpy), or reinstall petsc4py for this numpy"
            )
        raise UsageError(
            f"PETSc did not start with these options ({_initialisation_error(printed)}); "
            "correct the PETSc options"
        )
    sys.stderr.write(printed)
    return PETSc


def _initialisation_error(printed: str) -> str:
    """PETSc's message lines from the error block it printed (between the banner line and the
    'See https://petsc.org' line)."""
    lines = [ln.split("PETSC ERROR:", 1)[1].strip() for ln in printed.splitlines()
             if "PETSC ERROR:" in ln]
    message = []
    for line in lines[1:]:
        if line.startswith(("See ", "#")):
            break
        message.append(line)
    return ": ".join(m for m in message if m) or "no message"


FINALIZE_OPTIONS: frozenset[str] = frozenset({
    "mpi_linear_solver_server", "citations", "textbelt", "tellmycell", "saw_options", "x_virtual",
    "malloc_info", "memory_view", "get_total_flops", "log_mpe", "log_summary", "log_all", "log",
    "no_signal_handler", "mpidump", "malloc_dump", "objects_dump", "options_view", "nox",
    "nox_warning", "options_left", "malloc_test", "malloc_debug", "malloc_view",
})
"""Options PETSc 3.18 reads only in PetscFinalize (src/sys/objects/pinit.c), that is after any
check ksptrace can make: never reported as unused."""

FINALIZE_BOOLS: frozenset[str] = frozenset({
    "saw_options", "x_virtual", "malloc_info", "memory_view", "get_total_flops",
    "no_signal_handler", "mpidump", "options_view", "options_left", "malloc_test", "malloc_debug",
})
"""Of those, the ones PetscFinalize reads as true/false: a bad value fails only at exit."""

FILE_OPTIONS: dict[str, str] = {
    "log_view": "viewer", "log_all": "file", "log_summary": "file", "citations": "file",
    "malloc_dump": "file", "malloc_view": "file",
}
"""Options whose file PETSc opens only at PetscFinalize, after the trace is published, with
how their value names it: a viewer spec ``[type][:file[:format[:mode]]]`` or a file name."""

_HELP_PREFIX = "ksptracehelp_"
_FRAME = re.compile(r"^(\w+)\(\) at \S+$")


def unused_options(petsc: ModuleType) -> list[str]:
    """Names (without the dash) of the options in PETSc's database that nothing queried.

    Not collective. Options PETSc reads only at finalize time (:data:`FINALIZE_OPTIONS`) are
    left out.
    """
    int_type = ctypes.c_int64 if petsc.IntType().itemsize == 8 else ctypes.c_int32
    try:
        lib = ctypes.CDLL(petsc.__file__)  # resolves libpetsc's symbols through its dependencies
        left_get, left_restore = lib.PetscOptionsLeftGet, lib.PetscOptionsLeftRestore
    except (OSError, AttributeError) as exc:
        raise EnvironmentProblem(
            f"cannot ask PETSc which options were used ({exc}); pass --allow-unused-options "
            "to run without this check"
        ) from None
    count = int_type(0)
    names = ctypes.POINTER(ctypes.c_char_p)()
    if left_get(None, ctypes.byref(count), ctypes.byref(names), None) != 0:
        raise EnvironmentProblem(
            "PetscOptionsLeftGet failed; pass --allow-unused-options to run without this check"
        )
    try:
        found = [names[i].decode(errors="replace") for i in range(count.value)]
    finally:
        left_restore(None, ctypes.byref(count), ctypes.byref(names), None)
    return sorted(name for name in found if name not in FINALIZE_OPTIONS)


def _flush_stdout() -> None:
    """What PETSc printed (its help) goes to descriptor 1 now, not later, when it would reach
    the terminal instead of a capture: petsc4py prints through Python's ``sys.stdout``, a C
    program through C's stdio buffers."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stdout.flush()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).fflush(None)


def known_option_names(
    petsc: ModuleType, ksp_type: str, pc_type: str, prefix: str = ""
) -> list[str]:
    """Every option (without the dash) that a KSP of these types, its PC and PETSc read.

    PETSc has no list of option names; its ``-help`` output has them. This sets ``-help`` for
    a moment, configures a scratch KSP of the same types on COMM_SELF under a private prefix
    (so that PETSc has not printed its help before) and reads what PETSc printed on stdout.
    Only meant for error messages: it is slow (a few ms) and prints nothing.
    """
    options = petsc.Options()
    had_help = options.hasName("help")
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 1)
        scratch = petsc.KSP().create(comm=petsc.COMM_SELF)
        try:
            options.setValue("-help", None)
            scratch.setOptionsPrefix(_HELP_PREFIX + prefix)
            scratch.setType(ksp_type)
            scratch.getPC().setType(pc_type)
            scratch.setFromOptions()
        except petsc.Error:
            pass
        finally:
            scratch.destroy()
            if not had_help:
                options.delValue("-help")
            _flush_stdout()
            os.dup2(saved, 1)
            os.close(saved)
        capture.seek(0)
        text = capture.read().decode(errors="replace")
    names = set(re.findall(rf"^\s*-{_HELP_PREFIX}(\w+)", text, re.MULTILINE))
    names |= set(options.getAll()) | FINALIZE_OPTIONS | set(FILE_OPTIONS)
    return sorted(names)


def petsc_error_text(exc: BaseException) -> str:
    """PETSc's own one-line account of a ``PETSc.Error``: the code, the innermost function and
    PETSc's message (petsc4py keeps them as a traceback list; ``str()`` shows only the code on
    its first line)."""
    code = getattr(exc, "ierr", None)
    entries = petsc_compat.error_traceback(exc)
    frames = [m.group(1) for e in entries if (m := _FRAME.match(e))]
    messages = [e.strip() for e in entries if not _FRAME.match(e) and e.strip()]
    where = f" in {frames[-1]}()" if frames else ""
    what = ": " + ": ".join(messages) if messages else ""
    return f"PETSc error {code}{where}{what}"


def file_option_problem(name: str, value: str | None) -> str | None:
    """Why the file that option ``-name value`` names cannot be written, or None when it can
    (or names none). Pure apart from looking at the file system."""
    kind = FILE_OPTIONS.get(name)
    if kind is None or not value:
        return None
    target = value.split(":")[1] if kind == "viewer" and ":" in value else value
    if kind == "viewer" and ":" not in value:
        return None  # -log_view ascii: standard output
    if not target:
        return None
    path = os.path.abspath(target)
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        return f"-{name} {value}: folder {folder} does not exist; create it or pick another file"
    if os.path.isdir(path):
        return f"-{name} {value}: {path} is a folder; give a file name"
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return f"-{name} {value}: {path} is not writable; pick another file"
    if not os.path.exists(path) and not os.access(folder, os.W_OK | os.X_OK):
        return f"-{name} {value}: folder {folder} is not writable; pick another file"
    return None


def finalize_value_problem(petsc: ModuleType, name: str) -> str | None:
    """Why PetscFinalize would fail on option ``-name`` (a value that is not true/false for an
    option it reads as one), or None. Not collective; marks the option used."""
    if name not in FINALIZE_BOOLS:
        return None
    try:
        petsc.Options().getBool(name)
    except petsc.Error as exc:
        return f"-{name}: {petsc_error_text(exc)}"
    return None
