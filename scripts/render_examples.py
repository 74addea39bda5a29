"""Regenerate, or check, the committed rendered example campaign (examples/rendered/).

    python scripts/render_examples.py          # rewrite examples/rendered/paper-theta/
    python scripts/render_examples.py --check  # exit 1, naming the stale files, when they differ

The campaign file itself (examples/paper-theta.toml) writes its dry runs to examples/runs/
(ignored by git), so that trying the README's commands never changes a committed file. This
script renders an unchanged copy of it in a temporary folder (its relative output lands there),
with the Slurm and the PBS backend, and keeps the manifest and the scripts; the manifest's
``source`` names the example (not a temporary path), and the hashes are the example file's.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "paper-theta.toml"
RENDERED = ROOT / "examples" / "rendered" / "paper-theta"


def render(into: Path) -> None:
    """The rendered campaign (manifest.json and scripts/) in ``into``."""
    with tempfile.TemporaryDirectory(prefix="ksptrace-render-") as tmp:
        copy = Path(tmp) / EXAMPLE.name
        shutil.copyfile(EXAMPLE, copy)
        for backend in ("slurm", "pbs"):
            proc = subprocess.run(  # as from an activated venv: the job scripts then run
                # the default command 'ksptrace', not this machine's Python path
                [sys.executable, "-m", "ksptrace", "campaign", "run", str(copy), "--backend",
                 backend, "--dry-run"], cwd=tmp, capture_output=True, text=True, check=False,
                env={**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
                                           f"{os.environ.get('PATH', '')}"})
            if proc.returncode != 0:
                raise SystemExit(f"render_examples: {backend} dry run failed: {proc.stderr}")
        output = tomllib.loads(EXAMPLE.read_text())["campaign"]["output"]
        out = Path(tmp) / output
        manifest = json.loads((out / "manifest.json").read_text())
        manifest["source"] = "examples/paper-theta.toml"
        into.mkdir(parents=True, exist_ok=True)
        (into / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        shutil.copytree(out / "scripts", into / "scripts")


def stale(fresh: Path) -> list[str]:
    """Files of the committed copy that differ from ``fresh`` (or exist in one only)."""
    names = {p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file()}
    names |= {p.relative_to(RENDERED).as_posix() for p in RENDERED.rglob("*") if p.is_file()}
    return sorted(n for n in names if not (fresh / n).is_file() or not (RENDERED / n).is_file()
                  or not filecmp.cmp(fresh / n, RENDERED / n, shallow=False))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare, write nothing")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ksptrace-rendered-") as tmp:
        fresh = Path(tmp) / "paper-theta"
        render(fresh)
        differ = stale(fresh)
        if args.check:
            if differ:
                print(f"examples/rendered/paper-theta is stale: {', '.join(differ)}; run "
                      "python scripts/render_examples.py", file=sys.stderr)
                return 1
            print(f"examples/rendered/paper-theta is up to date ({len(list(fresh.rglob('*.*')))}"
                  " files)")
            return 0
        shutil.rmtree(RENDERED, ignore_errors=True)
        shutil.copytree(fresh, RENDERED)
        print(f"wrote {RENDERED.relative_to(ROOT)} ({len(differ)} files changed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
