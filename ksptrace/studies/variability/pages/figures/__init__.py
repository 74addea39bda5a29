"""The variability study's figures, one function each, built without pyplot (no global state,
Agg canvas) so that reports are drawn off-screen.

Times come in seconds and are shown in the unit that suits them (s, ms, µs, ns), densities in
1/unit. Long tails are clipped at a stated quantile (``time_axis``) so that the bulk fills the
axis; the caller says so in the caption with ``TimeAxis.describe``. Figures are about 1050 px
wide (10.5 in at 100 dpi), the width of the report's column.

- :mod:`.axes`: units, the time axis, histogram counts (what every figure shares);
- :mod:`.per_run`: histograms per rank, iteration against rank, the colormap, the KS heatmap;
- :mod:`.fits`: the bulk fit, the uniform model, cycles, Johnson S_U curves;
- :mod:`.across_runs`: scaling with P or n, the solvers side by side;
- :mod:`.waits`: the rank x iteration heat map of the waits in MPI reductions.

The package is lazy (PEP 562, :mod:`ksptrace.studies.public`): importing it imports no
matplotlib; a name's module is imported the first time the name is used, so an analysis without
figures never loads matplotlib (issue 35).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ksptrace.studies.public import lazy

if TYPE_CHECKING:
    from ksptrace.studies.variability.pages.figures.across_runs import (
        ScalingPoint,
        SolverTimes,
        scaling,
        solver_distributions,
        solver_times,
    )
    from ksptrace.studies.variability.pages.figures.axes import (
        MAX_IMAGE_ROWS,
        TimeAxis,
        binned_counts,
        finite,
        fmt_time,
        is_constant,
        time_axis,
        unit_for,
    )
    from ksptrace.studies.variability.pages.figures.fits import (
        bulk_fit,
        cycle_histograms,
        scaling_curves,
        uniform_fits,
        uniform_parameters,
    )
    from ksptrace.studies.variability.pages.figures.per_run import (
        colormap,
        colour_is_log,
        colour_limits,
        iteration_vs_rank,
        ks_heatmap,
        rank_histograms,
    )
    from ksptrace.studies.variability.pages.figures.waits import wait_map

PUBLIC: dict[str, tuple[str, str]] = {
    "binned_counts": ("axes", "binned_counts"),
    "bulk_fit": ("fits", "bulk_fit"),
    "colormap": ("per_run", "colormap"),
    "colour_is_log": ("per_run", "colour_is_log"),
    "colour_limits": ("per_run", "colour_limits"),
    "cycle_histograms": ("fits", "cycle_histograms"),
    "finite": ("axes", "finite"),
    "fmt_time": ("axes", "fmt_time"),
    "is_constant": ("axes", "is_constant"),
    "iteration_vs_rank": ("per_run", "iteration_vs_rank"),
    "ks_heatmap": ("per_run", "ks_heatmap"),
    "MAX_IMAGE_ROWS": ("axes", "MAX_IMAGE_ROWS"),
    "rank_histograms": ("per_run", "rank_histograms"),
    "scaling": ("across_runs", "scaling"),
    "scaling_curves": ("fits", "scaling_curves"),
    "ScalingPoint": ("across_runs", "ScalingPoint"),
    "solver_distributions": ("across_runs", "solver_distributions"),
    "solver_times": ("across_runs", "solver_times"),
    "SolverTimes": ("across_runs", "SolverTimes"),
    "time_axis": ("axes", "time_axis"),
    "TimeAxis": ("axes", "TimeAxis"),
    "uniform_fits": ("fits", "uniform_fits"),
    "uniform_parameters": ("fits", "uniform_parameters"),
    "unit_for": ("axes", "unit_for"),
    "wait_map": ("waits", "wait_map"),
}

__all__ = [
    "MAX_IMAGE_ROWS",
    "ScalingPoint",
    "SolverTimes",
    "TimeAxis",
    "binned_counts",
    "bulk_fit",
    "colormap",
    "colour_is_log",
    "colour_limits",
    "cycle_histograms",
    "finite",
    "fmt_time",
    "is_constant",
    "iteration_vs_rank",
    "ks_heatmap",
    "rank_histograms",
    "scaling",
    "scaling_curves",
    "solver_distributions",
    "solver_times",
    "time_axis",
    "uniform_fits",
    "uniform_parameters",
    "unit_for",
    "wait_map",
]
__getattr__ = lazy(__name__, PUBLIC)
