/* A small PETSc program of ksptrace's own, for `ksptrace trace`'s tests on any PETSc (the PyPI
   `petsc` package ships no tutorials): the 1-D Laplacian tridiag(-1, 2, -1) of -n rows on
   PETSC_COMM_WORLD, solved -solves times by one KSP (CG with Jacobi unless the options say
   otherwise), each time for a right-hand side made from a known solution whose sign
   pattern changes with the solve, so the solves differ. Prints each solve's iteration count and
   error norm. With -prefixes a_,b_,... each solve has a KSP of its own with that options prefix,
   created just before it and destroyed just after (so a new KSP may take a destroyed one's
   address); with -setup the program calls KSPSetUp itself before each solve; with -exec PATH
   the process becomes PATH (execl, no arguments) after PetscFinalize; with -time it prints the
   median and the least of its KSPSolve calls' MPI_Wtime spans (bench/trace_short_solves.py);
   with -fork a child process is forked after each solve and exits at once (exit(): its
   destructors run), as a program that starts helpers does.
   Builds against PETSc 3.18 to 3.26. */
#include <petscksp.h>
#include <sys/wait.h>
#include <unistd.h>

static const char help[] = "1-D Laplacian solved several times by one KSP.\n"
                           "  -n <rows>      rows of the operator (default 200)\n"
                           "  -solves <k>    solves, each with its own right-hand side (default 2)\n"
                           "  -prefixes <p,q,...>  one KSP per solve, created and destroyed\n"
                           "  -setup         call KSPSetUp before each KSPSolve\n"
                           "  -exec <path>   become the program path when done (execl)\n"
                           "  -time          print the median and least KSPSolve wall time\n"
                           "  -fork          fork a child that exits after each solve\n";

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static PetscErrorCode make_ksp(Mat A, const char *prefix, KSP *ksp) {
  PC pc;
  PetscFunctionBeginUser;
  PetscCall(KSPCreate(PETSC_COMM_WORLD, ksp));
  PetscCall(KSPSetOperators(*ksp, A, A));
  PetscCall(KSPSetType(*ksp, KSPCG));
  PetscCall(KSPGetPC(*ksp, &pc));
  PetscCall(PCSetType(pc, PCJACOBI));
  PetscCall(KSPSetTolerances(*ksp, 1e-8, PETSC_DEFAULT, PETSC_DEFAULT, PETSC_DEFAULT));
  if (prefix) PetscCall(KSPSetOptionsPrefix(*ksp, prefix));
  PetscCall(KSPSetFromOptions(*ksp));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv) {
  PetscInt n = 200, solves = 2, first, last, row, s, its, nprefixes = 16;
  Mat A;
  Vec x, b, exact;
  KSP ksp = NULL;
  PetscReal error;
  char *prefixes[16];
  PetscBool turns = PETSC_FALSE, setup = PETSC_FALSE, exec = PETSC_FALSE, timed = PETSC_FALSE;
  PetscBool forks = PETSC_FALSE;
  double *spans = NULL, t0;
  char next[4096] = "";

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-solves", &solves, NULL));
  PetscCall(PetscOptionsGetStringArray(NULL, NULL, "-prefixes", prefixes, &nprefixes, &turns));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-setup", &setup, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-exec", next, sizeof next, &exec));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-time", &timed, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-fork", &forks, NULL));
  if (turns) solves = nprefixes;

  PetscCall(MatCreate(PETSC_COMM_WORLD, &A));
  PetscCall(MatSetSizes(A, PETSC_DECIDE, PETSC_DECIDE, n, n));
  PetscCall(MatSetFromOptions(A));
  PetscCall(MatSeqAIJSetPreallocation(A, 3, NULL));
  PetscCall(MatMPIAIJSetPreallocation(A, 3, NULL, 1, NULL));
  PetscCall(MatGetOwnershipRange(A, &first, &last));
  for (row = first; row < last; ++row) {
    PetscScalar v[3] = {-1.0, 2.0, -1.0};
    PetscInt cols[3] = {row - 1, row, row + 1};
    if (row == 0) PetscCall(MatSetValues(A, 1, &row, 2, cols + 1, v + 1, INSERT_VALUES));
    else if (row == n - 1) PetscCall(MatSetValues(A, 1, &row, 2, cols, v, INSERT_VALUES));
    else PetscCall(MatSetValues(A, 1, &row, 3, cols, v, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecDuplicate(x, &exact));

  if (!turns) PetscCall(make_ksp(A, NULL, &ksp));
  if (timed) PetscCall(PetscMalloc1(solves, &spans));
  for (s = 0; s < solves; ++s) {
    for (row = first; row < last; ++row) {
      PetscScalar u = (PetscScalar)(1.0 + (PetscReal)((row * (s + 1)) % 7) / 7.0);
      PetscCall(VecSetValue(exact, row, u, INSERT_VALUES));
    }
    PetscCall(VecAssemblyBegin(exact));
    PetscCall(VecAssemblyEnd(exact));
    PetscCall(MatMult(A, exact, b));
    PetscCall(VecSet(x, 0.0));
    if (turns) PetscCall(make_ksp(A, prefixes[s], &ksp));
    if (setup) PetscCall(KSPSetUp(ksp));
    t0 = MPI_Wtime();
    PetscCall(KSPSolve(ksp, b, x));
    if (timed) spans[s] = MPI_Wtime() - t0;
    if (forks) {
      pid_t child = fork();
      if (child == 0) exit(0);
      if (child > 0) waitpid(child, NULL, 0);
    }
    PetscCall(KSPGetIterationNumber(ksp, &its));
    if (turns) PetscCall(KSPDestroy(&ksp));
    if (turns) PetscCall(PetscFree(prefixes[s]));
    PetscCall(VecAXPY(x, -1.0, exact));
    PetscCall(VecNorm(x, NORM_2, &error));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "solve %" PetscInt_FMT ": %" PetscInt_FMT
                          " iterations, norm of error %g\n", s, its, (double)error));
  }

  if (timed && solves > 0) {
    qsort(spans, (size_t)solves, sizeof *spans, by_value);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "kspsolve median %.9g least %.9g\n",
                          spans[solves / 2], spans[0]));
  }
  PetscCall(PetscFree(spans));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&exact));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(PetscFinalize());
  if (exec) execl(next, next, (char *)NULL);
  return exec ? 1 : 0;  /* execl returns only when it failed */
}
