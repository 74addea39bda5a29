#!/usr/bin/env bash
# Idempotent set-up of a Debian 12 machine for ksptrace: Debian's PETSc 3.18 stack + a project venv.
# Quick when everything is already there. Used by `make demo` and `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."

# `bootstrap.sh --stack pypi`: the current PETSc from PyPI in a cached venv (scripts/stack_pypi.sh).
# `bootstrap.sh --mpich`: MPICH beside Open MPI, with an mpi4py of its own (scripts/stack_mpich.sh).
# `bootstrap.sh --mpich-petsc`: that, and PETSc and petsc4py built against it
# (scripts/stack_mpich_petsc.sh).
if [ "${1:-}" = "--mpich" ]; then
  exec bash scripts/stack_mpich.sh
fi
if [ "${1:-}" = "--mpich-petsc" ]; then
  exec bash scripts/stack_mpich_petsc.sh
fi
# `bootstrap.sh --fenicsx`: Debian's FEniCSx and its demos, for bench/trace_fenicsx.py (issue 53):
# 63 packages, 123 MB installed (99 MB python3-dolfinx-real, 24 MB dolfinx-doc), about 45 s here.
if [ "${1:-}" = "--fenicsx" ]; then
  for p in python3-dolfinx-real dolfinx-doc; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && continue
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
      python3-dolfinx-real dolfinx-doc >/dev/null
    break
  done
  exit 0
fi
if [ "${1:-}" = "--stack" ]; then
  case "${2:-}" in
    pypi) exec bash scripts/stack_pypi.sh ;;
    debian) shift 2 ;;
    *) echo "bootstrap: unknown stack '${2:-}'; use --stack pypi (or debian, the default)" >&2; exit 2 ;;
  esac
fi

# gcc builds the C stamping monitor on first use (ksptrace/harness/monitoring/native.py); Debian's PETSc
# stack pulls it in anyway.
APT_PACKAGES=(python3-petsc4py python3-mpi4py python3-h5py-mpi openmpi-bin python3-venv
              python3-scipy python3-pandas python3-matplotlib python3-jinja2 python3-tqdm
              python3-sklearn gcc)
# The test command (`bootstrap.sh --test`) also renders the report in a real headless browser,
# and opens traces as other tools do (xarray through h5netcdf, h5dump).
if [ "${1:-}" = "--test" ]; then
  APT_PACKAGES+=(chromium chromium-driver python3-selenium python3-xarray python3-h5netcdf
                 hdf5-tools)
  # `ksptrace trace`'s tests build PETSc's own tutorials (C and Fortran) in a temporary folder.
  APT_PACKAGES+=(libpetsc3.18-dev-examples libpetsc-real3.18-dev gfortran)
fi
VENV=${KSPTRACE_VENV:-.venv}
SYSPY=/usr/bin/python3

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
    echo "bootstrap: missing Debian packages: ${missing[*]}; install them as root (apt-get install ${missing[*]})" >&2
    exit 3
  fi
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "bootstrap: creating $VENV (system site packages: Debian's petsc4py, mpi4py, h5py, numpy)"
  "$SYSPY" -m venv --system-site-packages "$VENV"
fi

# Open MPI's mpiexec refuses to start as root unless told it may, and a fresh container is root.
# The venv's activate script tells it, for root only, so that the README's tour
# ('mpiexec -n 2 .venv/bin/python ...' after 'source .venv/bin/activate') works as written
# there; MPICH ignores the variables.
hook='# ksptrace: as root, Open MPI may start (a fresh container is root)'
if ! grep -qF "$hook" "$VENV/bin/activate"; then
  printf '%s\n%s\n' "$hook" \
    'if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi' \
    >> "$VENV/bin/activate"
fi

# Debian's petsc4py is importable only with PETSC_DIR naming its PETSc (its petsc4py.pth
# defaults to /usr/lib/petsc, an alternatives link only petsc-dev installs). A .pth in the venv,
# read before the system's, sets that default for every python of the venv, so a user's own
# program ('mpiexec -n 2 .venv/bin/python prog.py') imports petsc4py with no variable set;
# a PETSC_DIR the user sets still wins.
"$VENV/bin/python" - <<'PY'
import glob, os, sysconfig
found = [d for d in sorted(glob.glob("/usr/lib/petscdir/petsc3.*/x86_64-linux-gnu-real"), reverse=True)
         if os.path.isdir(os.path.join(d, "lib", "python3", "dist-packages", "petsc4py"))]
pth = os.path.join(sysconfig.get_paths()["purelib"], "00-ksptrace-petsc-dir.pth")
if found:
    line = f"import os; os.environ.setdefault('PETSC_DIR', {found[0]!r})\n"
    if not os.path.exists(pth) or open(pth).read() != line:
        with open(pth + ".new", "w") as f:
            f.write(line)
        os.replace(pth + ".new", pth)
PY

