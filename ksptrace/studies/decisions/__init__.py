"""Decision maps over (P, message size): exact quadtrees, CART comparison, generated C and Python,
Open MPI rules files, where to measure next, and their report."""
