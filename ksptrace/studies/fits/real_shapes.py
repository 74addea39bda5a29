"""Traces shaped like real campaign traces, for the engine's benchmark and tests (issue 61).

The varied traces of :mod:`.samples` come from the package's own generator and are nearly
symmetric (q99/q50 about 1.5). Real forced-K traces are not: a bulk with a spike at its lower
end (a gamma shape below one), and a few per cent of iterations that are detours tens to
thousands of times the median. A generator calibrated on itself would hide that, so this one is
calibrated on real traces: :func:`calibrate` reduces one real trace to a :class:`Profile` (its
P and K, its bulk as a shifted gamma, its detours as a rate and a lognormal size relative to
the median), ``bench/fits_calibrate.py`` prints the profiles of a campaign's traces, and
:data:`PROFILES` holds those of the project's own real campaigns (``bench/fits_real/*.toml``,
run with ksptrace on Debian's PETSc 3.18, 2026-11-29, on a machine loaded by other work: the
heavy tails are real). :func:`real_shaped_trace` draws a trace from a profile: iteration times
in whole nanoseconds, as a timer gives them, turned into stamps and back, so one tick comes back
as several values with float noise (the ties the tie rule is for).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksptrace.errors import AnalysisError
from ksptrace.studies.fits.samples import Varied
from ksptrace.trace.synthetic import trace_from_times

DETOUR = 10.0
"""An iteration longer than this many medians is a detour; the rest is the bulk."""
TICK = 1e-9
"""The timer's resolution, seconds."""


@dataclass(frozen=True)
class Profile:
    """One real trace reduced to what the generator draws from."""

    name: str
    nprocs: int
    iterations: int
    median: float
    """Seconds."""
    floor: float
    """The bulk's lowest value over the median."""
    shape: float
    """The bulk above its floor as a gamma: its shape (moments)..."""
    scale: float
    """... and its scale over the median."""
    rate: float
    """The fraction of iterations that are detours (longer than DETOUR medians)."""
    log_size: float
    """Detour sizes over the median: the mean and standard deviation of their logarithm."""
    log_spread: float


def calibrate(name: str, times: np.ndarray) -> Profile:
    """The profile of the [P, K] iteration times ``times`` of one real trace."""
    x = np.asarray(times, dtype=np.float64)
    if x.ndim != 2 or x.size < 20 or not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise AnalysisError(f"{name}: a profile needs a [P, K] array of at least 20 positive "
                            "finite iteration times")
    values = x.ravel()
    median = float(np.median(values))
    ratio = values / median
    bulk = ratio[ratio <= DETOUR]
    floor = float(bulk.min())
    above = bulk - floor
    mean, var = float(above.mean()), float(above.var())
    shape, scale = (mean * mean / var, var / mean) if var > 0 and mean > 0 else (1.0, 1e-3)
    detours = np.log(ratio[ratio > DETOUR])
    return Profile(name=name, nprocs=int(x.shape[0]), iterations=int(x.shape[1]),
                   median=median, floor=floor, shape=shape, scale=scale,
                   rate=float(detours.size / values.size),
                   log_size=float(detours.mean()) if detours.size else float(np.log(DETOUR)),
                   log_spread=float(detours.std()) if detours.size > 1 else 0.0)


def draw(profile: Profile, seed: int) -> np.ndarray:
    """[P, K] iteration times from ``profile``, in whole timer ticks (at least one): the bulk a
    shifted gamma scaled to the profile's median, the detours lognormal multiples of it."""
    rng = np.random.default_rng(seed)
    size = (profile.nprocs, profile.iterations)
    ratio = profile.floor + rng.gamma(profile.shape, profile.scale, size)
    detour = rng.random(size) < profile.rate
    # a real bulk is no exact gamma: scaled so that the trace's median is the profile's (the
    # bulk's quantile at 0.5 / (1 - rate) is the median once the detours are in)
    ratio /= np.quantile(ratio, min(0.5 / (1.0 - profile.rate), 1.0))
    sizes = np.exp(rng.normal(profile.log_size, profile.log_spread, int(detour.sum())))
    ratio[detour] = np.maximum(sizes, DETOUR)
    return np.maximum(np.round(ratio * profile.median / TICK), 1.0) * TICK


