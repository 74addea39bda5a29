"""The variability study's statistics: KS tests between ranks, node variances, distribution
fits and their quadrature, the runtime models, Monte Carlo, outliers, quantiles by selection,
the variance split, the wait penalty and the injected noise's known truth.

Pure functions of arrays, and the study's lowest layer: nothing here imports the rest of the
study (pyproject.toml's ``variability-layers`` contract).
"""
