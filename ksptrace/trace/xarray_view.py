"""One trace as an xarray Dataset: the arrays of a :class:`Trace` with named, labelled axes.

xarray is an optional dependency of ksptrace: it is imported only when a Dataset is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ksptrace.errors import EnvironmentProblem
from ksptrace.trace.iteration_events import EVENTS
from ksptrace.trace.model import Trace

if TYPE_CHECKING:
    import xarray as xr

INSTALL_HINT = "install it with 'apt-get install python3-xarray' (Debian) or 'pip install xarray'"


def _xarray() -> Any:
    try:
        import xarray
    except ImportError:
        raise EnvironmentProblem(
            f"to_xarray needs xarray, which is not installed; {INSTALL_HINT}"
        ) from None
    return xarray


def to_xarray(trace: Trace) -> xr.Dataset:
    """``trace`` as an xarray Dataset.

    Dimensions: ``rank`` (0..P-1), ``iteration`` (1..K, the k of T_p^k) and ``stamp`` (0..K,
    the monitor calls). Variables: ``iteration_seconds`` (rank, iteration), ``stamps`` (rank,
    stamp), ``residual_norms`` (stamp), ``solve_seconds`` (rank) and, for a run with injected
    noise, ``injected_seconds`` (rank, iteration); with wait times, ``wait_seconds`` and
    ``mpi_calls`` (rank, iteration); with ``--events``, ``event_seconds`` (rank, iteration,
    event), the coordinate ``event`` naming MatMult, PCApply and VecReduce. Coordinates along
    ``rank``: ``node`` (the
    node id) and ``host`` (its name), so ``ds.iteration_seconds.groupby("node")`` works. The
    Dataset's attributes are the trace's (a flat dict, as :attr:`Trace.attrs`), plus ``path``
    when the trace was read from a file.
    """
    xarray = _xarray()
    nprocs, iterations = trace.nprocs, trace.iterations
    seconds = {"units": "s"}
    data: dict[str, Any] = {
        "iteration_seconds": (("rank", "iteration"), np.array(trace.iteration_seconds),
                              {**seconds, "long_name": "T_p^k, time of iteration k on rank p"}),
        "stamps": (("rank", "stamp"), np.array(trace.stamps),
                   {**seconds, "long_name": "MPI.Wtime() at each KSP monitor call"}),
        "residual_norms": (("stamp",), np.array(trace.residual_norms),
                           {"long_name": "residual norm passed to the KSP monitor"}),
        "solve_seconds": (("rank",), np.array(trace.solve_seconds),
                          {**seconds, "long_name": "KSPSolve time from PETSc's event log"}),
    }
    if trace.injected_seconds is not None:
        data["injected_seconds"] = (
            ("rank", "iteration"), np.array(trace.injected_seconds),
            {**seconds, "long_name": "detour injected into each iteration"},
        )
    if trace.wait_seconds is not None and trace.mpi_calls is not None:
        data["wait_seconds"] = (
            ("rank", "iteration"), np.array(trace.wait_seconds),
            {**seconds, "long_name": "time inside the solve's MPI reductions in iteration k"},
        )
        data["mpi_calls"] = (("rank", "iteration"), np.array(trace.mpi_calls),
                             {"long_name": "MPI reductions started in iteration k"})
    extra: dict[str, Any] = {}
    if trace.event_seconds is not None:
        data["event_seconds"] = (
            ("rank", "iteration", "event"), np.array(trace.event_seconds),
            {**seconds, "long_name": "time in each kind of PETSc event in iteration k"},
        )
        extra["event"] = np.array(EVENTS, dtype=object)
    coords = {
        **extra,
        "rank": np.arange(nprocs),
        "iteration": np.arange(1, iterations + 1),
        "stamp": np.arange(iterations + 1),
        "node": ("rank", np.array(trace.node_ids)),
        "host": ("rank", np.array(trace.hostnames, dtype=object)),
    }
    attrs: dict[str, Any] = dict(trace.attrs)
    if trace.path is not None:
        attrs.setdefault("path", trace.path)
    dataset: xr.Dataset = xarray.Dataset(data, coords=coords, attrs=attrs)
    return dataset
