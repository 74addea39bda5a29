"""Declared parameters: each one once, typed, with its default and one line of help.

CLI flags, campaign-file keys and HDF5 attributes are all derived from these declarations.
This module is pure (no PETSc, no MPI).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ksptrace.errors import UsageError

INT32_MAX = 2**31 - 1
"""PETSc's default PetscInt (Debian's build) and MPI counts are 32-bit."""
BOUND_WHY: dict[str, str] = {
    "iterations": " (16 bytes per iteration and rank are kept, and PETSc counts iterations in "
                  "32 bits)",
    "n": " (PETSc's 32-bit indices)",
    "restart": " (GMRES keeps restart + 1 vectors of the local size)",
    "compute_us": " (microseconds of compute per call)",
    "repetitions": "",
}
"""Why an upper bound holds, appended to its error."""


@dataclass(frozen=True)
class Param:
    """One declared parameter."""

    name: str
    """Python and attribute name (``snake_case``); the CLI flag is ``--name-with-dashes``."""
    type: type
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    """An upper bound that keeps a run in bounded time and memory (see :data:`BOUND_WHY`)."""
    canonical: Callable[[Any], Any] | None = None
    """Validates a converted value and returns its canonical form (raising UsageError with a
    message that says what is wrong), for values with a grammar of their own (noise specs)."""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def check(self, value: Any, where: str = "") -> Any:
        """Convert and validate ``value``; raise a UsageError that names the parameter."""
        label = f"{where}{self.flag}" if not where else f"{where}: '{self.name}'"
        if value is None:
            return None
        try:
            if self.type is bool and isinstance(value, str):
                low = value.strip().lower()
                if low not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(value)
                converted: Any = low in ("true", "1", "yes")
            elif self.type is int and isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            elif self.type is int and isinstance(value, str):
                converted = int(float(value)) if "e" in value.lower() else int(value)
                if "e" in value.lower() and float(value) != converted:
                    raise ValueError(value)
            else:
                converted = self.type(value)
        except (TypeError, ValueError):
            raise UsageError(
                f"{label} must be {self.type.__name__}, got {value!r}"
            ) from None
        if self.choices is not None and converted not in self.choices:
            valid = ", ".join(str(c) for c in self.choices)
            raise UsageError(f"{label} is {converted!r}; valid values: {valid}")
        if self.type is float and not math.isfinite(converted):
            raise UsageError(f"{label} must be a finite number, got {value!r}")
        if self.minimum is not None and converted < self.minimum:
            raise UsageError(f"{label} must be >= {self.minimum:g}, got {converted!r}")
        if self.maximum is not None and converted > self.maximum:
            raise UsageError(f"{label} must be <= {self.maximum:g}, got {converted!r}"
                             f"{BOUND_WHY.get(self.name, '')}")
        if self.canonical is not None:
            try:
                converted = self.canonical(converted)
            except UsageError as exc:
                raise UsageError(f"{label}: {exc}") from None
        return converted


def by_name(params: Iterable[Param]) -> dict[str, Param]:
    return {p.name: p for p in params}


def resolve(params: Iterable[Param], values: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """Defaults overlaid by ``values`` (None means unset), each converted and checked."""
    out: dict[str, Any] = {}
    for p in params:
        value = values.get(p.name)
        out[p.name] = p.check(p.default if value is None else value, where)
    return out


def _is_subsequence(short: str, long: str) -> bool:
    """Whether the letters of ``short`` appear in ``long`` in order (``nprcs`` in ``nprocs``)."""
    rest = iter(long)
    return all(ch in rest for ch in short)


def nearest(word: str, valid: Iterable[str], aliases: Mapping[str, str] | None = None
            ) -> str | None:
    """The valid name a user most likely meant by ``word``, or None.

    Edit distance alone picks ``n`` for ``np``; people abbreviate more often than they mistype,
    so the rules go in order: the same name in another case or with dashes; a known alias
    (``np`` -> ``nprocs``); a valid name followed by junk (``gmres;``); the shortest valid name
    that ``word`` begins (``iter`` ->
    ``iterations``); the shortest that holds its letters in order with the same first letter
    (``nprcs`` -> ``nprocs``); and only then difflib's closest match (``gmers`` -> ``gmres``).
    """
    names = sorted(set(valid))
    low = word.strip().lower().replace("-", "_")
    if not names or not low:
        return None
    for name in names:
        if name.lower() == low:
            return name
    target = (aliases or {}).get(low)
    if target in names:
        return target
    token = re.match(r"[a-z0-9_]+", low)
    if token and token.group() != low:  # a valid name, then junk: "gmres; x", "jacobi "
        for name in names:
            if name.lower() == token.group():
                return name
    if len(low) >= 2:
        begun = [n for n in names if n.lower().startswith(low)]
        if begun:
            return min(begun, key=lambda n: (len(n), n))
    if len(low) >= 3:
        spread = [n for n in names if n[0].lower() == low[0] and 2 * len(low) >= len(n)
                  and _is_subsequence(low, n.lower())]
        if spread:
            return min(spread, key=lambda n: (len(n), n))
    lowered = {n.lower(): n for n in names}
    close = difflib.get_close_matches(low, list(lowered), n=1, cutoff=0.6)
    return lowered[close[0]] if close else None
