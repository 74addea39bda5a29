"""The paper's variability analysis: KS between ranks, node variance, distribution fits,
the stationary and non-stationary runtime models, Monte Carlo prediction, and their figures."""
