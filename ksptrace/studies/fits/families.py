"""The candidate families in the engine's own terms: a vectorised cdf (:mod:`.cdfs`),
parameter transforms, bounds and a grid of starting shapes for each.

A family's own parameters are (shapes..., loc, scale) of its cdf: scipy's for norm,
genextreme, cauchy and nct; for lognorm, gamma, exponweib and johnsonsu a parameterisation in
which each limit of the family (the normal, the Gumbel, a lognormal) is one coordinate going to
zero or to infinity, instead of a curved ridge on which Newton crawls (lognorm: s, median,
s x scale; gamma: 1/sqrt(a), mean, standard deviation; exponweib: a, 1/c, loc + scale, scale/c;
johnsonsu: delta = a/b, eps = 1/b, median, scale/b). Grids, the reported parameters and
:meth:`Family.theta`'s argument are scipy's, converted in closed form. The optimiser works on
``theta``, where every positive own parameter is its logarithm.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ksptrace.errors import AnalysisError
from ksptrace.studies.fits import cdfs

Cdf = Callable[[np.ndarray, tuple[np.ndarray, ...]], np.ndarray]
"""``cdf(u, shapes)`` or ``sf(u, shapes)`` of the standardised family."""
Convert = Callable[[np.ndarray], np.ndarray]
"""Rows of (shapes..., loc, scale) in one parameterisation to rows in another."""

LOC_BOUND = 1e4
"""|loc| bound on the standardised scale (median 0, interquartile range 1)."""
SCALE_BOUNDS = (1e-6, 1e4)
"""Scale bounds on the standardised scale."""
NCT_PHI = float(np.arctan(1e2))
"""nct's bound on atan(nc): |nc| <= 100, scipy's cdf's reach."""


@dataclass(frozen=True)
class Family:
    """One candidate family: its shapes, their bounds, where to start, and its cdf."""

    name: str
    shapes: tuple[str, ...]
    positive: tuple[bool, ...]
    """Per own shape: True if the optimiser works on its logarithm."""
    bounds: tuple[tuple[float, float], ...]
    """Per own shape, in its natural units."""
    grid: tuple[tuple[float, ...], ...]
    """Starting shapes; loc and scale are matched to the sample's quartiles for each."""
    cdf: Cdf
    sf: Cdf
    step: float = 1e-4
    """Finite-difference step in theta: larger for a cdf computed to fewer digits (nct's)."""
    edge_loc: bool = False
    """True if the support starts at loc: the optimiser then works on log(anchor - loc), where
    the anchor is the upper edge of the first non-empty cell (loc must stay below it, and the
    approach to it is on a log scale, so a finite-difference step never jumps past it)."""
    to_scipy: Convert | None = None
    """For a family whose own parameters (those of ``cdf``) are not scipy's: rows of its own
    (shapes..., loc, scale) to scipy's; ``from_scipy`` the inverse."""
    from_scipy: Convert | None = None
    edge_variant: Family | None = None
    """The same family in other coordinates (scipy's parameters; for gamma and exponweib also
    edge-located, ``edge_loc``), tried when a search in these did not converge
    (engine.fit_family)."""
    restricts: bool = False
    """True for edge coordinates that leave part of the family out (its support has no lower
    end, the box keeps L below the lowest values): a fit found there is checked against one in
    the family's own coordinates."""
    spiky: Convert | None = None
    """For a family whose density can be infinite at its support's lower end: rows of scipy's
    parameters -> True where it is (the engine then searches the edge variant first)."""
    coshed: bool = False
    """True if theta's last entry is ``log(scale) + log(cosh(first shape))`` instead of
    ``log(scale)`` (Johnson S_U in its own terms: towards its lognormal limits the first shape
    goes to plus or minus infinity and the scale to zero together; in this coordinate the
    limit is along the first shape alone)."""

    @property
    def size(self) -> int:
        return len(self.shapes) + 2

    def theta_bounds(self) -> list[tuple[float, float]]:
        """Box bounds of ``theta`` (log of positive shapes; loc; log scale)."""
        out = [(float(np.log(lo)), float(np.log(hi))) if pos else (lo, hi)
               for (lo, hi), pos in zip(self.bounds, self.positive, strict=True)]
        lo, hi = SCALE_BOUNDS
        loc = (float(np.log(1e-12)), float(np.log(2 * LOC_BOUND))) if self.edge_loc else (
            -LOC_BOUND, LOC_BOUND)
        return [*out, loc, (float(np.log(lo)), float(np.log(hi)))]

    def natural(self, theta: np.ndarray, anchor: float) -> np.ndarray:
        """Rows of (shapes..., loc, scale) from rows of ``theta``."""
        t = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        out = t.copy()
        for i, pos in enumerate(self.positive):
            if pos:
                out[:, i] = np.exp(t[:, i])
        if self.edge_loc:
            out[:, -2] = anchor - np.exp(t[:, -2])
        out[:, -1] = np.exp(t[:, -1])
        if self.coshed:
            out[:, -1] = np.exp(t[:, -1] - cdfs.log_cosh(t[:, 0]))
        return out

    def scipy_params(self, theta: np.ndarray, anchor: float) -> np.ndarray:
        """Rows of scipy's (shapes..., loc, scale) from rows of ``theta``."""
        own = self.natural(theta, anchor)
        return own if self.to_scipy is None else self.to_scipy(own)

    def theta(self, params: np.ndarray, anchor: float) -> np.ndarray:
        """``theta`` of one vector of scipy's parameters (NaN loc if at or above the anchor of
        an edge-located family): the inverse of :meth:`scipy_params`."""
        return self.thetas(np.asarray(params, dtype=np.float64)[None, :], anchor)[0]

    def thetas(self, params: np.ndarray, anchor: float) -> np.ndarray:
        """:meth:`theta` of each row of ``params``, in one vectorised evaluation (the same
        operations on each element, so the same bits as one row at a time)."""
        p = np.array(params, dtype=np.float64).reshape(-1, self.size)
        if self.from_scipy is not None:
            p = self.from_scipy(p)
        with np.errstate(invalid="ignore", divide="ignore"):  # NaN or -inf: not a start
            for i, pos in enumerate(self.positive):
                if pos:
                    p[:, i] = np.log(p[:, i])
            if self.edge_loc:
                gap = anchor - p[:, -2]
                p[:, -2] = np.where(gap > 0, np.log(np.where(gap > 0, gap, 1.0)), np.nan)
            p[:, -1] = np.log(p[:, -1])
        if self.coshed:
            p[:, -1] += cdfs.log_cosh(p[:, 0])
        return p


