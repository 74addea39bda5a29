"""How much memory a run may take here: the node's available memory, within its control group.

``MemAvailable`` is the whole node's; a batch job (Slurm's ``--mem``, a container) is held to
its control group's limit, and a run past that limit is killed mid-run. The headroom is the
least of ``MemAvailable`` and, for the process's memory cgroup and each of its ancestors, the
limit less the usage (cgroup v2 ``memory.max``/``memory.current``, v1
``memory.limit_in_bytes``/``memory.usage_in_bytes``). ``root`` is ``/`` except in the tests.
"""

from __future__ import annotations

from pathlib import Path

V2 = ("memory.max", "memory.current")
V1 = ("memory.limit_in_bytes", "memory.usage_in_bytes")


def _number(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None  # v2 "max": no limit


def meminfo_available(root: Path = Path("/")) -> int | None:
    try:
        with open(root / "proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def cgroup_headroom(root: Path = Path("/")) -> int | None:
    """Limit less usage, the least over the process's memory cgroup and its ancestors (None:
    no limit found)."""
    try:
        lines = (root / "proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    found: list[int] = []
    for line in lines:
        hierarchy, controllers, path = [*line.split(":", 2), "", ""][:3]
        if hierarchy == "0" and controllers == "":
            base, (limit_file, usage_file) = root / "sys/fs/cgroup", V2
        elif "memory" in controllers.split(","):
            base, (limit_file, usage_file) = root / "sys/fs/cgroup/memory", V1
        else:
            continue
        parts = [p for p in path.split("/") if p and p != ".."]
        for depth in range(len(parts), -1, -1):
            folder = base.joinpath(*parts[:depth])
            limit, usage = _number(folder / limit_file), _number(folder / usage_file)
            if limit is not None and usage is not None:
                found.append(max(limit - usage, 0))
    return min(found) if found else None


def available_bytes(root: Path = Path("/")) -> int | None:
    """What this node can still give (None: unknown)."""
    known = [b for b in (meminfo_available(root), cgroup_headroom(root)) if b is not None]
    return min(known) if known else None


def local_ranks(nprocs: int, environ: dict[str, str]) -> int:
    """Ranks on this node: the launcher's count where it gives one, else all of them."""
    for name in ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"):
        value = environ.get(name, "")
        if value.isdigit() and 0 < int(value) <= nprocs:
            return int(value)
    return nprocs
