#!/usr/bin/env bash
# make test-stack: build the PyPI stack if needed (scripts/stack_pypi.sh, cached), then run on it
# the tests that must hold on every stack: harness (run, record, the C monitor, event counts,
# and `ksptrace trace` on a C program built against the stack's PETSc and on petsc4py programs,
# tests/harness/hook; the MPI wait and --events known-truth tests of issue 65 among them:
# tests/harness/test_waits.py, test_events.py, hook/test_waits.py), problems, collectives, traces, trace's one-line errors, and
# Ctrl-C/SIGTERM during a run, and the fitting engine (its maxima and statuses as on Debian's scipy
# and numpy: tests/studies/fits). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(bash scripts/stack_pypi.sh)
PETSC_DIR=$("$PY" -c "import petsc; print(petsc.get_petsc_dir())")
export PETSC_DIR PYTHONPATH=$PWD KSPTRACE_REQUIRE_PETSC=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset PETSC_ARCH
echo "test-stack: $("$PY" -c 'import petsc4py; print("petsc4py", petsc4py.__version__)') in ${PY%/bin/python}" >&2
code=0
"$PY" -m pytest -q -p no:cacheprovider tests/harness tests/problems tests/collectives tests/trace tests/studies/fits \
  tests/cli/test_signals.py tests/cli/test_trace.py "$@" || code=$?
if [ "$code" -eq 5 ]; then echo "make test-stack: pytest collected no tests" >&2; exit 1; fi
exit "$code"
