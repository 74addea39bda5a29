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
"""The families fitted unless ``--candidates`` says otherwise: the paper's without nct. scipy's
fit of nct costs about 60 % of a demo trace's analysis (its pdf is a hundred times slower than
the others'), and on 3 of the 4 stored demo traces it stops at Nelder-Mead's iteration limit, on a
flat ridge of the likelihood, so its parameters would be where the optimizer gave up, not a
maximum (issue 35). ``--candidates`` with nct fits it as before, with its ``converged`` flag."""
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
