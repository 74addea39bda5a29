# ksptrace: `make demo` runs the demo campaign and its report; `make test` runs the tests.
# Both bootstrap a fresh Debian 12 machine first (scripts/bootstrap.sh, idempotent).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
DEMO_OUT ?= demo-out

DEBIAN_PETSC_DIR := /usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real
export PETSC_DIR ?= $(DEBIAN_PETSC_DIR)
export OPENBLAS_NUM_THREADS := 1
export OMP_NUM_THREADS := 1
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1

.PHONY: setup demo noise-demo test lint bench collectives-sweep stack-pypi test-stack stack-mpich stack-mpich-petsc
setup:
	@bash scripts/bootstrap.sh

demo: setup
	$(PY) -m ksptrace demo --out $(DEMO_OUT) --campaign examples/demo.toml --scaling examples/oversubscription.toml

# Allreduce over every Open MPI tuned algorithm x 8 B..1 MiB x P = 2, 4, 8, then its report
# (runs-collectives/report/collectives.md names the fastest algorithm per (P, m)); resumes.
collectives-sweep: setup
	$(PY) -m ksptrace campaign run --backend local examples/collectives_allreduce.toml
	$(PY) -m ksptrace analyze runs-collectives/traces/*.h5 --out runs-collectives/report

# pytest exits 5 when it collected no test: that is a failure of the suite, say so plainly.
test:
	@bash scripts/bootstrap.sh --test
	@KSPTRACE_REQUIRE_PETSC=1 $(PY) -m pytest -q $(PYTEST_ARGS); code=$$?; \
	if [ $$code -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; exit $$code

# The current PETSc from PyPI, built once into ~/.cache/ksptrace (about 15 minutes on 2 cores;
# resumable), and the tests that must hold on it (docs/install.md).
stack-pypi:
	@bash scripts/bootstrap.sh --stack pypi

test-stack:
	@bash scripts/test_stack.sh $(PYTEST_ARGS)

# MPICH beside Open MPI, with an mpi4py built against it, for the collectives study
# (docs/collectives.md); `make test` builds it too.
stack-mpich:
	@bash scripts/bootstrap.sh --mpich

# PETSc and petsc4py (the PyPI stack's versions) built against MPICH into that venv, for
# `ksptrace run`/`trace` on MPICH (docs/install.md; about 30 minutes once; `make test` builds it).
stack-mpich-petsc:
	@bash scripts/bootstrap.sh --mpich-petsc

lint: setup
	$(VENV)/bin/ruff check ksptrace tests bench conftest.py
	$(VENV)/bin/mypy

bench: setup
	for b in bench/*.py; do $(PY) $$b || exit 1; done

# The noise demo (issue 14, docs/noise.md): 32 solves with injected detours, about 6 minutes on 2 cores;
# then the KS asymmetry with a known truth (issue 33): 40 solves with a different noise per rank.
noise-demo: setup
	$(PY) -m ksptrace demo --out $(DEMO_OUT)/noise --campaign examples/noise.toml --scaling none --paired none
	$(PY) -m ksptrace demo --out $(DEMO_OUT)/noise-ranks --campaign examples/noise_ranks.toml --scaling none --paired none
