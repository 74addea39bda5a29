"""The variability study's figures, one function each, built without pyplot (no global state,
Agg canvas) so that reports are drawn off-screen.

Times come in seconds and are shown in the unit that suits them (s, ms, µs, ns), densities in
1/unit. Long tails are clipped at a stated quantile (``time_axis``) so that the bulk fills the
axis; the caller says so in the caption with ``TimeAxis.describe``. Figures are about 1050 px
wide (10.5 in at 100 dpi), the width of the report's column.

- :mod:`.axes`: units, the time axis, histogram counts (what every figure shares);
- :mod:`.per_run`: histograms per rank, iteration against rank, the colormap, the KS heatmap;
- :mod:`.fits`: the bulk fit, the uniform model, cycles, Johnson S_U curves;
- :mod:`.across_runs`: scaling with P or n, the solvers side by side.
"""

from ksptrace.studies.variability.figures.across_runs import (
    ScalingPoint,
    SolverTimes,
    scaling,
    solver_distributions,
    solver_times,
)
from ksptrace.studies.variability.figures.axes import (
    MAX_IMAGE_ROWS,
    TimeAxis,
    binned_counts,
    finite,
    fmt_time,
    is_constant,
    time_axis,
    unit_for,
)
from ksptrace.studies.variability.figures.fits import (
    bulk_fit,
    cycle_histograms,
    scaling_curves,
    uniform_fits,
    uniform_parameters,
)
from ksptrace.studies.variability.figures.per_run import (
    colormap,
    colour_is_log,
    colour_limits,
    iteration_vs_rank,
    ks_heatmap,
    rank_histograms,
)

__all__ = [
    "MAX_IMAGE_ROWS", "ScalingPoint", "SolverTimes", "TimeAxis", "binned_counts", "bulk_fit",
    "colormap", "colour_is_log", "colour_limits", "cycle_histograms", "finite", "fmt_time",
    "is_constant", "iteration_vs_rank", "ks_heatmap", "rank_histograms", "scaling",
    "scaling_curves", "solver_distributions", "solver_times", "time_axis", "uniform_fits",
    "uniform_parameters", "unit_for",
]
