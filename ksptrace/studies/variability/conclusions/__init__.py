"""What the variability study concludes from analysed runs: the findings rows and sentences,
the report's answers, the fastest-solver ranking, held-out predictions and Q1's reasons.

Pure; builds on :mod:`ksptrace.studies.variability.run` and ``stats``.
"""
