"""Who else used the CPUs during the timed solve: a measure of contamination, per node.

Around the timed KSPSolve every rank reads its node's busy CPU time (``/proc/stat``: user, nice,
system, irq, softirq and steal jiffies over the node's CPUs: the union of its ranks' affinity
masks, which is every CPU unless a cpuset narrows it) and its own process's CPU time
(``getrusage``, all threads). After the solve, the CPU time of the node that the job's own ranks
do not account for is *foreign*: another campaign on the same cores, a compile, a browser. Its
share of the node's capacity (wall time x CPUs) goes into the trace, so that a reader, and the
analysis, can tell a quiet measurement from a contaminated one.

The arithmetic (:func:`foreign_load`) is pure; the readers are thin wrappers around Linux files.
Where ``/proc/stat`` cannot be read (not Linux), nothing is recorded.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ksptrace.trace.model import FOREIGN_LOAD_LIMIT

BUSY_FIELDS = (0, 1, 2, 5, 6, 7)
"""user, nice, system, irq, softirq, steal in the 'cpu' line (idle and iowait are not busy;
guest time is already inside user)."""


MIN_FOREIGN_SECONDS = 0.05
"""Less foreign CPU time than this (5 clock ticks) is below what /proc/stat resolves: no warning."""


@dataclass(frozen=True)
class Sample:
    """One rank's readings at one moment."""

    wall: float
    own: float
    """This process's CPU seconds (user + system, all threads)."""
    node_busy: float | None
    """The node's busy CPU seconds since boot, or None where /proc/stat is unreadable."""
    cpus: int


@dataclass(frozen=True)
class ForeignLoad:
    """Foreign CPU use on the most contaminated node during the solve."""

    share: float
    """Foreign CPU seconds / (wall seconds x CPUs), 0..1."""
    seconds: float
    node: int
    wall: float
    cpus: int

    @property
    def loaded(self) -> bool:
        """Worth a warning: above the share limit, and more foreign CPU time than /proc/stat's
        clock ticks resolve (a 10 ms solve reads 18 % from one tick of someone else's)."""
        return self.share > FOREIGN_LOAD_LIMIT and self.seconds >= MIN_FOREIGN_SECONDS

    def message(self) -> str:
        return (
            f"other processes used {self.share:.0%} of node {self.node}'s CPU capacity during "
            f"the solve ({self.seconds:.2f} CPU s in {self.wall:.2f} s on {self.cpus} CPUs)"
        )

    def warning(self) -> str:
        """What ``ksptrace run`` and ``ksptrace.record`` say of a loaded solve."""
        return (f"{self.message()}; these timings are contaminated: rerun on a quiet machine "
                "or compare with care (trace attribute foreign_cpu_share)")


def busy_seconds(stat: str, only: Collection[int] = (), tick: float = 0.01
                 ) -> tuple[float | None, int]:
    """Busy CPU seconds since boot and the number of CPUs, from the text of ``/proc/stat``: of
    the whole machine, or of the CPUs in ``only`` (a node's cpuset: on a machine split into
    several nodes, the other nodes' work is not this node's contamination)."""
    lines = stat.splitlines()
    per_cpu = {int(line[3:].split()[0]): line for line in lines
               if line.startswith("cpu") and line[3:4].isdigit()}
    wanted = set(only) & set(per_cpu)
    if only and wanted != set(per_cpu):
        chosen = [per_cpu[c] for c in sorted(wanted)]
    else:
        chosen = [lines[0]] if lines and lines[0].startswith("cpu ") else []
        wanted = set(per_cpu)
    count = len(wanted) or 1
    try:
        jiffies = sum(int(fields[i]) for fields in (ln.split()[1:] for ln in chosen)
                      for i in BUSY_FIELDS if i < len(fields))
    except ValueError:
        return None, count
    return (jiffies * tick if chosen else None), count


def _proc_stat(only: Collection[int] = ()) -> tuple[float | None, int]:
    try:
        with open("/proc/stat") as f:
            text = f.read()
    except OSError:
        return None, len(only) or os.cpu_count() or 1
    return busy_seconds(text, only, 1 / os.sysconf("SC_CLK_TCK"))


def sample(cpus: Collection[int] = ()) -> Sample:
    """Readings of this rank now; ``cpus`` are its node's CPUs (default: the whole machine)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    busy, count = _proc_stat(cpus)
    return Sample(time.monotonic(), usage.ru_utime + usage.ru_stime, busy, count)


def foreign_load(
    starts: Sequence[Sample], ends: Sequence[Sample], node_ids: Sequence[int]
) -> ForeignLoad | None:
    """The most contaminated node, from every rank's samples before and after the solve.

    A node's foreign CPU time is its busy time (as read by its lowest rank) minus the CPU time
    of the job's ranks on it. None when a node's busy time could not be read.
    """
    worst: ForeignLoad | None = None
    for node in sorted(set(node_ids)):
        ranks = [r for r, n in enumerate(node_ids) if n == node]
        lead = ranks[0]
        s, e = starts[lead], ends[lead]
        if s.node_busy is None or e.node_busy is None:
            return None
        wall = max(e.wall - s.wall, 1e-9)
        own = sum(ends[r].own - starts[r].own for r in ranks)
        seconds = max(0.0, (e.node_busy - s.node_busy) - own)
        share = min(1.0, seconds / (wall * e.cpus))
        if worst is None or share > worst.share:
            worst = ForeignLoad(share, seconds, node, wall, e.cpus)
    return worst
