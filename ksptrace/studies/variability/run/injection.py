"""A trace's injected noise, read defensively: the noise attribute of a trace from anywhere
(another user, an edited file) is parsed, bounded and checked against what a run of ksptrace
can inject before the noise analysis relies on it (issues 14, 66, 67)."""

from __future__ import annotations

import numpy as np

from ksptrace.errors import KsptraceError
from ksptrace.noise.spec import NoiseSpec, parse
from ksptrace.studies.variability.run.shown import capped_text
from ksptrace.studies.variability.stats.injected import InjectedNoise, injected_noise
from ksptrace.trace.model import Trace


def injection_of(trace: Trace, times: np.ndarray, notes: list[str]) -> InjectedNoise | None:
    """The trace's injected noise and natural times; None (with a note) for an unreadable spec."""
    text = str(trace.attr("noise", "none") or "none")
    try:
        spec = parse(text)
    except KsptraceError as exc:
        notes.append(f"noise attribute {capped_text(repr(text))} not understood "
                     f"({capped_text(str(exc))}); no noise analysis")
        return None
    unbounded = spec.run_problem()  # no run injects it: a foreign or edited trace (issue 66)
    if unbounded is not None:
        notes.append(f"{capped_text(unbounded)}; no run of ksptrace injects such noise: no "
                     "noise analysis")
        return None
    idle = spec.reach_problem(int(times.shape[0]), trace.n_nodes, idle=True)
    if idle is not None:
        notes.append(f"{idle}: no noise analysis")
        return None
    if spec.active and trace.injected_seconds is None:
        notes.append(f"noise {capped_text(text)} but no recorded detours: no noise analysis")
        return injected_noise(times, None, NoiseSpec("none"))
    return injected_noise(times, trace.injected_seconds, spec)
