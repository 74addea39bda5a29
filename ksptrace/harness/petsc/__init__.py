"""Finding, starting and reading PETSc: petsc4py and the solver processes' environment, the
differences between petsc4py versions, PETSc's KSP and PC type names, and which build a
process loaded.
"""
