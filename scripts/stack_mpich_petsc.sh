#!/usr/bin/env bash
# PETSc and petsc4py from PyPI built against MPICH (issues 64 and 65), into the MPICH stack's
# venv (scripts/stack_mpich.sh, built first when missing), so that ksptrace's solves, waits and
# `ksptrace trace` run on MPICH as they do on Debian's Open MPI.
#
#   scripts/bootstrap.sh --mpich-petsc     (or: make stack-mpich-petsc)
#
# The versions are the PyPI stack's (scripts/stack-pypi.txt). PETSc is configured minimal: C and
# C++ through MPICH's wrappers (MPICC=mpicc.mpich, MPICXX=mpicxx.mpich: PETSc's setup.py takes the
# compilers from there, never from --with-cc), no Fortran, no external package, the system's
# BLAS/LAPACK, and mpiexec.mpich as its launcher. petsc4py is built against that PETSc, Debian's
# numpy (the venv's, through the system site packages) and the venv's MPICH mpi4py.
#
# Everything lives in ~/.cache/ksptrace/mpich-<version>/petsc-<PETSc version>/ (never the repo):
# the PETSc source as PyPI ships it (its tutorials are what the tests build and trace), the two
# wheels, build.log and the stamps. Resumable: each wheel once built stays, so a rerun after a
# failure or Ctrl-C starts at the step that did not finish, and a venv that stack_mpich.sh made
# afresh gets PETSc back from the wheels in seconds. Locked: a second build waits for the first
# and then finds it done. Progress every 30 s on stderr; the venv's python on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
PINS=$PWD/scripts/stack-pypi.txt
PETSC_VERSION=$(sed -n 's/^petsc==//p' "$PINS")
start=$SECONDS
say() { printf 'stack-mpich-petsc [%dm%02ds] %s\n' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)) "$*" >&2; }

APT=(libopenblas-dev g++ make python3-dev)
missing=()
if command -v dpkg-query >/dev/null; then
  for p in "${APT[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
    say "missing Debian packages: ${missing[*]}; install them as root (apt-get install ${missing[*]}) and rerun"
    exit 3
  fi
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  say "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY=$(bash scripts/stack_mpich.sh)       # the MPICH venv; exits 3 itself when it cannot be built
VENV=$(dirname "$(dirname "$PY")")
STACK=$(dirname "$VENV")/petsc-$PETSC_VERSION
WHEELS=$STACK/wheels
LOG=$STACK/build.log
STAMP=$STACK/.done
# Ready: petsc4py of the pinned version, on a PETSc in this venv, with MPICH's mpi4py, and no
# Open MPI library in the process.
check='import sys
import petsc4py
petsc4py.init([])
from petsc4py import PETSc
from mpi4py import MPI
version = ".".join(map(str, PETSc.Sys.getVersion()))
maps = open("/proc/self/maps").read()
sys.exit(version != sys.argv[1] or "MPICH" not in MPI.Get_library_version()
         or not petsc4py.get_config()["PETSC_DIR"].startswith(sys.prefix)
         or "libmpi.so.40" in maps or "libmpich" not in maps)'
ready() { [ -f "$STAMP" ] && cmp -s "$PINS" "$STAMP" && env -u PETSC_DIR -u PETSC_ARCH "$PY" -c "$check" "$PETSC_VERSION" 2>/dev/null; }
if ready; then echo "$PY"; exit 0; fi

mkdir -p "$WHEELS"
exec 9> "$STACK.lock"
flock 9  # a second builder waits here, then finds the build done
if ready; then echo "$PY"; exit 0; fi
rm -f "$STAMP"

# Run a slow command with its output in the log and a progress line every 30 s.
slow() {
  local what=$1; shift
  echo "=== $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) $what: $*" >> "$LOG"
  "$@" >> "$LOG" 2>&1 &
  local pid=$! t0=$SECONDS next=$((SECONDS + 30))
  trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; echo; say "interrupted; rerun to resume"; exit 130' INT TERM
  say "$what (log: $LOG)"
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if ((SECONDS >= next)); then
      say "$what: $(((SECONDS - t0) / 60)) min $(((SECONDS - t0) % 60)) s so far"; next=$((next + 30))
    fi
  done
  trap - INT TERM
  wait "$pid" || { say "$what failed; the last lines of $LOG:"; tail -n 20 "$LOG" >&2; exit 1; }
  echo "=== $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) $what: done in $((SECONDS - t0)) s" >> "$LOG"
}

