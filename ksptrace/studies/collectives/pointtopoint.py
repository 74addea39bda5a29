"""LogP with its gap, and PLogP with size-dependent overheads and gap, from point-to-point
measurements (the survey's section 3.1; Culler et al. 1993; Kielmann, Bal and Verstoep 2000).

- **LogP**: one small message takes ``L + 2o``; a sender can start a message every ``g``
  (``g >= o``), so ``L/g`` messages can be in flight. A message of m bytes sent as
  ``ceil(m/w)`` words of w bytes takes ``L + 2o + (ceil(m/w) - 1) g``. :func:`fit_logp` fits
  that to a curve T(m) for a given word size; :func:`logp_from_plogp` reads L, o and g off a
  PLogP measurement at its smallest size.
- **PLogP**: the overheads and the gap are functions of m: ``o_s(m)``, ``o_r(m)``, ``g(m)``,
  and a round trip takes ``2 (L + g(m))``. :func:`fit_plogp_model` fits each function as a
  piecewise-linear curve with a step allowed at each breakpoint, the breakpoints chosen by the
  data once for all of them and RTT/2 (``shared_steps.py``: segmented regression, their number
  by an information criterion; a protocol switch is the transport's, at one size), each
  function's jump at each break with its 95 % interval, and L from the round trip at the
  smallest size.

Pure: numpy arrays in, frozen dataclasses out.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from ksptrace.errors import AnalysisError
from ksptrace.studies.collectives import models as cm
from ksptrace.studies.collectives.persize import rows, summarize
from ksptrace.studies.collectives.shared_steps import MAX_BREAKS, fit_shared_steps
from ksptrace.studies.collectives.steps import StepFit

FLOOR = 1e-9
"""Seconds: a median overhead or gap at or below zero (a difference of two times that are
almost equal) is fitted as this, and the model's note says so."""


@dataclass(frozen=True)
class LogP:
    L: float
    o: float
    g: float
    note: str = ""

    @property
    def in_flight(self) -> float:
        """L / g: how many messages the network holds at once (LogP's capacity)."""
        return self.L / self.g if self.g > 0 else float("inf")

    def time(self, sizes: np.ndarray, word_bytes: int) -> np.ndarray:
        words = np.ceil(np.asarray(sizes, np.float64) / word_bytes)
        return np.asarray(self.L + 2 * self.o + np.maximum(words - 1, 0) * self.g)


def fit_logp(sizes: np.ndarray, times: np.ndarray, word_bytes: int, o: float | None = None,
             tolerance: float = cm.BREAKDOWN) -> cm.ModelFit:
    """``L + 2o + (ceil(m/w) - 1) g`` by relative least squares (non-negative). One curve
    fixes ``L + 2o`` and ``g``; ``o`` given splits L (and g is then at least o)."""
    if word_bytes < 1:
        raise AnalysisError(f"the LogP word must be >= 1 byte, got {word_bytes}")
    m, t = cm._checked(sizes, times, 2)
    extra = np.maximum(np.ceil(m / word_bytes) - 1, 0)
    if not extra.any():
        raise AnalysisError(f"every size fits in one {word_bytes}-byte word: the gap cannot be "
                            "fitted; measure larger messages or give a smaller word")
    c, g = cm._relative_nnls(np.column_stack([np.ones_like(m), extra]), t)
    params = {"L_plus_2o": float(c), "g": float(g), "word_bytes": float(word_bytes)}
    note = "L and o are one intercept on a single curve; give o to split them"
    if o is not None:
        params.update(o=float(o), L=float(c - 2 * o))
        note = "o given; L = intercept - 2o" + ("; g < o here, which LogP forbids" if g < o
                                                 else "")
    return cm.ModelFit("logp", MappingProxyType(params), m.astype(np.int64), t,
                       c + extra * g, tolerance, note)


Piecewise = StepFit
"""PLogP's functions of m: piecewise linear, a step allowed at each break (``steps.py``)."""