# Pin every package that Debian compiled against its numpy, so pip never replaces them.
constraints="$VENV/ksptrace-constraints.txt"
"$VENV/bin/python" - > "$constraints.new" <<'PY'
import importlib.metadata as md
for dist in ("numpy", "scipy", "mpi4py", "pandas", "matplotlib", "jinja2", "tqdm", "selenium",
             "scikit-learn"):
    try:
        print(f"{dist}=={md.version(dist)}")
    except md.PackageNotFoundError:
        pass
PY
mv "$constraints.new" "$constraints"

stamp="$VENV/.ksptrace-installed"
need_install=0
[ -f "$stamp" ] || need_install=1
[ -f "$stamp" ] && [ pyproject.toml -nt "$stamp" ] && need_install=1
[ -f "$stamp" ] && ! cmp -s "$constraints" "$stamp" && need_install=1
# The editable install must point at this checkout: a venv shared with another clone (VENV=...)
# would otherwise run that clone's code.
here_check='import ksptrace, os, sys
root = os.path.dirname(os.path.dirname(os.path.realpath(ksptrace.__file__)))
sys.exit(root != os.path.realpath(sys.argv[1]))'
# (A folder without the package, such as the documentation tests' copy, only needs it importable.)
if [ -f ksptrace/__init__.py ]; then
  "$VENV/bin/python" -P -c "$here_check" "$PWD" 2>/dev/null || need_install=1
else
  "$VENV/bin/python" -c "import ksptrace" 2>/dev/null || need_install=1
fi
if [ "$need_install" = 1 ]; then
  # Runtime dependencies (numpy, scipy, h5py, pandas, matplotlib) are Debian's, seen through the
  # system site packages; Debian names its h5py differently, so pip must not resolve them itself.
  echo "bootstrap: pip install -e . and the test tools (Debian's numpy stays)"
  test_deps=$("$VENV/bin/python" -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml','rb'))['project']['optional-dependencies']['test']))")
  # shellcheck disable=SC2086
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -c "$constraints" --no-deps -e .
  mapfile -t deps <<< "$test_deps"
  # --no-warn-conflicts: pip would report Debian's h5py (python3-h5py-mpi, no pip metadata
  # under that name) as missing for h5netcdf; the import check below is the real test.
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-warn-conflicts \
    -c "$constraints" "${deps[@]}"
  "$VENV/bin/python" -c "import numpy, scipy, h5py, pandas, matplotlib, jinja2, tqdm" || {
    echo "bootstrap: numpy/scipy/h5py/pandas/matplotlib/jinja2/tqdm do not import in $VENV" >&2
    exit 3; }
  cp "$constraints" "$stamp"
fi

# The test command also builds the MPICH stack (3 to 12 minutes the first time, then instant), so
# that the collectives tests force and fingerprint MPICH's algorithms as well as Open MPI's.
if [ "${1:-}" = "--test" ] && [ "${KSPTRACE_SKIP_MPICH:-0}" != 1 ]; then
  bash scripts/stack_mpich.sh > /dev/null
fi

# The test command also builds OpenPBS from the vendored source into ~/.cache/ksptrace (about 5
# minutes of make the first time, then instant), so that the PBS tests run against a real
# server (scripts/pbs-local.sh). Where it cannot be built here (not root, the source missing),
# those tests skip with the reason; their fixture would otherwise build it on first use.
if [ "${1:-}" = "--test" ] && [ "${KSPTRACE_SKIP_PBS:-0}" != 1 ]; then
  rc=0
  bash scripts/pbs-local.sh build > /dev/null || rc=$?
  if [ "$rc" = 3 ]; then
    echo "bootstrap: OpenPBS cannot be built here (above); the PBS tests will skip" >&2
  elif [ "$rc" != 0 ]; then
    exit "$rc"
  fi
fi

# Last, the test command builds PETSc and petsc4py against MPICH into the MPICH stack's venv
# (scripts/stack_mpich_petsc.sh: 29 minutes here the first time at load 2.5-11, then instant), so that
# `ksptrace trace` of PETSc's ex2 and the waits' known-truth tests run on MPICH as on Open MPI
# (tests/stack/test_mpich_petsc.py). It comes after the other stacks: CI's 90 minutes hold the
# three builds (about 20 minutes together for MPICH and OpenPBS, this one about 30) and the
# suite (about 20). Where it cannot be built (not root and packages missing: exit 3) those
# tests skip with the reason; KSPTRACE_SKIP_MPICH_PETSC=1 leaves it out.
if [ "${1:-}" = "--test" ] && [ "${KSPTRACE_SKIP_MPICH:-0}" != 1 ] \
   && [ "${KSPTRACE_SKIP_MPICH_PETSC:-0}" != 1 ]; then
  rc=0
  bash scripts/stack_mpich_petsc.sh > /dev/null || rc=$?
  if [ "$rc" = 3 ]; then
    echo "bootstrap: PETSc on MPICH cannot be built here (above); its tests will skip" >&2
  elif [ "$rc" != 0 ]; then
    exit "$rc"
  fi
fi
