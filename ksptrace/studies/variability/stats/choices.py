"""The variability study's user-visible choices, in a module that imports nothing heavy: the
command line offers them (``ksptrace analyze --help`` must not wait for scipy or matplotlib).
"""

from __future__ import annotations

PAPER_CANDIDATES: tuple[str, ...] = (
    "johnsonsu",
    "nct",
    "lognorm",
    "gamma",
    "norm",
    "genextreme",
    "exponweib",
)
"""The families the paper tried: Johnson S_U first, non-central t second, and the usual others."""
DEFAULT_CANDIDATES: tuple[str, ...] = tuple(f for f in PAPER_CANDIDATES if f != "nct")
"""The families fitted unless ``--candidates`` says otherwise: the paper's without nct, whose cdf
(scipy.special.nctdtr) costs as much as the six others' together, and whose likelihood is flat
along df on most iteration-time samples. ``--candidates`` with nct fits it too, with its status
(issue 51)."""
FITTABLE: tuple[str, ...] = (*PAPER_CANDIDATES, "cauchy")
"""The families the fitting engine knows (``ksptrace.studies.fits.FAMILIES``, a test checks)."""
INDEPENDENT_UNITS = ("auto", "nodes", "ranks")
"""What the analysis treats as independent: the nodes of a trace, or its ranks; "auto" (the
default) takes the ranks of a trace from one node and the nodes of a trace from several."""
HEADLINE_MODEL = "nonstationary"
"""The prediction the report's headlines and run table quote, fixed before any measurement is
seen: the non-stationary model (Σ_k E[max of N] of U(a_k, a_k + s_k); Σ_k μ_k for pipelined
methods) uses the run's own per-iteration spread and needs no choice of fitted family. Table 1
gives every other model and bound beside it; none is ever chosen by its error."""
CACHE_SUFFIX = ".cache"
"""The default cache folder is the report folder's name plus this suffix, beside it."""
