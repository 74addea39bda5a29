"""The solve hook's library (``solve_hook.c``): built once per machine, like the C monitor.

It is compiled with the machine's C compiler into the user's cache folder by
:mod:`ksptrace.harness.monitoring.native`'s builder, in a private folder, and published under its
content digest. Before each use the file is opened without following links and its digest checked
(:mod:`ksptrace.harness.monitoring.private_files`): a library handed to ``LD_PRELOAD`` runs as this
user in every process of the traced command, so it must be the one that was built. It includes no
header and asks the loaded PETSc for its integer and real sizes at run time, so one build
serves every PETSc on the machine.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
from pathlib import Path

from ksptrace.cachedir import CACHE_ENV
from ksptrace.errors import EnvironmentProblem
from ksptrace.harness.monitoring import native, private_files

SOURCE = Path(__file__).with_name("solve_hook.c")
PARTS = (SOURCE, SOURCE.with_name("output.c"), SOURCE.with_name("waits.c"))
"""The sources of the one translation unit (``solve_hook.c`` includes the others)."""
FLAGS = ["-O2", "-fPIC", "-shared"]


def _stem() -> str:
    text = b"".join(part.read_bytes() for part in PARTS)
    key = hashlib.sha256(text + "\0".join([*FLAGS, platform.machine()]).encode())
    return f"solve_hook-{key.hexdigest()[:16]}"


def _verified(folder: Path, stem: str) -> Path | None:
    """The library of ``stem`` in ``folder`` whose content is what was built (others there are
    removed), or None."""
    for path in sorted(folder.glob(f"{stem}-*.so")):
        try:
            fd = private_files.open_private(path)
        except (OSError, ValueError):
            fd = -1
        if fd >= 0:
            try:
                if private_files.digest_of(fd)[:native.DIGEST_CHARS] == path.name[len(stem) + 1:-3]:
                    return path
            finally:
                os.close(fd)
        with contextlib.suppress(OSError):
            path.unlink()
    return None


def library() -> Path:
    """The verified hook library, built when missing; EnvironmentProblem saying why not."""
    stem = _stem()
    unsafe = []
    for folder in native._folders():
        problem = private_files.private_folder(folder)
        if problem is not None:
            unsafe.append(problem)
            continue
        found = _verified(folder, stem)
        if found is not None:
            return found
        cc = native._compiler()
        if cc is None:
            raise EnvironmentProblem("ksptrace trace needs a C compiler to build its hook "
                                     "(none of $CC, cc, gcc, clang found); install gcc")
        why = native._compile(cc, FLAGS, folder, stem, SOURCE)
        if why is not None:
            raise EnvironmentProblem(f"cannot build the solve hook: {why}")
        found = _verified(folder, stem)
        if found is not None:
            return found
        raise EnvironmentProblem(f"the solve hook built in {folder} fails its digest check; "
                                 "remove the folder and try again")
    raise EnvironmentProblem("no private folder to build the solve hook in ("
                             + "; ".join(unsafe) + f"); set {CACHE_ENV} to a folder only "
                             "you can write")
