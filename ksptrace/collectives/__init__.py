"""MPI collectives microbenchmarks: operations, algorithm forcing, the timing driver."""
