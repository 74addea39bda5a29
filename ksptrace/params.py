"""Declared parameters: each one once, typed, with its default and one line of help.

CLI flags, campaign-file keys and HDF5 attributes are all derived from these declarations.
This module is pure (no PETSc, no MPI).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ksptrace.errors import UsageError


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
        if self.minimum is not None and converted < self.minimum:
            raise UsageError(f"{label} must be >= {self.minimum:g}, got {converted!r}")
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