unset PETSC_DIR PETSC_ARCH
export MPICC=mpicc.mpich MPICXX=mpicxx.mpich
export PETSC_CONFIGURE_OPTIONS="--with-fc=0 --with-mpiexec=mpiexec.mpich"
say "building PETSc $PETSC_VERSION and petsc4py against MPICH into $VENV (wheels and log in $STACK; about 30 minutes on 2 cores the first time, seconds from its wheels)"
SDIST=$STACK/petsc-$PETSC_VERSION.tar.gz
if [ ! -f "$SDIST" ]; then
  rm -rf "$STACK/download"
  slow "PETSc $PETSC_VERSION source" "$PY" -m pip download --disable-pip-version-check \
    --no-cache-dir --no-deps --no-binary petsc -d "$STACK/download" "petsc==$PETSC_VERSION"
  mv "$STACK/download/petsc-$PETSC_VERSION.tar.gz" "$SDIST"
  rm -rf "$STACK/download"
fi
# PETSc's KSP tutorials of this version, for the tests (ex2 traced under mpiexec.mpich)
if [ ! -f "$STACK/tutorials/ex2.c" ]; then
  rm -rf "$STACK/tutorials.new" && mkdir "$STACK/tutorials.new"
  tar -xzf "$SDIST" -C "$STACK/tutorials.new" --strip-components=5 \
    "petsc-$PETSC_VERSION/src/ksp/ksp/tutorials"
  rm -rf "$STACK/tutorials" && mv "$STACK/tutorials.new" "$STACK/tutorials"
fi
# The wheels bypass pip's cache, which keys a wheel built from an sdist by its name alone (the
# PyPI stack's Open MPI wheel has the same name).
ls "$WHEELS"/petsc-"$PETSC_VERSION"-*.whl >/dev/null 2>&1 || \
  slow "PETSc $PETSC_VERSION build" "$PY" -m pip wheel --disable-pip-version-check --no-cache-dir \
    -c "$PINS" --no-deps -w "$WHEELS" "$SDIST"
slow "PETSc install" "$PY" -m pip install --disable-pip-version-check --no-deps --force-reinstall \
  "$WHEELS"/petsc-"$PETSC_VERSION"-*.whl
PETSC_DIR=$("$PY" -c "import petsc; print(petsc.get_petsc_dir())")
export PETSC_DIR
grep -q "^PCC = mpicc.mpich" "$PETSC_DIR/lib/petsc/conf/petscvariables" || {
  say "the PETSc in $PETSC_DIR was not configured with mpicc.mpich; see $LOG"; exit 1; }
if ! ls "$WHEELS"/petsc4py-"$PETSC_VERSION"-*.whl >/dev/null 2>&1; then
  # petsc4py's build needs Cython 3 (Debian's is older) and sees this venv's numpy and mpi4py.
  # It keeps the venv's own setuptools (66 on Debian 12): Debian's numpy 1.24 hooks its
  # numpy.distutils into the compile step, which needs distutils.msvccompiler, gone from the
  # setuptools of the pins (84).
  numpy_pin=$("$PY" -c "import numpy; print(numpy.__version__)")
  slow "petsc4py build tools" "$PY" -m pip install --disable-pip-version-check --no-cache-dir \
    "$(grep "^cython==" "$PINS")" "numpy==$numpy_pin"
  slow "petsc4py build" "$PY" -m pip wheel --disable-pip-version-check --no-cache-dir -c "$PINS" \
    --no-deps --no-build-isolation -w "$WHEELS" "petsc4py==$PETSC_VERSION"
fi
slow "petsc4py install" "$PY" -m pip install --disable-pip-version-check --no-deps --force-reinstall \
  "$WHEELS"/petsc4py-"$PETSC_VERSION"-*.whl
env -u PETSC_DIR "$PY" -c "$check" "$PETSC_VERSION" || {
  say "petsc4py in $VENV does not load PETSc $PETSC_VERSION on MPICH alone; see $LOG"; exit 1; }
cp "$PINS" "$STAMP"
say "ready: $(env -u PETSC_DIR "$PY" -c 'import petsc4py; petsc4py.init([]); from petsc4py import PETSc; from mpi4py import MPI
print("PETSc", ".".join(map(str, PETSc.Sys.getVersion())), "|", MPI.Get_library_version().splitlines()[0])')"
echo "$PY"