@dataclass(frozen=True)
class PLogPModel:
    L: float
    send_overhead: Piecewise
    recv_overhead: Piecewise
    gap: Piecewise
    sizes: np.ndarray
    note: str = ""
    half_round_trip: Piecewise | None = None
    """RTT/2's own fit at the shared breaks (the breaks are chosen with it too)."""

    def round_trip(self, sizes: np.ndarray) -> np.ndarray:
        return np.asarray(2 * (self.L + self.gap(sizes)))


def _summary(values: np.ndarray, m: int, what: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Per size, the robust median and its relative standard error (None where the
    repetitions are too few to bound the median: the sizes are then weighted alike)."""
    summary = summarize(rows(values, m, what))
    rel = summary.rel_error
    return summary.median, None if np.isnan(rel).any() else rel


def min_piece(sizes: np.ndarray) -> int:
    """Sizes a piece holds at least: 3 where the sizes are 2 or more per doubling (then a step
    between two sizes cannot pass for a steep two-size piece), else 2."""
    m = np.asarray(sizes, np.float64)
    span = np.log2(m.max() / m.min()) if m.min() > 0 else 0.0
    return 3 if span > 0 and (m.size - 1) / span >= 2 else 2


def fit_plogp_model(sizes: np.ndarray, half_round_trip: np.ndarray, send_overhead: np.ndarray,
                    recv_overhead: np.ndarray, gap: np.ndarray,
                    max_breaks: int = MAX_BREAKS) -> PLogPModel:
    """PLogP from measurements per size ([M], [M, R] or [P, M, R]; per size the median of the
    repetitions left after rejecting slow outliers is fitted, each size weighted by the inverse
    of its relative standard error, from the median's 95 % interval, when every size kept 6 or
    more repetitions: ``persize.py``)."""
    m = np.asarray(sizes, np.float64).ravel()
    if m.size < 3 or np.unique(m).size != m.size:
        raise AnalysisError("PLogP needs at least 3 distinct message sizes; measure more")
    order = np.argsort(m)
    m = m[order]
    summary = {name: _summary(v, m.size, name) for name, v in (
        ("half_round_trip", half_round_trip), ("send_overhead", send_overhead),
        ("recv_overhead", recv_overhead), ("gap", gap))}
    med = {k: v[0][order] for k, v in summary.items()}
    errors = {k: None if v[1] is None else v[1][order] for k, v in summary.items()}
    floored = [k for k, v in med.items() if (v <= FLOOR).any()]
    names = ("send_overhead", "recv_overhead", "gap", "half_round_trip")
    shared = fit_shared_steps(m, [np.maximum(med[k], FLOOR) for k in names],
                              [errors[k] for k in names], max_breaks, min_piece(m))
    fits = dict(zip(names, shared.fits, strict=True))
    latency = float(med["half_round_trip"][0] - fits["gap"](m[:1])[0])
    notes = [f"{', '.join(floored)} at or below zero at some sizes, fitted as {FLOOR:g} s"
             ] if floored else []
    if latency < 0:
        notes.append(f"RTT/2 - g(m) at the smallest size is {latency:.3g} s < 0; L set to 0")
        latency = 0.0
    return PLogPModel(latency, fits["send_overhead"], fits["recv_overhead"], fits["gap"],
                      m.astype(np.int64), "; ".join(notes), fits["half_round_trip"])


def logp_from_plogp(model: PLogPModel) -> LogP:
    """LogP's constants at the smallest measured size: o the mean of the two overheads, g the
    gap, L what remains of half a round trip (L + 2o)."""
    m0 = model.sizes[:1]
    o = float((model.send_overhead(m0)[0] + model.recv_overhead(m0)[0]) / 2)
    g = float(model.gap(m0)[0])
    half_rtt = float(model.round_trip(m0)[0] / 2)
    latency = half_rtt - 2 * o
    note = ""
    if latency < 0:
        note = f"half a round trip is less than 2o at {int(m0[0])} B; L set to 0"
        latency = 0.0
    if g < o:
        note = "; ".join(filter(None, [note, "measured g < o (LogP assumes g >= o)"]))
    return LogP(latency, o, g, note)
