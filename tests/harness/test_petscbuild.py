"""The PETSc build's debugging flag, read from the configure line in the loaded library."""

from __future__ import annotations

from pathlib import Path

import pytest

from ksptrace.harness.petsc import petscbuild

HELP = b"\x00configure using --with-debugging=yes, recompile, link, and run\x00"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b"--prefix=/usr --with-debugging=0 --with-shared-libraries", False),
        (b"--with-cc=mpicc --with-debugging=no --with-fc=0", False),
        (b"--with-cc=mpicc --with-debugging=1 --with-fc=0", True),
        (b"--with-cc=mpicc --with-debugging --with-fc=0", True),
        (b"--with-cc=mpicc --with-fc=0 --with-shared-libraries=1", True),  # PETSc's default
        (b"--with-debugging=1 --with-x=0 --with-debugging=0", False),  # the last one counts
    ],
)
def test_configure_lines(line: bytes, expected: bool) -> None:
    assert petscbuild.debugging_from_configure(line) is expected


def test_the_help_text_is_not_a_configure_line(tmp_path: Path) -> None:
    lib = tmp_path / "libpetsc_fake.so"
    lib.write_bytes(b"\x7fELF" + HELP + b"--prefix=/opt --with-debugging=0 --with-x=0\x00" + HELP)
    assert petscbuild.debugging([lib]) == "no"
    lib.write_bytes(b"\x7fELF" + HELP + b"--prefix=/opt --with-x=0 --with-mpi=1\x00")
    assert petscbuild.debugging([lib]) == "yes"
    lib.write_bytes(b"\x7fELF" + HELP)
    assert petscbuild.debugging([lib]) == "unknown"
    assert petscbuild.debugging([tmp_path / "missing.so"]) == "unknown"


def test_mapped_libraries_are_read_from_the_maps() -> None:
    maps = ("7f00-7f01 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libpetsc_real.so.3.18.5\n"
            "7f01-7f02 r--p 00001000 08:01 123 /usr/lib/x86_64-linux-gnu/libpetsc_real.so.3.18.5\n"
            "7f02-7f03 rw-p 00000000 00:00 0 \n"
            "7f03-7f04 r-xp 00000000 08:01 9 /usr/lib/libc.so.6\n")
    assert petscbuild.mapped_petsc_libraries(maps) == [
        Path("/usr/lib/x86_64-linux-gnu/libpetsc_real.so.3.18.5")]