def real_shaped_trace(index: int) -> Varied:
    """The ``index``-th real-shaped trace: the profiles in turn, each drawn with its own seed."""
    profile = PROFILES[index % len(PROFILES)]
    times = draw(profile, seed=2000 + index)
    ksp = profile.name.split("-")[1]
    trace = trace_from_times(times, np.arange(profile.nprocs, dtype=np.int64), ksp=ksp)
    label = f"{index:04d}-real-{profile.name}"
    return Varied(label, ksp, profile.name.split("-")[0], profile.nprocs, profile.iterations,
                  trace)


PROFILES: tuple[Profile, ...] = (
    Profile('iceflow-pipebcgs-p2-k600', 2, 600, 0.02838, 0.01469,
            0.9175, 1.298, 0.001667, 2.507, 0.0004979),
    Profile('iceflow-pipecg-p4-k300', 4, 300, 0.01005, 0.02026,
            1.646, 0.6791, 0, 2.303, 0),
    Profile('iceflow-cg-p2-k200', 2, 200, 0.0003173, 0.5911,
            0.766, 0.3948, 0.195, 4.954, 0.5445),
    Profile('iceflow-pipebcgs-p4-k250', 4, 250, 0.01273, 0.1613,
            1.879, 0.5095, 0, 2.303, 0),
    Profile('iceflow-bcgs-p3-k200', 3, 200, 0.01281, 0.07781,
            1.025, 1.416, 0, 2.303, 0),
    Profile('iceflow-gmres-p1-k300', 1, 300, 0.0008581, 0.5061,
            0.2872, 3.003, 0.17, 2.594, 0.2288),
    Profile('iceflow-bcgs-p1-k1000', 1, 1000, 0.001453, 0.5463,
            0.4681, 4.6, 0.14, 2.55, 0.1587),
    Profile('iceflow-pgmres-p2-k300', 2, 300, 0.014, 0.01514,
            0.7822, 1.789, 0.003333, 2.402, 5.595e-05),
    Profile('laplace1d-cg-p3-k400', 3, 400, 0.0001363, 0.4441,
            0.6323, 1.168, 0.155, 3.405, 0.632),
    Profile('laplace1d-gmres-p1-k5000', 1, 5000, 0.0002405, 0.2418,
            1.027, 0.862, 0.0676, 3.415, 0.4542),
    Profile('laplace1d-pipecg-p4-k3000', 4, 3000, 0.0002248, 0.2554,
            0.6116, 1.522, 0.2127, 3.472, 0.7831),
    Profile('laplace1d-gmres-p4-k1000', 4, 1000, 0.0005007, 0.1845,
            0.5797, 3.456, 0.134, 3.021, 0.5607),
    Profile('laplace1d-pipebcgs-p4-k200', 4, 200, 0.0005811, 0.4201,
            0.4454, 3.359, 0.12, 2.731, 0.4408),
    Profile('laplace1d-pgmres-p2-k1200', 2, 1200, 0.0002007, 0.2374,
            1.465, 0.4998, 0.2171, 4.883, 0.5257),
    Profile('laplace1d-pipebcgs-p1-k1200', 1, 1200, 0.000236, 0.9682,
            0.1833, 0.9633, 0.0725, 3.494, 0.4522),
    Profile('laplace1d-bcgs-p3-k700', 3, 700, 0.0002683, 0.5154,
            0.3452, 2.024, 0.1657, 3.21, 0.6247),
    Profile('laplace1d-bcgs-p2-k3000', 2, 3000, 0.000128, 0.6199,
            0.4416, 0.7034, 0.08, 6.109, 0.868),
    Profile('laplace1d-pipecg-p1-k2000', 1, 2000, 9.317e-05, 0.9683,
            0.6017, 0.4252, 0.0315, 4.776, 0.3837),
    Profile('laplace1d-pgmres-p3-k5000', 3, 5000, 0.0008705, 0.08351,
            0.7985, 2.734, 0.05153, 2.677, 0.2856),
    Profile('laplace1d-cg-p2-k2500', 2, 2500, 5.497e-05, 0.5987,
            1.022, 0.4346, 0.05, 6.723, 0.9734),
)
"""The profiles of the 20 traces of bench/fits_real/*.toml (``bench/fits_calibrate.py``): q99/q50
from 3.3 to 1564 (median 52), gamma shapes of the bulk 0.18-1.9, detours in 0-21 % of the
iterations (the machine was loaded), 10 to about 1,000 medians long."""
