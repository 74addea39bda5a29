"""How the solve hook reaches every process of a user's command: the environment, passed on by
the launcher, and a check that the program can be reached at all.

The hook rides on ``LD_PRELOAD`` (in front of any the user set) with its settings in
``KSPTRACE_HOOK_*`` variables. A launcher that starts ranks on other nodes passes variables
only when told: Open MPI with ``-x NAME``, MPICH's Hydra with ``-genv NAME VALUE``, Slurm's
``srun`` with ``--export=ALL,NAME=VALUE``; the flags go right after the launcher's name. A
bare program just inherits the environment.

A statically linked executable has no dynamic loader, so ``LD_PRELOAD`` never reaches it:
:func:`static_program` finds one in the command before anything runs.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

from ksptrace.errors import UsageError
from ksptrace.harness.launching import launch

HOOK_VARIABLES = ("LD_PRELOAD", "KSPTRACE_HOOK_DIR", "KSPTRACE_HOOK_DEPTH",
                  "KSPTRACE_HOOK_PREFIX", "KSPTRACE_HOOK_SETUP", "KSPTRACE_HOOK_WAITS",
                  "KSPTRACE_HOOK_EVENTS")
MPIEXEC_NAMES = ("mpiexec", "mpirun", "orterun", "mpiexec.openmpi", "mpirun.openmpi",
                 "mpiexec.hydra", "mpiexec.mpich", "mpirun.mpich")
_PT_INTERP, _PT_DYNAMIC = 3, 2
SHELLS = ("sh", "bash", "dash", "zsh", "ksh", "mksh")
NAME_CHARS = 64
"""The longest program name a trace's file name takes (a file name holds 255 bytes)."""


@dataclass(frozen=True)
class Launch:
    """The command to run and its launcher ('openmpi', 'mpich', 'srun' or 'none')."""

    argv: tuple[str, ...]
    launcher: str


def _start(argv: list[str]) -> int:
    """Where the command proper starts: after ``env NAME=VALUE ...`` (as PBS's job scripts
    start Open MPI's mpiexec), else 0."""
    if not argv or os.path.basename(argv[0]) != "env":
        return 0
    i = 1
    while i < len(argv) - 1 and "=" in argv[i] and not argv[i].startswith("-"):
        i += 1
    return i


def launcher_of(argv: list[str]) -> str:
    """'openmpi', 'mpich', 'srun' or 'none' for the command ``argv`` (after any leading
    ``env NAME=VALUE ...``)."""
    argv = argv[_start(argv):]
    name = os.path.basename(argv[0])
    if name == "srun":
        return "srun"
    if name in MPIEXEC_NAMES:
        found = shutil.which(argv[0])
        real = os.path.basename(os.path.realpath(found)) if found else name
        if "openmpi" in real or real == "orterun":  # Debian's alternatives say it by name
            return "openmpi"
        if "mpich" in real or "hydra" in real:
            return "mpich"
        flavor = launch.find_mpiexec(argv[0]).flavor  # runs `mpiexec --version`
        if flavor == "unknown":
            raise UsageError(f"cannot tell which MPI {argv[0]} belongs to (Open MPI or "
                             "MPICH); run it with --version to check your installation")
        return flavor
    return "none"


def with_hook(argv: list[str], launcher: str, env: dict[str, str]) -> Launch:
    """``argv`` with the launcher flags that pass the hook's variables in ``env`` on."""
    names = [n for n in HOOK_VARIABLES if n in env]
    k = _start(argv)
    head, rest = argv[:k + 1], argv[k + 1:]
    if launcher == "openmpi":
        flags = [w for n in names for w in ("-x", n)]
    elif launcher == "mpich":
        flags = [w for n in names for w in ("-genv", n, env[n])]
    elif launcher == "srun":
        if any(a.startswith("--export") for a in rest):
            raise UsageError("the command sets srun --export itself; remove it (ksptrace trace "
                             "passes the whole environment with --export=ALL,...)")
        if "," in env.get("KSPTRACE_HOOK_PREFIX", ""):
            raise UsageError(f"--ksp-prefix {env['KSPTRACE_HOOK_PREFIX']!r} contains a comma, "
                             "which srun --export cannot pass on; give one options prefix, "
                             "without a comma")
        if any("," in env[n] for n in names):
            raise UsageError("a path of the hook contains a comma, which srun --export cannot "
                             "pass; set KSPTRACE_CACHE_DIR and TMPDIR to paths without one")
        flags = ["--export=ALL," + ",".join(f"{n}={env[n]}" for n in names)]
    else:
        flags = []
    return Launch(tuple(head + flags + rest), launcher)


