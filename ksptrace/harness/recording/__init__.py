"""``ksptrace.record``: every KSPSolve of a block of a user's petsc4py program traced, with
its pre- and post-solve hooks in C (many small solves) or in Python.
"""