GAMMA_AT_EDGE = Family("gamma", ("a",), (True,), ((1e-2, 1e4),),
                       tuple((a,) for a in (0.3, 0.5, 0.8)), cdfs.gamma_scipy_cdf,
                       cdfs.gamma_scipy_sf, edge_loc=True)
"""Gamma in scipy's parameters with log(anchor - loc): where the density spikes at loc."""
EXPONWEIB_AT_EDGE = Family("exponweib", ("a", "c"), (True, True), ((1e-3, 1e3), (1e-2, 1e2)),
                           tuple((a, c) for a in (0.5, 1.0, 4.0) for c in (0.5, 1.0, 2.0)),
                           cdfs.exponweib, cdfs.exponweib_sf, edge_loc=True)
"""The exponentiated Weibull in scipy's parameters with log(anchor - loc)."""

LOGNORM_AT_EDGE = Family("lognorm", ("s",), (True,), ((1e-3, 1e2),),
                         tuple((s,) for s in (1.0, 2.0, 3.0)), cdfs.lognorm_scipy_cdf,
                         cdfs.lognorm_scipy_sf, edge_loc=True)
"""The lognormal in scipy's parameters with log(anchor - loc): with s above one its density
rises within a sliver above loc, which must approach the lowest values on a log scale."""
JOHNSONSU_AT_EDGE = Family("johnsonsu", ("a", "b"), (False, True),
                           ((-30.0, 30.0), (1e-2, 1e2)),
                           tuple((d / e, 1.0 / e) for d in (-8.0, -4.0, -2.0)
                                 for e in (1.0, 2.0, 4.0)),
                           cdfs.johnsonsu_edge_cdf, cdfs.johnsonsu_edge_sf,
                           to_scipy=cdfs.johnsonsu_edge_scipy,
                           from_scipy=cdfs.johnsonsu_edge_own, edge_loc=True, restricts=True)
"""Johnson S_U as (delta, eps, L, S), with log(anchor - L) (:func:`.cdfs.johnsonsu_edge_z`):
near its lognormal limit with s = eps above one, the limit's lower end L must approach the
lowest values on a log scale."""
NCT_SCIPY = Family("nct", ("df", "nc"), (True, False), ((0.5, 1e3), (-1e2, 1e2)),
                   tuple((df, nc) for df in (3.0, 10.0, 60.0) for nc in (0.0, 1.0, 3.0)),
                   cdfs.nct, cdfs.nct_sf, step=5e-3)