def _is_static_elf(path: Path) -> bool | None:
    """True for a static ELF executable, False for a dynamic one, None when not ELF."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return None  # only 64-bit little-endian ELF is checked
            phoff, = struct.unpack_from("<Q", head, 32)
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except (OSError, struct.error, IndexError):
        return None
    kinds = {struct.unpack_from("<I", table, i * phentsize)[0] for i in range(phnum)
             if len(table) >= (i + 1) * phentsize}
    return _PT_INTERP not in kinds and _PT_DYNAMIC not in kinds


def _as_file(word: str) -> Path | None:
    if "/" in word:
        path = Path(word)
    else:
        found = shutil.which(word)
        path = Path(found) if found else Path(word)
    return path if path.is_file() else None


LAUNCHER_VALUES = {
    **dict.fromkeys(("-n", "-np", "--n", "--np", "-c", "-N", "-H", "-host", "--host",
                     "-hostfile", "--hostfile", "-machinefile", "--machinefile", "-f", "-x",
                     "-wdir", "--wdir", "-wd", "-ppn", "-npernode", "--npernode",
                     "--map-by", "--bind-to", "--rank-by", "-configfile", "-iface",
                     "-bootstrap", "-launcher", "--prefix", "-prefix", "--rankfile",
                     "-rf", "--output-filename", "--tmpdir"), 1),
    **dict.fromkeys(("-genv", "-env", "--mca", "-mca", "-gmca", "--gmca"), 2),
}
"""Launcher options and how many words of value follow them (Open MPI, MPICH's Hydra): a
value is never the program, though it may name a file (``-hostfile $PBS_NODEFILE``)."""


def program_of(argv: list[str], launcher: str) -> Path | None:
    """The program the command runs, or None: after the launcher and its options (their
    values skipped, :data:`LAUNCHER_VALUES`), the first existing executable file, the script
    after an interpreter such as python, or the program of a shell's ``-c`` command (issue 66:
    a PBS node file given to ``-hostfile`` was taken for the program, and named every trace)."""
    found = None
    k = _start(argv)
    words = argv[k + 1:] if launcher != "none" else argv[k:]
    skip = 0
    for i, word in enumerate(words):
        if skip:
            skip -= 1
            continue
        if word.startswith("-"):
            skip = LAUNCHER_VALUES.get(word, 0) if found is None else 0
            continue
        path = _as_file(word)
        if path is None or (found is None and not os.access(path, os.X_OK)):
            continue  # a file an unknown option names, not a program
        if path.name in SHELLS and words[i + 1:i + 2] == ["-c"] and len(words) > i + 2:
            return _in_shell_command(words[i + 2]) or path
        if found is not None or not re.match(r"(python|pypy)[0-9.]*$", path.name):
            return path
        found = path
    return found


def _in_shell_command(text: str) -> Path | None:
    """The program of a shell's ``-c`` command: its first simple command's, after ``exec``,
    ``env`` and a launcher (told by name: nothing is run)."""
    try:
        words = shlex.split(text.split(";")[0].split("&&")[0])
    except ValueError:
        return None
    while words and words[0] == "exec":
        words = words[1:]
    if not words:
        return None
    head = os.path.basename(words[_start(words)]) if _start(words) < len(words) else ""
    launched = head in MPIEXEC_NAMES or head == "srun"
    return program_of(words, "mpi" if launched else "none")


def file_name_part(name: str) -> str:
    """``name`` as it may stand in a trace's file name: letters, digits, ``.``, ``_``, ``+`` and
    ``-`` (any other character, a newline or a slash among them, becomes ``_``), no leading dot
    or dash, at most :data:`NAME_CHARS` characters; ``program`` when nothing is left."""
    clean = re.sub(r"[^A-Za-z0-9._+-]", "_", name).lstrip(".-")[:NAME_CHARS]
    return clean or "program"


def static_program(argv: list[str], launcher: str) -> Path | None:
    """A statically linked executable in the command, or None."""
    k = _start(argv)
    for word in argv[k + 1:] if launcher != "none" else argv[k:]:
        path = None if word.startswith("-") else _as_file(word)
        if path is not None and _is_static_elf(path):
            return path
    return None
