"""What is measured inside a solve: the per-iteration stamping monitor (in C,
``stamp_monitor.c``, built and trusted by ``native`` and ``private_files``),
the time waited in MPI reductions (``mpi_wait.c``), PETSc's message counters and
event log, the set-up inside a solve, and the CPU load of other processes around it.
"""
