"""The declaration of a problem: its name, help, parameters and where its build function lives.

Pure: it names a module and imports it only when the problem is built.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ksptrace.errors import UsageError
from ksptrace.params import Param

if TYPE_CHECKING:
    from ksptrace.problems.base import ProblemBuilder, ProblemInstance


@dataclass(frozen=True)
class ProblemInfo:
    name: str
    help: str
    module: str
    """Module with a ``build(comm, n, options) -> ProblemInstance`` function (imports PETSc)."""
    params: tuple[Param, ...] = ()
    """Problem-specific parameters; they become CLI flags and trace attributes."""
    function: str = "build"
    """The name of the build function in :attr:`module`."""
    run_defaults: Mapping[str, Any] = field(default_factory=dict)
    """Run parameters whose default differs for this problem (``ksptrace run`` uses them when
    the flag is not given), e.g. fewer forced iterations where the default would take the
    solve to machine precision and a breakdown."""
    unknowns: Callable[[int, Mapping[str, Any]], int] | None = None
    """The problem's global unknowns for ``n`` and its parameters, known without PETSc, where
    they differ from n (iceflow's grid); ``ksptrace run``'s file names say them. None: n."""

    def builder(self) -> ProblemBuilder:
        mod = importlib.import_module(self.module)
        try:
            builder: ProblemBuilder = getattr(mod, self.function)
        except AttributeError:
            raise UsageError(
                f"problem '{self.name}': module '{self.module}' has no function "
                f"'{self.function}'; name the function that builds the problem"
            ) from None
        return builder

    def build(self, comm: Any, n: int, options: Mapping[str, Any]) -> ProblemInstance:
        """Build the problem; a build function that returns no ProblemInstance is refused."""
        from ksptrace.problems.base import ProblemInstance

        instance = self.builder()(comm, n, options)
        if not isinstance(instance, ProblemInstance):
            raise UsageError(
                f"problem '{self.name}': {self.module}.{self.function}() returned "
                f"{type(instance).__name__!r}, not a ksptrace.problems.base.ProblemInstance; "
                "return an instance of a ProblemInstance subclass"
            )
        return instance
