"""One run's configuration: its declared parameters, its settings and outcome, the solver set
and checked before the timed solve, and what a trace records of where and how it was made.
"""
