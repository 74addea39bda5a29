#!/usr/bin/env bash
# MPICH beside Debian's Open MPI, for the collectives study (issue 32): Debian's mpich, and a venv
# in the user's cache (never the repo) whose mpi4py is built from source against it.
#
#   scripts/bootstrap.sh --mpich     (or: make stack-mpich)
#
# The venv sees Debian's numpy, scipy and pandas through the system site packages (pip never
# replaces that numpy); its own mpi4py and h5py come first on its path:
# - mpi4py compiled with mpicc.mpich (pip's wheel cache is bypassed: a cached Open MPI build
#   under the same name would be taken instead);
# - h5py from PyPI's serial wheel, because Debian's h5py loads its Open MPI build whenever
#   MPI_LOCALNRANKS is set, as MPICH's mpiexec does, which would put two MPI libraries into one
#   process.
# Run the collectives benchmark through it: $VENV/bin/python -m ksptrace collectives
# --mpiexec mpiexec.mpich ... Quick when already built; prints the venv's python on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
MPI4PY=$(sed -n 's/^mpi4py==//p' scripts/stack-pypi.txt)
H5PY=$(sed -n 's/^h5py==//p' scripts/stack-pypi.txt)

say() { echo "stack-mpich: $*" >&2; }
APT=(mpich libmpich-dev python3-dev python3-venv gcc)
missing=()
for p in "${APT[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
    say "missing Debian packages: ${missing[*]}; install them as root (apt-get install ${missing[*]}) and rerun"
    exit 3
  fi
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  say "installing Debian packages: ${missing[*]} (Open MPI stays the default mpiexec)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
for tool in mpicc.mpich mpiexec.mpich; do
  command -v "$tool" >/dev/null || { say "$tool not found after installing mpich"; exit 3; }
done
VERSION=$(mpichversion 2>/dev/null | sed -n 's/^MPICH Version:[[:space:]]*//p')
STACK=${KSPTRACE_MPICH_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ksptrace/mpich-${VERSION:-unknown}}
VENV=$STACK/venv
PY=$VENV/bin/python
STAMP=$STACK/.done-$MPI4PY-$H5PY
check='from mpi4py import MPI; import h5py, sys
sys.exit(("MPICH" not in MPI.Get_library_version()) or h5py.get_config().mpi)'
if [ -f "$STAMP" ] && "$PY" -c "$check" 2>/dev/null; then
  echo "$PY"; exit 0
fi
say "building into $STACK (mpi4py $MPI4PY against MPICH ${VERSION:-?}, h5py $H5PY serial; 3 to 12 minutes)"
rm -rf "$VENV"; mkdir -p "$STACK"
/usr/bin/python3 -m venv --system-site-packages "$VENV"
numpy_pin=$("$PY" -c "import numpy; print(numpy.__version__)")
LOG=$STACK/build.log
if ! MPICC=mpicc.mpich "$PY" -m pip install --disable-pip-version-check --no-cache-dir \
     --no-binary mpi4py "mpi4py==$MPI4PY" "h5py==$H5PY" "numpy==$numpy_pin" > "$LOG" 2>&1; then
  say "pip failed; the last lines of $LOG:"; tail -n 20 "$LOG" >&2; exit 1
fi
"$PY" -c "$check" || { say "the venv's mpi4py is not MPICH's, or its h5py is the MPI one; see $LOG"; exit 1; }
touch "$STAMP"
say "ready: $("$PY" -c 'from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0])')"
echo "$PY"
