"""``ksptrace trace``: per-iteration timings of any unmodified PETSc program.

``solve_hook.c`` is preloaded into the program's processes and records their KSPSolves
(``build`` builds and verifies it, ``inject`` passes it through the launcher); ``records``
reads what each process wrote, ``assemble`` makes ordinary traces of it, and ``session`` runs
the whole command.
"""
