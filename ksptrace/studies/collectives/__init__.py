"""Collectives: the survey's cost models fitted to benchmark traces, reduction counts of solvers,
and the collectives report."""
