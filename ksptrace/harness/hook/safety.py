"""Where ``ksptrace trace`` puts things, made safe against other users of the machine.

* The output folder holds the hook's private raw folder while the command runs; whoever can
  rename entries in it could swap that folder for one of forged records. So ``--out`` must be a
  folder only this user can write (or one with the sticky bit, owned by this user or root, as
  ``/tmp`` is), and after the command the raw folder must be the very one made (same device and
  inode, this user's, mode 0700) holding only this user's plain files.
* The dynamic loader splits ``LD_PRELOAD`` at spaces and colons, so a hook library whose path
  holds either (or any character but letters, digits and ``._+-/``) would be read as several
  paths, some relative to the program's working folder, where another user may have planted a
  library. Such a library is preloaded from a private copy with a safe path instead: in the raw
  folder (on the output folder's file system, which other nodes see), else in a new private
  folder under the temporary folder; when neither path is safe, ``trace`` refuses.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from ksptrace.errors import EnvironmentProblem, OutputError, TraceError

SAFE_PATH = re.compile(r"/[A-Za-z0-9._+/-]*")


def trust_out(out: Path, made: bool) -> None:
    """OutputError when others can rename entries in ``out``; a folder made here just now is
    closed to them instead (the umask may have left it group-writable)."""
    info = out.stat()
    if made and info.st_uid == os.geteuid():
        os.chmod(out, stat.S_IMODE(info.st_mode) & ~0o022)
        return
    sticky = bool(info.st_mode & stat.S_ISVTX) and info.st_uid in (0, os.geteuid())
    if sticky or (info.st_uid == os.geteuid() and not info.st_mode & 0o022):
        return
    who = "other users" if info.st_uid == os.geteuid() else f"its owner (uid {info.st_uid})"
    raise OutputError(f"{out} can be changed by {who} (mode {stat.S_IMODE(info.st_mode):o}), who "
                      "could swap the hook's records for forged ones while the command runs; "
                      f"give --out a folder only you can write (chmod go-w {out})")


def folder_id(raw: Path) -> tuple[int, int]:
    info = os.lstat(raw)
    return info.st_dev, info.st_ino


def check_raw(raw: Path, made: tuple[int, int]) -> None:
    """TraceError unless ``raw`` is still the private folder made (see the module's text)."""
    try:
        info = os.lstat(raw)
        entries = [os.lstat(p) for p in raw.iterdir()]
    except OSError as exc:
        raise TraceError(f"the hook's folder {raw} is gone ({exc.strerror}): another process "
                         "removed or replaced it; no trace written") from None
    if ((info.st_dev, info.st_ino) != made or info.st_uid != os.geteuid()
            or stat.S_IMODE(info.st_mode) != 0o700 or not stat.S_ISDIR(info.st_mode)):
        raise TraceError(f"the hook's folder {raw} was replaced while the command ran; no trace "
                         "written (give --out a folder only you can write)")
    if any(e.st_uid != os.geteuid() or not stat.S_ISREG(e.st_mode) or e.st_nlink != 1
           for e in entries):
        raise TraceError(f"the hook's folder {raw} holds a file that is not this user's own "
                         "plain file; no trace written")


def preload_path(lib: Path, raw: Path) -> Path:
    """A path of ``lib`` the loader reads as one absolute path: its own, or a private copy."""
    if SAFE_PATH.fullmatch(str(lib)):
        return lib
    for folder in (raw, None):
        if folder is None:
            base = Path(tempfile.gettempdir())
            if not SAFE_PATH.fullmatch(str(base)):
                continue
            folder = Path(tempfile.mkdtemp(prefix="ksptrace-hook-", dir=base))
        copy = folder / "solve_hook.so"
        if not SAFE_PATH.fullmatch(str(copy)):
            continue
        shutil.copyfile(lib, copy)
        os.chmod(copy, 0o500)
        return copy
    raise EnvironmentProblem(f"the solve hook's path {lib} holds characters LD_PRELOAD splits "
                             "at (a space or a colon), and so do --out and the temporary "
                             "folder; set KSPTRACE_CACHE_DIR to a path of letters, digits and "
                             "._+-/ only")
