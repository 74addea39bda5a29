"""PETSc SNES tutorial ex48 (v3.18): hydrostatic (Blatter-Pattyn) ice flow, reimplemented with
petsc4py and numpy. ``ksptrace.problems.iceflow.problem.build(comm, n, options)`` returns an
``IceFlow`` instance. The package itself imports nothing, so that its pure parts (``grid``)
serve a process without PETSc: ``ksptrace run`` names a trace by the grid's unknowns."""
