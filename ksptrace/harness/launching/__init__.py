"""Starting MPI jobs and keeping them tied to their launcher: which ``mpiexec`` and its
flags, the facts of the running job (launcher, node layout, failing together), and the
lifeline that ends a command with the process that launched it.
"""