"""nct in scipy's parameters: its df -> infinity limit (a normal of mean loc + scale nc) is a
straight ridge along nc here, a curved one in nct's own terms; searched when a search in those
does not converge."""

FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("norm", (), (), (), ((),), cdfs.norm, cdfs.norm_sf),
    Family("lognorm", ("s",), (False,), ((1e-3, 1e2),),
           tuple((s,) for s in (0.1, 0.3, 0.6, 1.0, 1.6)), cdfs.lognorm, cdfs.lognorm_sf,
           to_scipy=cdfs.lognorm_scipy, from_scipy=cdfs.lognorm_own, edge_variant=LOGNORM_AT_EDGE,
           spiky=lambda p: p[:, 0] > 1.0),
    Family("johnsonsu", ("a", "b"), (False, False), ((-30.0, 30.0), (1e-2, 1e2)),
           tuple((a, b) for a in (-4.0, -2.0, -1.0, 0.0, 1.0) for b in (0.6, 1.2, 2.5)),
           cdfs.johnsonsu_own_cdf, cdfs.johnsonsu_own_sf, to_scipy=cdfs.johnsonsu_scipy,
           from_scipy=cdfs.johnsonsu_own, coshed=True, edge_variant=JOHNSONSU_AT_EDGE,
           spiky=lambda p: (p[:, 0] / p[:, 1] < -2.0) & (p[:, 1] < 1.0)),
    Family("gamma", ("a",), (False,), ((1e-2, 10.0),),
           tuple((a,) for a in (0.5, 1.0, 2.0, 5.0, 20.0, 100.0)), cdfs.gamma, cdfs.gamma_sf,
           to_scipy=cdfs.gamma_scipy, from_scipy=cdfs.gamma_own, edge_variant=GAMMA_AT_EDGE,
           spiky=lambda p: p[:, 0] < 1.0),
    Family("genextreme", ("c",), (False,), ((-5.0, 5.0),),
           tuple((c,) for c in (-0.6, -0.3, -0.1, 0.0, 0.2)), cdfs.genextreme, cdfs.genextreme_sf),
    Family("exponweib", ("a", "c"), (True, False), ((1e-3, 1e3), (1e-2, 1e2)),
           tuple((a, c) for a in (0.5, 1.0, 4.0, 20.0) for c in (0.5, 1.0, 2.0, 4.0)),
           cdfs.exponweib_own_cdf, cdfs.exponweib_own_sf, to_scipy=cdfs.exponweib_scipy,
           from_scipy=cdfs.exponweib_own, edge_variant=EXPONWEIB_AT_EDGE,
           spiky=lambda p: p[:, 0] * p[:, 1] < 1.0),
    Family("cauchy", (), (), (), ((),), cdfs.cauchy, cdfs.cauchy_sf),
    Family("nct", ("df", "nc"), (True, False), ((0.5, 1e3), (-NCT_PHI, NCT_PHI)),
           tuple((df, nc) for df in (3.0, 10.0, 60.0) for nc in (0.0, 1.0, 3.0)),
           cdfs.nct_own_cdf, cdfs.nct_own_sf, step=5e-3, to_scipy=cdfs.nct_scipy,
           from_scipy=cdfs.nct_own, edge_variant=NCT_SCIPY),
)}


LIMITS: dict[str, dict[tuple[int, str], tuple[str, str]]] = {
    "lognorm": {(0, "lower"): ("s -> 0: the normal limit", "norm")},
    "johnsonsu": {(0, "lower"): ("a/b -> -infinity: a lognormal limit", "lognorm"),
                  (0, "upper"): ("a/b -> +infinity: a (reflected) lognormal limit", ""),
                  (1, "lower"): ("b -> infinity: the normal limit", "norm")},
    "gamma": {(0, "lower"): ("a -> infinity: the normal limit", "norm")},
    "johnsonsu@edge": {(0, "lower"): ("a/b -> -infinity: a lognormal limit", "lognorm"),
                       (1, "lower"): ("b -> infinity: the normal limit", "norm")},
    "gamma@edge": {(0, "upper"): ("a -> infinity: the normal limit", "norm")},
    "exponweib": {(0, "upper"): ("a -> infinity: the Gumbel limit (genextreme with c = 0)",
                                 "genextreme"),
                  (1, "lower"): ("c -> infinity: an exponentiated Gumbel-for-minima limit, "
                                 "which no family of the set represents", "")},
    "exponweib@edge": {(0, "upper"): ("a -> infinity: the Gumbel limit (genextreme with "
                                      "c = 0)", "genextreme")},
    "nct": {(0, "upper"): ("df -> infinity: a normal limit", "norm"),
            (1, "lower"): ("nc -> -infinity: a scaled inverse-chi limit, which no family of the "
                           "set represents", ""),
            (1, "upper"): ("nc -> +infinity: a scaled inverse-chi limit, which no family of the "
                           "set represents", "")},
}
"""Per family (an edge variant as ``name@edge``), the bounds of its own coordinates that are
limits of the family: (coordinate, side) -> (the limit in words, the family of the set that
is exactly that limit, or "")."""


