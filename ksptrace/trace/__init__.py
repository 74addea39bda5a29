"""Traces of Krylov solves: the data model (``model``), trace files (``io``), pandas tables
(``frame``), seeded synthetic traces (``synthetic``) and a labelled xarray view (:func:`to_xarray`).

Importing this package loads nothing heavy; each module loads its own libraries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import xarray as xr

    from ksptrace.trace.model import Trace


def to_xarray(trace: Trace) -> xr.Dataset:
    """``trace`` as an xarray Dataset with named dimensions ``rank``, ``iteration`` and
    ``stamp``, per-rank coordinates ``node`` and ``host``, and the trace's attributes.

    xarray is optional; without it this raises EnvironmentProblem saying how to install it.
    See :func:`ksptrace.trace.xarray_view.to_xarray`.
    """
    from ksptrace.trace.xarray_view import to_xarray as convert

    return convert(trace)
