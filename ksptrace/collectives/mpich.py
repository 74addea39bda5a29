"""The algorithms the installed MPICH offers, from the library itself.

MPICH lists each collective's algorithms in the description of its ``MPIR_CVAR_<COLL>_INTRA_
ALGORITHM`` control variable (one ``name - what it does`` line per value, in value order; MPICH
4.0 exposes the variable through MPI_T as an integer, without enum item names). ``mpivars`` prints
the same text. Which names exist changes between releases (4.0 has five allreduce algorithms,
4.1 adds tree, recexch, ring and k_reduce_scatter_allgather), so a run forces by the list of the
library it will load, as ``ompi_catalogue`` does for Open MPI with ``ompi_info``.

The query loads the MPICH library in a child process and uses only MPI_T, which the standard
allows before MPI_Init; the answer is cached per library file.
"""

from __future__ import annotations

import contextlib
import ctypes.util
import functools
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from ksptrace.cachedir import cache_dir
from ksptrace.errors import EnvironmentProblem

_ITEM = re.compile(r"\s+- ")
NEWER_NAMES: tuple[str, ...] = (
    "tsp_recexch_single_buffer", "tsp_recexch_multiple_buffer", "tsp_tree", "tsp_ring",
    "tsp_recexch_reduce_scatter_recexch_allgatherv")
"""MPICH 4.0's names for the generic-transport iallreduce algorithms (4.1 renames them)."""


def cvar_name(collective: str) -> str:
    return f"MPIR_CVAR_{collective.upper()}_INTRA_ALGORITHM"


def parse_names(description: str, known: tuple[str, ...]) -> tuple[str, ...]:
    """The value names in a description whose lines MPI_T delivers glued together.

    Each ``name<padding>- text`` item follows the previous item's text with no separator, so a
    name is recovered as the longest of ``known`` (or ``auto``/``nb``) that ends the text before
    its `` - ``; the first item (``auto``) follows the title. An item matching no known name ends
    the list: the names before it are still right, and a newer algorithm is never invented.
    """
    pieces = _ITEM.split(description)
    candidates = sorted({"auto", "nb", "sched_auto", *NEWER_NAMES, *known}, key=len, reverse=True)
    names: list[str] = []
    for piece in pieces[:-1]:
        name = next((c for c in candidates if piece.endswith(c)), None)
        if name is None:
            break
        names.append(name)
    return tuple(names)


def library_path() -> str | None:
    """The MPICH shared library the dynamic linker finds (Debian: libmpich.so.12)."""
    return ctypes.util.find_library("mpich")


_QUERY = ("import json, sys\nfrom ksptrace.collectives.mpit import descriptions\n"
          "print(json.dumps(descriptions(sys.argv[2:], sys.argv[1])))")


_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
             "/usr/local/lib")


def _cache_file(path: str) -> Path | None:
    """The cache of one library file's answer (None: the file is not found to key it by)."""
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    where = [path] if os.path.isabs(path) else [os.path.join(d, path) for d in (*dirs, *_LIB_DIRS)]
    for candidate in where:
        try:
            real = os.path.realpath(candidate)
            st = os.stat(real)
            break
        except OSError:
            continue
    else:
        return None
    key = hashlib.sha256(f"{real}:{st.st_mtime_ns}:{st.st_size}".encode()).hexdigest()[:16]
    return cache_dir() / f"mpich-cvars-{key}.json"


@functools.lru_cache(maxsize=4)
def _descriptions(path: str, collectives: tuple[str, ...]) -> dict[str, str]:
    cache = _cache_file(path)
    if cache is not None and cache.is_file():
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(cache.read_text())
            if all(cvar_name(c) in data for c in collectives):
                return {k: str(v) for k, v in data.items()}
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get(
        "PYTHONPATH")])))
    try:
        out = subprocess.run([sys.executable, "-c", _QUERY, path,
                              *(cvar_name(c) for c in collectives)],
                             capture_output=True, text=True, timeout=60, env=env, check=False)
        data = json.loads(out.stdout or "{}")
    except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
        raise EnvironmentProblem(f"cannot ask {path} for its algorithms: {exc}") from None
    if cache is not None and data:
        with contextlib.suppress(OSError):
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_name(f".{cache.name}.{os.getpid()}")
            tmp.write_text(json.dumps(data))
            os.replace(tmp, cache)
    return {k: str(v) for k, v in data.items()}


def mpich_catalogue(collective: str, known: tuple[str, ...]) -> tuple[str, ...] | None:
    """The installed MPICH's algorithm names for ``collective`` in value order (None: no MPICH
    library here, or it does not describe the variable)."""
    path = library_path()
    if path is None:
        return None
    text = _descriptions(path, (collective,)).get(cvar_name(collective))
    names = parse_names(text, known) if text else ()
    return names or None