OWN_NAMES: dict[str, tuple[str, ...]] = {
    "lognorm": ("s",), "johnsonsu": ("a/b", "1/b"), "gamma": ("1/sqrt(a)",),
    "exponweib": ("a", "1/c"), "nct": ("df", "atan(nc)")}
"""The shape coordinates of the own parameterisations, by name."""


FRECHET_A = 10.0
FRECHET_SHAPE = 5.0
"""exponweib with a above FRECHET_A, at its bound or with its scale at the box's lower bound,
is on its way to its Fréchet limit where c log(a) is below FRECHET_SHAPE (a Fréchet law of a
larger shape is all but the Gumbel, the limit at a fixed c) (:func:`limit_at`)."""


def limit_at(fam: Family, lower: np.ndarray, upper: np.ndarray,
             params: np.ndarray | None = None) -> tuple[str, str]:
    """Why a fit at the bounds flagged in ``lower`` and ``upper`` (per theta coordinate) stopped
    there, in words, and the family of the set that is exactly the limit it reached ("" if
    none). A shape at a bound that is a limit of the family names that limit; the location or
    scale at the search box's bound on the way there (exponweib's scale shrinks as a grows) is
    said as such; a bound that is no limit of the family is named as the box's. One limit is
    reached along two coordinates at once, so no bound names it: exponweib, the law of the
    largest of a Weibull variables with shape c, tends to a Fréchet law of shape c log(a) as
    a -> infinity and c -> 0 with c log(a) held (the scale shrinks as (log a)^(-1/c) on the
    way, to the box's bound long before a reaches its own): with a at its bound or the scale
    at its lower bound, a above FRECHET_A and c log(a) below FRECHET_SHAPE (scipy's ``params``)
    that limit is named (with no figure: the point along its path moves with a CPU's
    rounding), and genextreme with c = -1 / (c log a) is it exactly."""
    shape = float(params[1] * np.log(params[0])) if (
        fam.name == "exponweib" and params is not None and params[0] > FRECHET_A) else np.inf
    if (lower[-1] or upper[0]) and shape < FRECHET_SHAPE:
        way = "; its scale reached the search box's bound on the way" if lower[-1] else ""
        # no figure in the words: the point along the limit's path moves with the rounding of
        # the CPU, and a note compared as text must not
        return ("towards the family's Fréchet limit (a -> infinity and c -> 0 with c log(a) held: "
                f"a genextreme with c = -1 / (c log a) < 0){way}", "genextreme")
    table = LIMITS.get(f"{fam.name}@edge" if fam.edge_loc else fam.name, {})
    own = OWN_NAMES.get(fam.name) if fam.to_scipy is not None else None
    names = [*(own or fam.shapes), "location", "scale"]
    limits: list[tuple[str, str]] = []
    box: list[tuple[str, str]] = []
    for i, name in enumerate(names):
        for side, flagged in (("lower", lower[i]), ("upper", upper[i])):
            if flagged:
                found = table.get((i, side))
                (limits if found else box).append(found or (f"{name} at the search box's {side} "
                                                            "bound", ""))
    if not limits:
        return "; ".join(t for t, _ in box) + " (no limit of the family)", ""
    words = "towards the family's limit " + " and ".join(t for t, _ in limits)
    shapes_at_box = [t for t, _ in box if not t.startswith(("location", "scale"))]
    if box:
        words += f" ({', '.join(t for t, _ in box)} on the way)"
    represented = {by for _, by in limits}
    by = represented.pop() if len(represented) == 1 and not shapes_at_box else ""
    return words, by


def family(name: str) -> Family:
    """The engine's family ``name``; an unknown name lists the valid ones."""
    found = FAMILIES.get(name)
    if found is None:
        raise AnalysisError(
            f"the fitting engine has no family {name!r}; use one of {', '.join(FAMILIES)}"
        )
    return found
