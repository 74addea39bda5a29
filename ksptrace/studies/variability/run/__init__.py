"""The analysis of one trace (:mod:`.pipeline`, one pure function of an in-memory Trace), its
options and flags, the stationary models, the steps run on the second core (:mod:`.lanes`), and
the per-trace cache of analysed results (:mod:`.batch`, :mod:`.sealed`).

Builds on :mod:`ksptrace.studies.variability.stats` only.
"""
