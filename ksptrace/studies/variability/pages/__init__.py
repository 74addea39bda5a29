"""What the report shows of the variability study: its tables, its figures (:mod:`.figures`),
which figures a trace or a set gets, each run's section and the main page's overview, the study
over many traces that analyses and draws each one (:mod:`.runs`), and the study's result
(:mod:`.entry`).

The study's top layer: it builds on ``conclusions``, ``run`` and ``stats``.
"""
