"""What surrounds a traced run: the PETSc installation the program loaded, and the load other
processes put on the machine while it ran.

The PETSc folder is named only when the loaded library sits in one (``<dir>/lib`` beside
``<dir>/lib/petsc/conf/petscvariables`` or ``<dir>/include/petscversion.h``), as found from the
path the program loaded it by, its real path, or ``$PETSC_DIR`` when a library there is the same
file; a library loaded from the system folder (``/lib/x86_64-linux-gnu``) names none rather than
``/lib``.

The load is measured as ``ksptrace run`` measures it (:mod:`ksptrace.harness.monitoring.cpuload`),
over the whole command: the machine's busy CPU time from ``/proc/stat`` less the CPU time of the
command's process tree (``getrusage`` of this process and of its children, which ``mpiexec`` waits
for) and of this process. It holds only for ranks that ran on this node as its descendants: under
``srun`` (ranks are slurmstepd's children) or on other nodes nothing is measured, and said so.
"""

from __future__ import annotations

import os
import resource
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from ksptrace.harness.monitoring import cpuload

_MARKS = ("lib/petsc/conf/petscvariables", "include/petscversion.h")


def _installation(lib_dir: Path) -> Path | None:
    root = lib_dir.parent
    if lib_dir.name == "lib" and any((root / m).is_file() for m in _MARKS):
        return root
    return None


def petsc_dir_of(library: str, env_dir: str | None) -> str | None:
    """The PETSc installation folder holding ``library`` (as loaded), or None."""
    if not library:
        return None
    path = Path(library)
    for candidate in (path.parent, Path(os.path.realpath(path)).parent):
        found = _installation(candidate)
        if found is not None:
            return str(found)
    if env_dir:
        real = os.path.realpath(path)
        lib_dir = Path(env_dir) / "lib"
        try:
            same = any(os.path.realpath(p) == real for p in lib_dir.glob("libpetsc*.so*"))
        except OSError:
            same = False
        if same and _installation(lib_dir) is not None:
            return str(Path(env_dir))
    return None


def _sample() -> cpuload.Sample:
    own = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        own += usage.ru_utime + usage.ru_stime
    try:
        with open("/proc/stat") as f:
            busy, count = cpuload.busy_seconds(f.read(), (), 1 / os.sysconf("SC_CLK_TCK"))
    except OSError:
        busy, count = None, os.cpu_count() or 1
    return cpuload.Sample(time.monotonic(), own, busy, count)


@dataclass(frozen=True)
class LoadWindow:
    """The readings taken just before the command started."""

    start: cpuload.Sample

    @classmethod
    def begin(cls) -> LoadWindow:
        return cls(_sample())

    def end(self) -> cpuload.ForeignLoad | None:
        """The foreign load from the start until now (None where /proc/stat is unreadable)."""
        return cpuload.foreign_load([self.start], [_sample()], [0])


def load_attrs(found: cpuload.ForeignLoad | None, launcher: str, hosts: tuple[str, ...]
               ) -> tuple[dict[str, float | int], str | None]:
    """The trace's contamination attributes and what to tell the user: a warning when the
    machine was loaded, why nothing was measured, or None."""
    here = socket.gethostname()
    if launcher == "srun":
        return {}, ("the machine's load was not measured (srun's ranks are not this process's "
                    "children, so their CPU time cannot be told from other processes')")
    if any(h != here for h in hosts):
        return {}, f"the machine's load was not measured (ranks ran on nodes other than {here})"
    if found is None:
        return {}, "the machine's load was not measured (/proc/stat is unreadable)"
    attrs = {"foreign_cpu_share": found.share, "foreign_cpu_seconds": found.seconds,
             "foreign_cpu_node": 0}
    if not found.loaded:
        return attrs, None
    return attrs, (f"other processes used {found.share:.0%} of this node's CPU capacity while "
                   f"the command ran ({found.seconds:.2f} CPU s in {found.wall:.2f} s on "
                   f"{found.cpus} CPUs); these timings are contaminated: rerun on a quiet "
                   "machine or compare with care (trace attribute foreign_cpu_share)")
