#!/usr/bin/env bash
# Build the PyPI stack once, into the user's cache (never the repo): the current PETSc and
# petsc4py compiled from PyPI against Debian's Open MPI, with mpi4py, h5py and numpy, in a venv
# of its own, and ksptrace installed into it. Versions are pinned in scripts/stack-pypi.txt.
#
#   scripts/bootstrap.sh --stack pypi     (or: make stack-pypi)
#
# Resumable: each finished step leaves a stamp, and the two slow builds (PETSc, about 12 minutes
# on 2 cores, and petsc4py) leave wheels in the cache, so a rerun after Ctrl-C or a failure
# starts at the step that did not finish. Progress goes to stderr; the venv's python to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
PINS=$PWD/scripts/stack-pypi.txt
PETSC_VERSION=$(sed -n 's/^petsc==//p' "$PINS")
# KSPTRACE_STACK_INDEX=64 builds PETSc with 64-bit indices, into a cache folder of its own.
INDEX=${KSPTRACE_STACK_INDEX:-32}
case "$INDEX" in
  32) SUFFIX="" ; INDEX_OPTION="" ;;
  64) SUFFIX="-int64" ; INDEX_OPTION=" --with-64-bit-indices" ;;
  *) echo "stack-pypi: KSPTRACE_STACK_INDEX=$INDEX is not 32 or 64" >&2; exit 2 ;;
esac
STACK=${KSPTRACE_STACK_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ksptrace/stack-pypi-$PETSC_VERSION$SUFFIX}
VENV=$STACK/venv
WHEELS=$STACK/wheels
LOG=$STACK/build.log
mkdir -p "$WHEELS"
start=$SECONDS

say() { printf 'stack-pypi [%dm%02ds] %s\n' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)) "$*" >&2; }
done_step() { [ -f "$STACK/.done-$1" ] && cmp -s "$PINS" "$STACK/.done-$1"; }
mark() { cp "$PINS" "$STACK/.done-$1"; }
# Run a slow command with its output in the log and a progress line every 30 s.
slow() {
  local what=$1; shift
  echo "=== $what: $*" >> "$LOG"
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
}

# Compilers and the MPI that PETSc and mpi4py build against; PETSc's setup quietly builds
# without MPI when mpicc is missing, so its absence is an error here.
# Parallel HDF5 for h5py's MPI-IO path (ksptrace's --hdf5-path mpio), as on a cluster.
APT=(libopenmpi-dev openmpi-bin libopenblas-dev libhdf5-openmpi-dev pkg-config python3-dev
     python3-venv gcc g++ make)
missing=()
if command -v dpkg-query >/dev/null; then  # elsewhere: bring an MPI with mpicc yourself
  for p in "${APT[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
    echo "stack-pypi: missing Debian packages: ${missing[*]}; install them as root" \
      "(apt-get install ${missing[*]}) and rerun" >&2
    exit 3
  fi
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  say "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v mpicc >/dev/null || {
  echo "stack-pypi: no mpicc on PATH; install an MPI with its compiler wrappers" \
    "(Debian: libopenmpi-dev) and rerun" >&2; exit 3; }

say "building into $STACK (pins: scripts/stack-pypi.txt; PETSc configure: ${PETSC_CONFIGURE_OPTIONS:---with-fc=0$INDEX_OPTION})"
if ! done_step venv; then
  rm -rf "$VENV"
  /usr/bin/python3 -m venv "$VENV"
  slow "base packages" "$VENV/bin/python" -m pip install -c "$PINS" --no-binary mpi4py \
    numpy mpi4py cython setuptools wheel pkgconfig
  # h5py built against Debian's parallel HDF5 and this mpi4py (h5py's documented MPI build)
  HDF5_MPI=ON CC=mpicc HDF5_PKGCONFIG_NAME=hdf5-openmpi slow "h5py with MPI" \
    "$VENV/bin/python" -m pip install -c "$PINS" --no-binary h5py --no-build-isolation h5py
  "$VENV/bin/python" -c "import h5py, sys; sys.exit(not h5py.get_config().mpi)" || {
    say "h5py was built without MPI; see $LOG"; exit 1; }
  mark venv
fi
PY=$VENV/bin/python
# pip caches a wheel built from an sdist under the sdist's name alone, whatever the configure
# options or the PETSC_DIR it was built against: both builds bypass that cache (a 64-bit-index
# build once came back as the cached 32-bit wheel), and keep their wheels in $WHEELS instead.
# No Fortran: ksptrace needs none, and Debian's libopenmpi-dev brings an mpifort wrapper but no
# gfortran, which PETSc's configure would then try and fail on. A user's own options replace these.
export PETSC_CONFIGURE_OPTIONS=${PETSC_CONFIGURE_OPTIONS:---with-fc=0$INDEX_OPTION}
if ! done_step petsc; then
  ls "$WHEELS"/petsc-"$PETSC_VERSION"-*.whl >/dev/null 2>&1 || \
    slow "PETSc $PETSC_VERSION build" "$PY" -m pip wheel --no-cache-dir -c "$PINS" --no-deps \
      -w "$WHEELS" "petsc==$PETSC_VERSION"
  slow "PETSc install" "$PY" -m pip install --no-deps "$WHEELS"/petsc-"$PETSC_VERSION"-*.whl
  mark petsc
fi
PETSC_DIR=$("$PY" -c "import petsc; print(petsc.get_petsc_dir())")
export PETSC_DIR
unset PETSC_ARCH
if ! done_step petsc4py; then
  ls "$WHEELS"/petsc4py-"$PETSC_VERSION"-*.whl >/dev/null 2>&1 || \
    slow "petsc4py build" "$PY" -m pip wheel --no-cache-dir -c "$PINS" --no-deps \
      --no-build-isolation -w "$WHEELS" "petsc4py==$PETSC_VERSION"
  slow "petsc4py install" "$PY" -m pip install --no-deps "$WHEELS"/petsc4py-"$PETSC_VERSION"-*.whl
  mark petsc4py
fi
# ksptrace itself, with its runtime and test dependencies from PyPI, editable from this checkout
# (reinstalled when the venv's copy points elsewhere, as in bootstrap.sh).
here_check='import ksptrace, os, sys
root = os.path.dirname(os.path.dirname(os.path.realpath(ksptrace.__file__)))
sys.exit(root != os.path.realpath(sys.argv[1]))'
if ! done_step ksptrace-xarray || ! "$PY" -P -c "$here_check" "$PWD" 2>/dev/null; then
  slow "ksptrace and its test tools" "$PY" -m pip install -c "$PINS" -e ".[test,xarray]"
  mark ksptrace-xarray
fi
"$PY" -c "import petsc4py; petsc4py.init([]); from petsc4py import PETSc; from mpi4py import MPI; \
print('stack-pypi: PETSc', '.'.join(map(str, PETSc.Sys.getVersion())), '|', MPI.Get_library_version().splitlines()[0])" >&2
say "ready"
echo "$PY"
