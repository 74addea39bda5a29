"""The OpenPBS build log is kept, after a failed build and after a good one (issue 66: it was
deleted with the build folder on success). ``cmd_build`` of ``scripts/pbs_build.sh`` runs for
real, from the tarball check to the marker file, with its build step (``openpbs_make``), the
Debian packages and the vendor folder stubbed: no OpenPBS is built."""

from __future__ import annotations

import hashlib
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

COMMIT = "cafe0123beef"

SCRIPT = """
set -euo pipefail
say() { echo "pbs-local: $*"; }
die() { echo "pbs-local: error: $*" >&2; exit 1; }
cannot() { echo "pbs-local: error: $*" >&2; exit 3; }
COMMIT=$1 PREFIX=$2/cache/openpbs-$1 HOMES=$2/homes ROOT=$3 VENDOR=$2/vendor
source "$3/scripts/pbs_build.sh"
install_packages() { :; }
vendor_dir() { echo "$VENDOR"; }
openpbs_make() {  # the stubbed build: in the unpacked source, as the real one runs
  [ -f "$1/configure.ac" ] || { echo "not in the source: $1"; return 1; }
  echo "checking for hwloc... yes"
  [ "${STUB_FAIL:-}" != 1 ] || { echo "make: *** [all] Error 2"; return 2; }
  mkdir -p "$PREFIX/sbin"
  touch "$PREFIX/sbin/pbs_iff" "$PREFIX/sbin/pbs_rcp" "$PREFIX/sbin/pbs_server.bin"
  chmod +x "$PREFIX/sbin/pbs_server.bin"
}
cmd_build
"""


def _vendor(tmp: Path) -> None:
    source = tmp / f"openpbs-{COMMIT}"
    source.mkdir()
    (source / "configure.ac").write_text("AC_INIT\n")
    vendor = tmp / "vendor"
    vendor.mkdir()
    tarball = vendor / f"openpbs-{COMMIT}.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(source, arcname=source.name)
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    (vendor / "SHA256SUMS").write_text(f"{digest}  {tarball.name}\n")


def _build(tmp: Path, fail: bool) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STUB_FAIL": "1" if fail else "0"}
    return subprocess.run(["bash", "-c", SCRIPT, "pbs-build-test", COMMIT, str(tmp), str(ROOT)],
                          env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="cmd_build refuses to run unless root")
def test_the_build_log_is_kept_after_success_and_failure(tmp_path: Path) -> None:
    _vendor(tmp_path)
    prefix = tmp_path / "cache" / f"openpbs-{COMMIT}"
    log = Path(f"{prefix}.build.log")

    failed = _build(tmp_path, fail=True)
    assert failed.returncode == 3, failed.stderr
    assert failed.stderr.strip().endswith(
        f"the OpenPBS build failed: make: *** [all] Error 2; see {prefix}.build.log")
    assert log.read_text() == "checking for hwloc... yes\nmake: *** [all] Error 2\n"
    assert not prefix.exists()  # a failed build leaves no half install

    built = _build(tmp_path, fail=False)
    assert built.returncode == 0, built.stderr
    assert log.read_text() == "checking for hwloc... yes\n"  # kept: what configure found
    assert f"log in {prefix}.build.log" in built.stderr
    assert (prefix / ".ksptrace-built").read_text().startswith(f"{COMMIT} built in ")
    assert (prefix / "sbin" / "pbs_iff").stat().st_mode & 0o4000  # setuid, as make install
    assert not list(Path("/tmp").glob(f"ksptrace-openpbs-build.*/openpbs-{COMMIT}"))
