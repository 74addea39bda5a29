"""Controlled noise: the detour model of a run, declared by one string.

A spec reads ``DIST[:key=value,...]``, for example::

    none
    fixed:value=50us,p=0.1
    exponential:scale=20us,p=0.5,per=node,seed=3
    lognormal:median=10us,sigma=1.5,p=0.2
    pareto:scale=10us,shape=1.5,p=0.05
    uniform:low=0,high=100us

``p`` is the probability of a detour per iteration per rank (per node with ``per=node``: then
all ranks of a node detour together, as OS noise does), 1 by default; ``seed`` makes the draw
reproducible (0 by default); ``ranks`` limits the detours to some ranks (``ranks=0``,
``ranks=0-3``, ``ranks=0+2``; with ``per=node``, the nodes of those numbers), all by default.
Durations take a unit (s, ms, us, ns; seconds when bare).

Specs joined by ``;`` add up, each with its own ranks: ``fixed:value=200us,ranks=1;
uniform:low=0,high=150us,p=0.5,ranks=0`` gives rank 1 a fixed extra cost in every iteration and
rank 0 smaller random detours (a different noise per rank; at most MAX_PARTS specs).
Pure: no PETSc, no MPI.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Any

from ksptrace.errors import UsageError
from ksptrace.noise import ranks as rank_list

DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "none": (),
    "fixed": ("value",),
    "exponential": ("scale",),
    "lognormal": ("median", "sigma"),
    "pareto": ("scale", "shape"),
    "uniform": ("low", "high"),
}
"""Each detour distribution and its parameters (all required)."""

DURATIONS = frozenset({"value", "scale", "median", "low", "high"})
"""Parameters that are durations (they take a unit); the others are plain numbers."""

COMMON = ("p", "per", "seed", "ranks")
UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
PER = ("rank", "node")
MAX_DETOUR_SECONDS = 10.0
"""A single detour longer than this is almost certainly a unit mistake; a run also cuts every
drawn detour to it (the trace records what was really spun)."""
MAX_MEAN_SECONDS = 1.0
"""A run refuses noise whose expected detour per iteration and rank (p times the mean) exceeds
this: it would busy-wait for hours, or forever with an infinite mean."""
TAIL_QUANTILE = 0.999
"""A run refuses noise whose detour at this quantile exceeds :data:`MAX_DETOUR_SECONDS`."""
MAX_PARTS = 16
"""Specs one noise may join with ``;``."""
MAX_SEED = 2 ** 63 - 1
"""The largest seed (a repetition's seed, ``seed`` plus the repetition, too)."""


@dataclass(frozen=True)
class NoiseSpec:
    """A validated detour model."""

    dist: str
    params: tuple[tuple[str, float], ...] = ()
    """The distribution's parameters in seconds (durations) or plain numbers, in declared order."""
    p: float = 1.0
    per: str = "rank"
    seed: int = 0
    ranks: rank_list.Intervals | None = None
    """The ranks (nodes with per=node) that detour, as sorted inclusive (first, last)
    intervals (:mod:`ksptrace.noise.ranks`); None: all of them."""
    also: tuple[NoiseSpec, ...] = ()
    """Further specs whose detours add to this one's (``spec; spec``); empty for one spec."""

    @property
    def parts(self) -> tuple[NoiseSpec, ...]:
        """Each spec of a mix on its own (one spec: itself)."""
        return (replace(self, also=()), *self.also) if self.also else (self,)

    @property
    def active(self) -> bool:
        return any(part.dist != "none" and part.p > 0 for part in self.parts)

    def reseeded(self, offset: int) -> NoiseSpec:
        """Every part's seed advanced by ``offset`` (a campaign's repetitions)."""
        first, *rest = self.parts
        if max(part.seed for part in self.parts) + offset > MAX_SEED:
            raise UsageError(f"noise '{self.text()[:120]}': a seed plus the repetition {offset} "
                             f"exceeds {MAX_SEED} (2**63 - 1); use a smaller seed")
        return replace(first, seed=first.seed + offset,
                       also=tuple(replace(r, seed=r.seed + offset) for r in rest))

    def detours_on(self, unit: int) -> bool:
        """Whether rank (or node) ``unit`` draws detours at all."""
        return self.ranks is None or rank_list.contains(self.ranks, unit)

    def units(self, nprocs: int, n_nodes: int) -> int:
        """How many of the run's ranks (nodes with per=node) draw detours from this spec."""
        total = n_nodes if self.per == "node" else nprocs
        return total if self.ranks is None else rank_list.count(self.ranks, total)

    def reach_problem(self, nprocs: int, n_nodes: int | None = None, idle: bool = False
                      ) -> str | None:
        """Why this noise names a rank (node with per=node) that a run of ``nprocs`` ranks on
        ``n_nodes`` nodes does not have (a node count not known yet is bounded by ``nprocs``);
        with ``idle``, only a spec that detours on none of the run's ranks. None: no such
        problem."""
        for part in self.parts:
            unit = "node" if part.per == "node" else "rank"
            total = nprocs if unit == "rank" or n_nodes is None else n_nodes
            if part.ranks is None or not part.active:
                continue
            inside = rank_list.count(part.ranks, total)
            if inside == rank_list.count(part.ranks) or (idle and inside > 0):
                continue
            return (f"noise '{part.text()[:120]}' "
                    f"{f'detours on no {unit} of the run: it ' if idle else ''}names {unit} "
                    f"{rank_list.beyond(part.ranks, total)}, but the run has {total} {unit}"
                    f"{'s' if total != 1 else ''}, numbered from 0"
                    f"{'' if idle else f'; name {unit}s below {total} or leave ranks= out'}")
        return None

    def param(self, name: str) -> float:
        return dict(self.params)[name]

    def scipy_args(self) -> tuple[str, dict[str, float]]:
        """The scipy.stats family and keyword arguments of one detour's size (p aside)."""
        d = dict(self.params)
        if self.dist == "exponential":
            return "expon", {"loc": 0.0, "scale": d["scale"]}
        if self.dist == "lognormal":
            return "lognorm", {"s": d["sigma"], "loc": 0.0, "scale": d["median"]}
        if self.dist == "pareto":
            return "pareto", {"b": d["shape"], "loc": 0.0, "scale": d["scale"]}
        if self.dist == "uniform":
            return "uniform", {"loc": d["low"], "scale": d["high"] - d["low"]}
        raise UsageError(f"noise '{self.dist}' has no continuous distribution")

    def mean_detour(self) -> float:
        """Expected injected time per iteration per rank: p times the mean detour (inf allowed)."""
        d = dict(self.params)
        if self.dist == "none":
            return 0.0
        if self.dist == "fixed":
            mean = d["value"]
        elif self.dist == "exponential":
            mean = d["scale"]
        elif self.dist == "lognormal":  # exp(709) is the last finite double
            exponent = d["sigma"] ** 2 / 2
            mean = math.inf if exponent > 700 else d["median"] * math.exp(exponent)
        elif self.dist == "pareto":
            mean = math.inf if d["shape"] <= 1 else d["shape"] * d["scale"] / (d["shape"] - 1)
        else:
            mean = (d["low"] + d["high"]) / 2
        return self.p * mean

    def quantile(self, q: float) -> float:
        """The ``q`` quantile of one detour's size (given that it happens)."""
        d = dict(self.params)
        if self.dist == "fixed":
            return d["value"]
        if self.dist == "exponential":
            return -d["scale"] * math.log1p(-q)
        if self.dist == "lognormal":
            z = NormalDist().inv_cdf(q)
            return d["median"] * math.exp(min(d["sigma"] * z, 700.0))
        if self.dist == "pareto":
            return d["scale"] * math.exp(min(-math.log1p(-q) / d["shape"], 700.0))
        if self.dist == "uniform":
            return d["low"] + q * (d["high"] - d["low"])
        return 0.0

    def run_problem(self) -> str | None:
        """Why a run cannot inject this noise in bounded time (None: it can)."""
        if self.also:
            return next(filter(None, (part.run_problem() for part in self.parts)), None)
        if not self.active:
            return None
        tail = self.quantile(TAIL_QUANTILE)
        if tail > MAX_DETOUR_SECONDS:
            return (f"noise '{self.text()}': one detour in a thousand would last {tail:.3g} s or "
                    f"more, beyond the {MAX_DETOUR_SECONDS:g} s a detour may take; use a lighter "
                    "tail (a larger pareto shape, a smaller lognormal sigma) or a smaller scale")
        mean = self.mean_detour()
        if mean > MAX_MEAN_SECONDS:
            return (f"noise '{self.text()}': the expected detour per iteration and rank is "
                    f"{mean:.3g} s (p times the mean), more than {MAX_MEAN_SECONDS:g} s; "
                    + ("a pareto shape of 1 or less has no finite mean: use shape > 1"
                       if math.isinf(mean) else "lower p or the detour's size"))
        return None

    def text(self) -> str:
        """The canonical spec string (what a trace records; parses back to the same spec)."""
        if self.also:
            return "; ".join(part.text() for part in self.parts)
        if self.dist == "none":
            return "none"
        parts = [f"{k}={_format(v, k in DURATIONS)}" for k, v in self.params]
        parts += [f"p={self.p:g}", f"per={self.per}", f"seed={self.seed}"]
        if self.ranks is not None:
            parts.append(f"ranks={rank_list.text(self.ranks)}")
        return f"{self.dist}:{','.join(parts)}"


def _format(value: float, duration: bool) -> str:
    if not duration or value == 0:
        return f"{value:g}"
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(value) >= factor:
            return f"{value / factor:g}{unit}"
    return f"{value / 1e-9:g}ns"


_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([a-zµ]*)\s*$")


def _number(key: str, text: str, duration: bool, spec: str) -> float:
    match = _NUMBER.match(text)
    if not match:
        raise UsageError(f"noise '{spec}': {key}={text!r} is not a number")
    value, unit = float(match.group(1)), match.group(2)
    if unit:
        if not duration:
            raise UsageError(f"noise '{spec}': {key} takes no unit, got {text!r}")
        if unit not in UNITS:
            raise UsageError(
                f"noise '{spec}': unknown unit {unit!r} in {key}; use s, ms, us or ns"
            )
        value *= UNITS[unit]
    if not math.isfinite(value):
        raise UsageError(f"noise '{spec}': {key} must be finite, got {text!r}")
    return value


def parse(spec: str) -> NoiseSpec:
    """Parse and validate a noise spec, or specs joined by ``;``; every fault is one UsageError
    line saying what to do."""
    if not isinstance(spec, str) or not spec.strip():
        raise UsageError("noise spec is empty; use 'none' or e.g. 'exponential:scale=20us,p=0.1'")
    pieces = [piece.strip() for piece in spec.strip().split(";")]
    if len(pieces) == 1:
        return _parse_one(pieces[0])
    if len(pieces) > MAX_PARTS:
        raise UsageError(f"noise '{spec.strip()}' joins {len(pieces)} specs; at most {MAX_PARTS}")
    if not all(pieces):
        raise UsageError(f"noise '{spec.strip()}' has an empty spec between its ';'")
    parts = [_parse_one(piece) for piece in pieces]
    if any(part.dist == "none" for part in parts):
        raise UsageError(f"noise '{spec.strip()}': 'none' cannot be one of several specs; "
                         "leave it out")
    return replace(parts[0], also=tuple(parts[1:]))


def _parse_one(text: str) -> NoiseSpec:
    name, _, rest = text.partition(":")
    name = name.strip().lower()
    if name not in DISTRIBUTIONS:
        raise UsageError(
            f"unknown noise distribution '{name}'; valid: {', '.join(DISTRIBUTIONS)} "
            "(e.g. 'exponential:scale=20us,p=0.1')"
        )
    wanted = DISTRIBUTIONS[name]
    given: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip().lower()
        if not eq:
            raise UsageError(f"noise '{text}': '{item}' is not key=value")
        if key not in wanted and key not in COMMON:
            valid = ", ".join((*wanted, *COMMON))
            raise UsageError(
                f"noise '{text}': unknown parameter '{key}' for {name}; valid: {valid}"
            )
        if key in given:
            raise UsageError(f"noise '{text}': '{key}' given twice")
        given[key] = value.strip()
    missing = [k for k in wanted if k not in given]
    if missing:
        raise UsageError(f"noise '{text}': {name} needs {', '.join(missing)}")
    params = tuple((k, _number(k, given[k], k in DURATIONS, text)) for k in wanted)
    p = _number("p", given.get("p", "1"), False, text)
    if not 0.0 <= p <= 1.0:
        raise UsageError(f"noise '{text}': p is a probability, must be in [0, 1], got {p:g}")
    per = given.get("per", "rank").lower()
    if per not in PER:
        raise UsageError(f"noise '{text}': per must be rank or node, got {per!r}")
    seed_text = given.get("seed", "0")
    if not re.fullmatch(r"[0-9]{1,19}", seed_text) or int(seed_text) > MAX_SEED:
        shown = seed_text if len(seed_text) <= 40 else f"{seed_text[:20]}...{len(seed_text)} chars"
        raise UsageError(f"noise '{text[:120]}': seed must be an integer from 0 to {MAX_SEED} "
                         f"(2**63 - 1), got {shown!r}")
    ranks = rank_list.parse(given["ranks"], text) if "ranks" in given else None
    out = NoiseSpec(name, params, p, per, int(seed_text), ranks)
    _check_values(out, text)
    return out


def _check_values(s: NoiseSpec, text: str) -> None:
    for key, value in s.params:
        if value < 0:
            raise UsageError(f"noise '{text}': {key} must be >= 0, got {value:g}")
    d = dict(s.params)
    positive = {"exponential": "scale", "lognormal": "median", "pareto": "scale"}
    if s.dist in positive and d[positive[s.dist]] <= 0:
        raise UsageError(f"noise '{text}': {positive[s.dist]} must be > 0")
    if s.dist == "lognormal" and d["sigma"] <= 0:
        raise UsageError(f"noise '{text}': sigma must be > 0")
    if s.dist == "pareto" and d["shape"] <= 0:
        raise UsageError(f"noise '{text}': shape must be > 0")
    if s.dist == "uniform" and d["high"] < d["low"]:
        raise UsageError(f"noise '{text}': high must be >= low")
    for key in ("value", "scale", "median", "high"):
        if key in d and d[key] > MAX_DETOUR_SECONDS:
            raise UsageError(
                f"noise '{text}': {key} = {d[key]:g} s is longer than {MAX_DETOUR_SECONDS:g} s; "
                "did you forget a unit (us, ms)?"
            )


def canonical(value: Any) -> str:
    """The canonical text of a spec given to run (what CLI flags and campaign keys hold, and
    trace attributes then record); raises UsageError for a bad spec, or one a run could not
    inject in bounded time (:meth:`NoiseSpec.run_problem`)."""
    spec = parse(str(value))
    problem = spec.run_problem()
    if problem is not None:
        raise UsageError(problem)
    return spec.text()

